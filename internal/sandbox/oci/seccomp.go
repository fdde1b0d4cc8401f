package oci

import (
	"encoding/base64"
	"os"
	"path/filepath"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/runtimekit"
)

// Compiling the seccomp profile is most of crun's own CPU time per sandbox
// (two thirds of it in libseccomp, measured with perf on this project's
// reference machine). crun leaves the filter it compiled in its state
// directory and accepts a compiled filter through the run.oci.seccomp_bpf_data
// annotation, so the runtime compiles the profile once — through crun, from
// the same profile — and hands the result to every later sandbox.
const (
	annotationSeccompBPF = "run.oci.seccomp_bpf_data"
	seccompStateFile     = "seccomp.bpf"
	// bpfInsnBytes is the size of one struct sock_filter.
	bpfInsnBytes = 8
)

// bundleSpec is the config.json of one sandbox, with the compiled filter when
// the runtime binary is crun and has compiled it once already.
func (r *Runtime) bundleSpec(opts sandbox.PrepareOptions, ident runtimekit.Identity, id, rootfs string) *specs.Spec {
	spec := r.base.bundleSpec(opts, ident, id, rootfs, r.initAbs, r.opts.Annotations)
	if r.kind == "runsc" {
		adaptForGVisor(spec, opts.Limits, r.sandboxPids(opts.Limits))
	}
	if r.kind != "crun" {
		return spec
	}
	r.bpfMu.Lock()
	bpf := r.bpf
	r.bpfMu.Unlock()
	if bpf != "" {
		// crun then ignores the seccomp section; it stays in the bundle so that
		// what the sandbox runs under is readable there.
		spec.Annotations[annotationSeccompBPF] = bpf
	}
	return spec
}

// learnSeccomp reads the filter crun compiled for a running sandbox, once.
func (r *Runtime) learnSeccomp(id string) {
	if r.kind != "crun" {
		return
	}
	r.bpfMu.Lock()
	defer r.bpfMu.Unlock()
	if r.bpf != "" {
		return
	}
	b, err := os.ReadFile(filepath.Join(r.rootDir, id, seccompStateFile))
	if err != nil || len(b) == 0 || len(b)%bpfInsnBytes != 0 {
		return
	}
	r.bpf = base64.StdEncoding.EncodeToString(b)
}
