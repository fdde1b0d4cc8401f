package oci

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/asterhq/aster/internal/cgroupstat"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/runtimekit"
)

// The gVisor platforms Aster knows: how the sentry (gVisor's kernel, a user
// process) intercepts the sandbox's system calls. systrap is gVisor's default
// since 2023 (seccomp traps, no hardware needed); ptrace is the older default
// and the only software platform of older builds; kvm uses hardware
// virtualisation and needs /dev/kvm (best on bare metal; it hangs in the
// nested VM Aster is developed on).
const (
	PlatformSystrap = "systrap"
	PlatformPtrace  = "ptrace"
	PlatformKVM     = "kvm"
)

// Platforms lists them in order of preference when none is asked for.
var Platforms = []string{PlatformSystrap, PlatformPtrace, PlatformKVM}

// RuntimeNameGVisor is what Name and Result.Runtime say when the binary is
// runsc: the isolation tier differs from a runtime on the host kernel.
const RuntimeNameGVisor = "gvisor"

// gvisorProbeTimeout bounds each runsc invocation made at start-up.
const gvisorProbeTimeout = 20 * time.Second

// maxProbeOutput caps what is kept of runsc's own help text.
const maxProbeOutput = 256 << 10

// GVisorInfo is what Aster learned about a runsc binary at start.
type GVisorInfo struct {
	// Version is the first line of `runsc --version`, e.g.
	// "runsc version 0.0~20221219.0" (Debian 12) or
	// "runsc version release-20260831.0".
	Version string
	// Platforms are the platforms the binary offers, in Aster's order.
	Platforms []string
	// Platform is the one every sandbox uses.
	Platform string
}

// runscGlobalArgs are the flags every runsc invocation gets, before the
// subcommand. They are global flags, so kill, delete and list take them too,
// and the sandbox's runsc-gofer and runsc-sandbox processes inherit them.
//
//   - --network=none: gVisor's own network stack stays out; the sandbox has
//     only loopback. (The default, "sandbox", refuses a bundle whose network
//     namespace is new and empty: "cannot run with network enabled in root
//     network namespace".)
//   - --platform: chosen at start (below).
//   - --oci-seccomp: apply the bundle's seccomp profile — Aster's, the same as
//     on crun — to the job inside the sentry, so the refused system calls are
//     refused with the same errno under gVisor; without it runsc ignores the
//     profile (the sentry has its own, around itself).
//   - --overlay2=none: the root is the shared, read-only image cache and
//     /work and /tmp are tmpfs inside the sentry, so there is nothing to
//     overlay; newer builds default to root:self, whose file store would
//     live beside the image tree.
//   - --host-uds=none, --host-fifo=none: no socket or FIFO of the host can be
//     opened through a mount (the defaults; stated, not assumed).
func runscGlobalArgs(platform string) []string {
	return []string{"--network=none", "--platform=" + platform, "--oci-seccomp", "--overlay2=none", "--host-uds=none", "--host-fifo=none"}
}

var (
	runscVersionLine = regexp.MustCompile(`(?m)^runsc version \S+`)
	// The help line of the -platform flag, e.g. "specifies which platform to
	// use: ptrace (default), kvm." or "...: systrap (default), ptrace, kvm".
	platformHelp = regexp.MustCompile(`(?m)^\s+-platform\b[^\n]*\n\s+([^\n]*)`)
)

// probeGVisor asks the binary what it is and which platforms it has, and
// picks the platform: want when given (it must be offered), else systrap
// where the build has it, else ptrace. Older runsc builds (Debian 12's,
// 2022) have no systrap. A binary that is not runsc, or whose flags Aster
// cannot read, is refused with a message that says what to do.
func probeGVisor(ctx context.Context, bin, want string) (GVisorInfo, error) {
	if want != "" && !slices.Contains(Platforms, want) {
		return GVisorInfo{}, sandbox.Invalidf("gvisor platform %q is not one of %s", want, strings.Join(Platforms, ", "))
	}
	run := func(args ...string) ([]byte, error) {
		ctx, cancel := context.WithTimeout(ctx, gvisorProbeTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
		var buf bytes.Buffer
		cmd.Stdout = &buf
		cmd.Stderr = &buf // `runsc flags` writes its list to stderr
		err := cmd.Run()
		out := buf.Bytes()
		if len(out) > maxProbeOutput {
			out = out[:maxProbeOutput]
		}
		return out, err
	}
	out, err := run("--version")
	v := runscVersionLine.Find(out)
	if err != nil || v == nil {
		return GVisorInfo{}, fmt.Errorf("%w: %s does not answer like gVisor's runsc (`%s --version`: %v: %.200q); install it with `apt-get install runsc` or `scripts/setup.sh --runsc-current`",
			sandbox.ErrUnavailable, bin, filepath.Base(bin), err, bytes.TrimSpace(out))
	}
	info := GVisorInfo{Version: string(v)}
	if strings.HasSuffix(info.Version, "VERSION_MISSING") {
		// Built with `go install`: the module version is in the build info.
		if bi, err := buildinfo.ReadFile(bin); err == nil && bi.Main.Version != "" {
			info.Version = "runsc " + bi.Main.Path + "@" + bi.Main.Version
		}
	}
	out, err = run("flags")
	if err != nil {
		return info, fmt.Errorf("%w: `%s flags`: %v", sandbox.ErrUnavailable, bin, err)
	}
	info.Platforms = parsePlatforms(out)
	if len(info.Platforms) == 0 {
		return info, fmt.Errorf("%w: %s (%s): cannot tell which platforms it offers from `runsc flags`; set gvisor.platform (ASTER_GVISOR_PLATFORM) explicitly", sandbox.ErrUnavailable, bin, info.Version)
	}
	switch {
	case want != "":
		if !slices.Contains(info.Platforms, want) {
			return info, fmt.Errorf("%w: %s (%s) has no %s platform (it offers %s)", sandbox.ErrUnavailable, bin, info.Version, want, strings.Join(info.Platforms, ", "))
		}
		info.Platform = want
	case slices.Contains(info.Platforms, PlatformSystrap):
		info.Platform = PlatformSystrap
	case slices.Contains(info.Platforms, PlatformPtrace):
		info.Platform = PlatformPtrace
	default:
		return info, fmt.Errorf("%w: %s (%s) offers neither systrap nor ptrace (only %s); choose one with gvisor.platform", sandbox.ErrUnavailable, bin, info.Version, strings.Join(info.Platforms, ", "))
	}
	if info.Platform == PlatformKVM {
		if _, err := os.Stat("/dev/kvm"); err != nil {
			return info, fmt.Errorf("%w: gvisor platform kvm needs /dev/kvm: %v", sandbox.ErrUnavailable, err)
		}
	}
	return info, nil
}

// adaptForGVisor changes what runsc needs changed in a bundle built for a
// runtime on the host kernel: the pids limit is enforced inside gVisor's
// kernel and the host cgroup only bounds the sandbox as a whole, at host
// tasks (runtimekit.GVisorTaskLimits says why; Runtime.sandboxPids gives it).
func adaptForGVisor(s *specs.Spec, l sandbox.Limits, host int64) {
	nproc, _ := runtimekit.GVisorTaskLimits(l.Pids, "")
	s.Process.Rlimits = append(s.Process.Rlimits, specs.POSIXRlimit{Type: "RLIMIT_NPROC", Hard: uint64(nproc), Soft: uint64(nproc)})
	if r := s.Linux.Resources; r != nil && r.Pids != nil {
		r.Pids = &specs.LinuxPids{Limit: &host}
	}
}

// parsePlatforms reads the platforms named in the -platform flag's help.
func parsePlatforms(flags []byte) []string {
	m := platformHelp.FindSubmatch(flags)
	if m == nil {
		return nil
	}
	help := strings.ToLower(string(m[1]))
	if _, list, ok := strings.Cut(help, ":"); ok {
		help = list
	}
	words := strings.FieldsFunc(help, func(r rune) bool { return !(r >= 'a' && r <= 'z') })
	var out []string
	for _, p := range Platforms {
		if slices.Contains(words, p) {
			out = append(out, p)
		}
	}
	return out
}

// GVisor returns what was learned about runsc at start, and false when the
// runtime binary is not runsc.
func (r *Runtime) GVisor() (GVisorInfo, bool) {
	if r.kind != "runsc" {
		return GVisorInfo{}, false
	}
	return r.gvisor, true
}

// hasState reports whether the runtime binary still keeps state for the
// container id under its root. crun and runc keep a directory named after
// it; runsc keeps "<sandbox>_sandbox:<container>.state" files.
func (r *Runtime) hasState(id string) bool {
	if _, err := os.Stat(filepath.Join(r.rootDir, id)); err == nil {
		return true
	}
	if r.kind != "runsc" {
		return false
	}
	m, err := filepath.Glob(filepath.Join(r.rootDir, "*_sandbox:"+id+".state"))
	return err == nil && len(m) > 0
}

// The host pids cgroup of a gVisor sandbox, on a cgroup v1 host, is made by
// Aster rather than by runsc. When the sentry cannot create a host thread it
// needs (the bound of adaptForGVisor reached), the whole sandbox ends without
// a result and runsc removes the cgroups it made, with the counter that says
// why, before anyone can read it; runsc neither changes nor removes a cgroup
// that was there before it (it only joins it), so this one outlives the
// sandbox: Aster sets its bound, reads pids.events for the error, and removes
// it in Close (and the reaper, after a crash). A v2 host is left to runsc: a
// cgroup made beforehand there would be one runsc sets no limit on at all.

// gvisorPidsRoot is the parent of those cgroups.
const gvisorPidsRoot = "/sys/fs/cgroup/pids/aster"

// createGVisorPidsCgroup makes the sandbox's pids cgroup with its bound and
// returns its directory ("" on a v2 host, where runsc makes it).
func createGVisorPidsCgroup(id string, limit int64) (string, error) {
	if cgroupstat.V2() {
		return "", nil
	}
	dir := filepath.Join(gvisorPidsRoot, id)
	if err := os.MkdirAll(gvisorPidsRoot, 0o755); err != nil {
		return "", fmt.Errorf("create pids cgroup: %w", err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", fmt.Errorf("create pids cgroup: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.FormatInt(limit, 10)), 0o644); err != nil {
		os.Remove(dir)
		return "", fmt.Errorf("set the pids cgroup's bound: %w", err)
	}
	return dir, nil
}

// removeGVisorPidsCgroup removes the pids cgroup of sandbox id, if there is one,
// waiting briefly for the last of the sandbox's tasks to leave it.
func removeGVisorPidsCgroup(id string) error {
	dir := filepath.Join(gvisorPidsRoot, id)
	deadline := time.Now().Add(killWait)
	for {
		err := unix.Rmdir(dir)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("remove pids cgroup: %w", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// hostPidsNote says, for an error, whether the sandbox's host pids bound was
// reached ("" when it was not, or cannot be told).
func hostPidsNote(dir string) string {
	if dir == "" {
		return ""
	}
	if n, ok := cgroupstat.PidsLimitHits(dir); !ok || n == 0 {
		return ""
	}
	limit, _ := os.ReadFile(filepath.Join(dir, "pids.max"))
	return fmt.Sprintf(" (the sandbox hit its host bound of %s tasks: gVisor's kernel could not create a thread it needed, which ends the whole sandbox)",
		strings.TrimSpace(string(limit)))
}
