package oci

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/asterhq/aster/internal/sandbox"
)

// WriteBundle writes into dir the bundle a sandbox for opts would get — the
// same root filesystem, mounts, namespaces, limits, seccomp profile — but
// running argv as its first process instead of aster-init. The benchmark
// harness uses it to measure the bare runtime on exactly what Aster runs.
func (r *Runtime) WriteBundle(ctx context.Context, opts sandbox.PrepareOptions, dir string, argv []string) error {
	if len(argv) == 0 {
		return errors.New("write bundle: empty argv")
	}
	rootfs, err := r.images.rootfs(ctx, opts.Image)
	if err != nil {
		return err
	}
	id := filepath.Base(dir)
	if !validID.MatchString(id) {
		return fmt.Errorf("write bundle: directory name %q is not a valid container id", id)
	}
	// The bare process is the job: it runs as a job uid, with no capability.
	// The lease ends once the bundle is written; the benchmark runs bundles
	// one at a time.
	ident, err := r.ids.Acquire()
	if err != nil {
		return err
	}
	ident.Release()
	spec := r.bundleSpec(opts, ident, id, rootfs)
	spec.Process.Args = argv
	spec.Process.User = specs.User{UID: uint32(ident.Job), GID: uint32(ident.Job)}
	spec.Process.Capabilities = &specs.LinuxCapabilities{}
	b, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, configFile), b, 0o600)
}

// RunBundle runs a bundle written by WriteBundle with the runtime binary, as
// `<runtime> run --bundle dir id`, and waits for it; the container id is the
// directory's name. The process is started the way sandboxes are (from the
// launcher thread), so it sees the same cgroup layout.
func (r *Runtime) RunBundle(ctx context.Context, dir string, stdout, stderr io.Writer) error {
	id := filepath.Base(dir)
	cmd := r.command(ctx, "run", "--bundle", dir, id)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := r.launch.start(cmd); err != nil {
		return err
	}
	return cmd.Wait()
}
