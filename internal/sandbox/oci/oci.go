// Package oci runs Aster sandboxes by driving an OCI runtime binary directly —
// crun by default, runc or runsc (gVisor) on request — with no daemon in the
// path. Each sandbox is a bundle in its own state directory whose config.json
// carries the same hardening as the Docker runtime; the image's root
// filesystem is exported once per digest and mounted read-only into every
// sandbox; aster-init speaks the same protocol on the runtime's stdio.
package oci

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/hardening"
	"github.com/asterhq/aster/internal/sandbox/runtimekit"
)

// Defaults of the runtime (`--runtime oci`, and `--runtime gvisor`: this
// runtime driving gVisor's runsc). New requires every directory; the `oci:`
// and `gvisor:` sections of aster.yaml start from these.
const (
	DefaultRuntime = "crun"
	// DefaultStateDir holds one bundle and run record per sandbox. It
	// belongs on a tmpfs: every sandbox writes and removes files there, and
	// on a disk filesystem that is a measurable part of a cold start. When
	// /run is not a tmpfs (some containers and VMs), the configuration picks
	// FallbackStateDir on /dev/shm instead.
	DefaultStateDir  = "/run/aster/oci"
	FallbackStateDir = "/dev/shm/aster-oci"
	// DefaultCacheDir holds exported image root filesystems, one per digest.
	DefaultCacheDir = "/var/lib/aster/oci"

	// DefaultGVisorRunsc is the runsc binary of `--runtime gvisor`.
	DefaultGVisorRunsc = "runsc"
	// DefaultGVisorPlatform empty: systrap where the runsc build has it
	// (gVisor's default since 2023), ptrace on older builds such as Debian 12's.
	DefaultGVisorPlatform = ""
)

// Options configure the runtime. StateDir and CacheDir are required (the
// defaults are above).
type Options struct {
	// Runtime is the OCI runtime binary: a name looked up in PATH ("crun",
	// "runc", "runsc") or a path.
	Runtime string
	// StateDir holds one directory per sandbox (bundle and run record) and the
	// runtime binary's own state. A tmpfs such as /run suits it.
	StateDir string
	// CacheDir holds exported image root filesystems, one per digest.
	CacheDir string
	// InitPath is the host path of the static aster-init binary.
	InitPath string
	// Images resolves and exports images; nil means only images already in
	// the cache can run.
	Images ImageSource
	// Annotations are added to every bundle (tests use them to find their
	// own); they cannot override the aster.* ones.
	Annotations map[string]string
	// Identities hands out each sandbox's own uids; nil uses a pool over
	// the default range.
	Identities *runtimekit.IdentityPool
	// GVisor says Runtime is gVisor's runsc whatever its file is called
	// (`--runtime gvisor`); a binary whose name starts with "runsc" is
	// taken for runsc anyway.
	GVisor bool
	// GVisorPlatform is the gVisor platform (systrap, ptrace, kvm); empty
	// picks systrap where the build has it, else ptrace.
	GVisorPlatform string
	Logger         *slog.Logger
	// SessionRuntimeExecs makes every exec of a session a `<runtime> exec`
	// of a further aster-init, as before the holder served execs over
	// channels of its own streams (benchmarks compare the two).
	SessionRuntimeExecs bool

	// gvisorHostTasks, when positive, replaces every gVisor sandbox's host
	// pids bound (tests only: WithGVisorHostTasks).
	gvisorHostTasks int64
}

// Runtime is the direct OCI implementation of sandbox.Runtime.
type Runtime struct {
	opts     Options
	bin      string // absolute path of the runtime binary
	kind     string // "crun", "runc", "runsc" or the binary's base name
	initAbs  string
	runsDir  string
	rootDir  string // the runtime binary's --root
	base     *specBase
	images   *imageCache
	launch   *launcher
	log      *slog.Logger
	rootless bool
	ids      *runtimekit.IdentityPool

	gvisor     GVisorInfo // when kind is "runsc"
	globalArgs []string   // before every subcommand: runsc's flags

	bpfMu sync.Mutex
	bpf   string // the seccomp profile as crun compiled it, base64; "" until seen
}

var _ sandbox.Runtime = (*Runtime)(nil)

// New checks the binary and the directories and starts the launcher.
func New(opts Options) (*Runtime, error) {
	if opts.Runtime == "" {
		return nil, errors.New("oci runtime: no runtime binary")
	}
	if opts.StateDir == "" || opts.CacheDir == "" {
		return nil, errors.New("oci runtime: state and cache directories are required")
	}
	if opts.InitPath == "" {
		return nil, errors.New("oci runtime: no aster-init path")
	}
	bin, err := exec.LookPath(opts.Runtime)
	if err != nil {
		return nil, fmt.Errorf("%w: oci runtime %q: %v (install it, e.g. `apt-get install crun`)", sandbox.ErrUnavailable, opts.Runtime, err)
	}
	if bin, err = filepath.Abs(bin); err != nil {
		return nil, err
	}
	initAbs, err := runtimekit.CheckInitBinary(opts.InitPath)
	if err != nil {
		return nil, err
	}
	kind := binaryKind(bin)
	if opts.GVisor {
		kind = "runsc"
	}
	var gv GVisorInfo
	if kind == "runsc" {
		ctx, cancel := context.WithTimeout(context.Background(), 2*gvisorProbeTimeout)
		gv, err = probeGVisor(ctx, bin, opts.GVisorPlatform)
		cancel()
		if err != nil {
			return nil, err
		}
	} else if opts.GVisorPlatform != "" {
		return nil, sandbox.Invalidf("a gvisor platform is set but the oci runtime %s is not runsc", bin)
	}
	r := &Runtime{
		opts:     opts,
		bin:      bin,
		kind:     kind,
		initAbs:  initAbs,
		runsDir:  filepath.Join(opts.StateDir, "runs"),
		rootDir:  filepath.Join(opts.StateDir, kind),
		images:   newImageCache(opts.CacheDir, opts.Images),
		log:      opts.Logger,
		rootless: os.Geteuid() != 0,
		gvisor:   gv,
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	r.images.log = r.log
	if kind == "runsc" {
		r.globalArgs = runscGlobalArgs(gv.Platform)
		r.log.Debug("gvisor", "runsc", bin, "version", gv.Version, "platform", gv.Platform)
	}
	if r.rootless {
		// Before the state directories, whose owner would be the first complaint.
		return nil, r.Check(context.Background())
	}
	if r.ids = opts.Identities; r.ids == nil {
		if r.ids, err = runtimekit.NewIdentityPool(runtimekit.IdentityPoolOptions{}); err != nil {
			return nil, err
		}
	}
	for _, d := range []string{opts.StateDir, r.runsDir, r.rootDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("oci state directory: %w", err)
		}
		if err := ownedPrivateDir(d); err != nil {
			return nil, fmt.Errorf("oci state directory: %w", err)
		}
		// Bundles name the host paths of the cache and of aster-init: no one
		// else's business. A directory an older version made 0755 is fixed.
		if err := os.Chmod(d, 0o700); err != nil {
			return nil, fmt.Errorf("oci state directory: %w", err)
		}
	}
	stripped, err := secureCache(opts.CacheDir)
	if err != nil {
		return nil, fmt.Errorf("oci cache directory: %w", err)
	}
	if stripped > 0 {
		r.log.Info("oci image cache: setuid/setgid bits removed from trees of an older version", "files", stripped, "dir", filepath.Join(opts.CacheDir, legacyRootfsDir))
	}
	if r.base, err = newSpecBase(apparmorProfile()); err != nil {
		return nil, err
	}
	if kind == "runsc" {
		// runsc answers every errno rule with EPERM (hardening says why
		// clone3 is allowed instead).
		if r.base.seccomp, err = hardening.GVisorSeccompOCI(); err != nil {
			return nil, err
		}
	}
	hide := kind == "crun" && hybridWithV2Controllers()
	if r.launch, err = newLauncher(hide); err != nil {
		return nil, err
	}
	return r, nil
}

// binaryKind is "crun", "runc" or "runsc" by the binary's file name, or the
// name itself.
func binaryKind(bin string) string {
	kind := filepath.Base(bin)
	for _, k := range []string{"crun", "runc", "runsc"} {
		if strings.HasPrefix(kind, k) {
			kind = k
		}
	}
	return kind
}

// IsRunsc says whether an oci runtime binary (a name or a path) is taken for
// gVisor's runsc by its name.
func IsRunsc(bin string) bool { return binaryKind(bin) == "runsc" }

// Close stops the launcher. Sandboxes still running keep running until their
// owner closes them.
func (r *Runtime) Close() error {
	r.launch.stop()
	return nil
}

// Name implements sandbox.Runtime: "oci", or "gvisor" when the binary is
// runsc (the sandboxes then run on gVisor's kernel, not the host's).
func (r *Runtime) Name() string {
	if r.kind == "runsc" {
		return RuntimeNameGVisor
	}
	return "oci"
}

// Binary returns the path of the OCI runtime binary in use.
func (r *Runtime) Binary() string { return r.bin }

// Check implements sandbox.Runtime. It is cheap: no process is started.
func (r *Runtime) Check(ctx context.Context) error {
	if r.rootless {
		name := "oci"
		if r.kind == "runsc" {
			name = "gvisor"
		}
		return fmt.Errorf("%w: the %s runtime needs root to manage cgroups and sandbox identities: run aster as root (sudo), or use --runtime docker", sandbox.ErrUnavailable, name)
	}
	if _, err := os.Stat(r.bin); err != nil {
		return fmt.Errorf("%w: %v", sandbox.ErrUnavailable, err)
	}
	if _, err := os.Stat(r.runsDir); err != nil {
		return fmt.Errorf("%w: state directory: %v", sandbox.ErrUnavailable, err)
	}
	return nil
}

// ImageInfo implements sandbox.Runtime: the digest from the image source, or
// from the cache index when the source is unreachable and the image was
// exported before.
func (r *Runtime) ImageInfo(ctx context.Context, image string) (sandbox.ImageInfo, error) {
	return r.images.info(ctx, image)
}

// EnsureImage exports image's root filesystem now unless it is cached, so the
// first sandbox does not pay for it.
func (r *Runtime) EnsureImage(ctx context.Context, image string) error {
	_, err := r.images.rootfs(ctx, image)
	return err
}

// List implements sandbox.Runtime from the run records in the state directory.
func (r *Runtime) List(ctx context.Context) ([]sandbox.Managed, error) {
	recs, err := r.records()
	if err != nil {
		return nil, err
	}
	states := r.states(ctx)
	out := make([]sandbox.Managed, 0, len(recs))
	for _, rec := range recs {
		st, ok := states[rec.ID]
		if !ok {
			st = "gone"
		}
		out = append(out, sandbox.Managed{ID: rec.ID, RunID: rec.RunID, Deadline: rec.Deadline, State: st, Created: rec.Created})
	}
	return out, nil
}

// states asks the runtime binary which containers it knows, best effort.
func (r *Runtime) states(ctx context.Context) map[string]string {
	out := map[string]string{}
	b, err := r.output(ctx, "list", "--format", "json")
	if err != nil {
		return out
	}
	var items []struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	if json.Unmarshal(b, &items) == nil {
		for _, it := range items {
			out[it.ID] = it.Status
		}
	}
	return out
}

// Remove implements sandbox.Runtime: kill, delete, and remove the run's
// directory. A sandbox that is already gone is not an error.
func (r *Runtime) Remove(ctx context.Context, id string) error {
	if !validID.MatchString(id) {
		return fmt.Errorf("remove sandbox: invalid id %q", id)
	}
	_, _ = r.output(ctx, "kill", id, "KILL")
	if out, err := r.output(ctx, "delete", "--force", id); err != nil && !notExist(out) {
		if r.hasState(id) {
			return fmt.Errorf("delete container %s: %v: %s", id, err, bytes.TrimSpace(out))
		}
	}
	if err := os.RemoveAll(r.runDir(id)); err != nil {
		return fmt.Errorf("remove sandbox state: %w", err)
	}
	if r.kind == "runsc" {
		return removeGVisorPidsCgroup(id)
	}
	return nil
}

func notExist(out []byte) bool {
	s := strings.ToLower(string(out))
	return strings.Contains(s, "does not exist") || strings.Contains(s, "not exist") || strings.Contains(s, "no such file")
}

// command builds an invocation of the runtime binary with its global flags.
func (r *Runtime) command(ctx context.Context, args ...string) *exec.Cmd {
	full := append(append(slices.Clip(r.globalArgs), "--root", r.rootDir), args...)
	cmd := exec.CommandContext(ctx, r.bin, full...)
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// output runs a short runtime command (kill, delete, list) from the launcher
// thread and returns its combined output.
func (r *Runtime) output(ctx context.Context, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := r.command(ctx, args...)
	var buf bytes.Buffer
	cmd.Stdout = &buf
	cmd.Stderr = &buf
	if err := r.launch.start(cmd); err != nil {
		return nil, err
	}
	err := cmd.Wait()
	return buf.Bytes(), err
}

// apparmorProfile returns the engine's default AppArmor profile name when
// AppArmor is on and that profile is loaded, so sandboxes get the same
// confinement as under Docker; "" otherwise.
func apparmorProfile() string {
	b, err := os.ReadFile("/sys/module/apparmor/parameters/enabled")
	if err != nil || !bytes.HasPrefix(b, []byte("Y")) {
		return ""
	}
	profiles, err := os.ReadFile("/sys/kernel/security/apparmor/profiles")
	if err != nil || !bytes.Contains(profiles, []byte("docker-default ")) {
		return ""
	}
	return "docker-default"
}

// ownedPrivateDir refuses a state directory that someone else could have
// prepared (it may live under a world-writable /dev/shm): it must be a real
// directory, owned by this user, writable by no one else.
func ownedPrivateDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	case !ok || int(st.Uid) != os.Geteuid():
		return fmt.Errorf("%s is not owned by uid %d", dir, os.Geteuid())
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%s is writable by others (mode %v)", dir, fi.Mode().Perm())
	}
	return nil
}
