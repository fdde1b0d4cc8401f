// Package securitytest is the sandbox security suite: one test per case of
// SECURITY.md sections B to F (section A is runtime-specific and lives beside
// each runtime, since it inspects the live sandbox from the host). Every case
// runs a real job on a real runtime with production settings and asserts the
// outcome AND that the next job runs normally.
//
// Each runtime instantiates it:
//
//	securitytest.Run(t, securitytest.Target{Runtime: rt, Image: img})
package securitytest

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/textclip"
)

// Target is the runtime under test.
type Target struct {
	Runtime sandbox.Runtime
	Image   string
	// Live lists the runtime ids of sandboxes still present for a run id; it
	// proves that nothing of a job remains. Nil uses Runtime.List.
	Live func(ctx context.Context, runID string) ([]string, error)
	// Replaced names cases whose form here cannot hold on this runtime, with
	// the test that checks the same property in the form the runtime can meet
	// (e.g. Kubernetes has no per-run pids limit). Each is skipped with that
	// pointer; a case may not be dropped without one.
	Replaced map[string]string
	// Gaps names cases that do not hold on this runtime at all, each with the
	// reason (stated in docs/sandbox.md, "Honest limits"). Each is skipped with it.
	Gaps map[string]string
	// OwnKernel says each sandbox runs on a kernel of its own (gVisor's
	// sentry, a virtual machine's guest kernel), not the host's: M5 checks
	// it, and M4 accepts a /proc/cmdline that is that kernel's.
	OwnKernel bool
	// StartAllowance is added to the wall-time bounds that include a
	// sandbox's start (a microVM on a software CPU boots in seconds).
	StartAllowance time.Duration
	// Slowdown multiplies the timeouts of jobs that do heavy work (a full
	// filesystem scan, say) where the CPU is emulated; 0 means 1.
	Slowdown int
	// Subset, when set, names the only cases run here (a runtime whose
	// sandboxes are slow to start runs a subset in CI and the whole suite
	// behind its own target); each other case is skipped with SubsetNote.
	Subset     map[string]bool
	SubsetNote string
	// StripsSetuid says the runtime's copy of the image holds no setuid or
	// setgid file (the oci runtime strips them on export, SECURITY.md M3).
	StripsSetuid bool
	// Footprint measures the host storage the runtime holds for one live
	// sandbox, by runtime id (Docker: the container's writable layer; oci: its
	// run and state directories). The exhaustion cases (B4, B6) measure it
	// while the job's tmpfs is full, instead of the host's free disk, which
	// every other process on the machine changes. Nil where the runtime's
	// storage is out of reach (a Kubernetes node): the in-sandbox checks of
	// the same cases still run.
	Footprint func(ctx context.Context, id string) (Footprint, error)
	// WholeSandboxOOM says an OOM kill ends the whole sandbox, aster-init
	// with it (gVisor: the sentry is one host process). Output aster-init had
	// not yet passed to the host is lost then, so the cases that check the
	// output kept past an OOM let the job's first line reach the host before
	// it goes on (heardFirst).
	WholeSandboxOOM bool
}

// Footprint is the host storage one sandbox holds.
type Footprint struct {
	Bytes int64 // bytes of regular files
	Files int64 // files and directories; -1 when the runtime does not say
}

// DirFootprint adds up the regular-file bytes and the entries under each
// root (a missing root counts as empty). Runtimes whose sandbox storage is a
// host directory build their Target.Footprint from it.
func DirFootprint(roots ...string) (Footprint, error) {
	var fp Footprint
	for _, root := range roots {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil // removed while walking, or never made
				}
				return err
			}
			fp.Files++
			if d.Type().IsRegular() {
				info, err := d.Info()
				if err != nil && !errors.Is(err, fs.ErrNotExist) {
					return err
				}
				if info != nil {
					fp.Bytes += info.Size()
				}
			}
			return nil
		})
		if err != nil {
			return fp, fmt.Errorf("footprint of %s: %w", root, err)
		}
	}
	return fp, nil
}

// slow scales a heavy job's timeout by the target's Slowdown.
func (s *suite) slow(ms int64) int64 { return ms * int64(max(s.tgt.Slowdown, 1)) }

type suite struct {
	t   *testing.T
	tgt Target
	mgr *sandbox.Manager
}

// Run runs every case of sections B–F against the target.
func Run(t *testing.T, tgt Target) {
	s := newSuite(t, tgt)
	tgt = s.tgt
	cases := []struct {
		name string
		fn   func(t *testing.T)
	}{
		{"B1_fork_bomb_shell", s.b1ForkBombShell},
		{"B1_fork_bomb_python", s.b1ForkBombPython},
		{"B2_memory_oom", s.b2Memory},
		{"B3_threads", s.b3Threads},
		{"B4_fill_work_and_tmp", s.b4Fill},
		{"B5_readonly_root", s.b5ReadOnly},
		{"B6_million_files_and_fallocate", s.b6Files},
		{"B7_busy_loop", s.b7BusyLoop},
		{"B8_sleep_past_deadline", s.b8Sleep},
		{"B9_gigabytes_of_output", s.b9Output},
		{"B10_long_line_invalid_utf8_nul", s.b10Bytes},
		{"C1_setsid_daemon", s.c1Daemon},
		{"C2_double_fork_ignores_sigterm", s.c2DoubleFork},
		{"C3_zombies", s.c3Zombies},
		{"C4_trap_sigterm_at_deadline", s.c4TrapTerm},
		{"D1_tcp", s.d1TCP},
		{"D2_udp_dns", s.d2UDPDNS},
		{"D3_icmp_raw", s.d3Raw},
		{"D4_ipv6", s.d4IPv6},
		{"D5_metadata_and_host", s.d5Host},
		{"E1_proc_status", s.e1Status},
		{"E2_setuid_binary", s.e2Setuid},
		{"E3_refused_syscalls", s.e3Syscalls},
		{"E4_no_engine_socket", s.e4Socket},
		{"E5_masked_proc_sys", s.e5Masked},
		{"E6_cgroup_release_agent", s.e6ReleaseAgent},
		{"E7_environment", s.e7Env},
		{"F1_hostile_archives", s.f1Archives},
		{"F2_symlink_to_host_file", s.f2Symlink},
		{"F4_hostile_file_names", s.f4Names},
		{"F5_export_workspace", s.f5Export},
		{"F6_export_over_cap", s.f6ExportOverCap},
		{"F7_export_hostile_tree", s.f7ExportHostile},
		{"K1_oom_many_processes", s.k1ManyProcesses},
		{"K1_oom_tmpfs", s.k1Tmpfs},
		{"K1_oom_shm", s.k1Shm},
		{"K1_oom_init_victim", s.k1InitVictim},
		{"K2_signals_to_init", s.k2Signals},
		{"K2_init_unreachable", s.k2Unreachable},
		{"K3_forged_cgroup_files", s.k3Forged},
		{"K4_protocol_lookalikes", s.k4Lookalikes},
		{"K5_caller_gone_stdin_unread", s.k5CallerGone},
		{"K7_job_starts_clean", s.k7JobStartsClean},
		{"M2_no_shared_kernel_user", s.m2Quotas},
		{"N1_relay_allowed_https", s.n1RelayAllowed},
		{"N2_relay_refusals", s.n2RelayRefusals},
		{"N3_relay_connection_cap", s.n3RelayConnectionCap},
		{"N4_relay_byte_cap", s.n4RelayByteCap},
		{"N5_no_proxy_without_egress", s.n5NoProxyWithoutEgress},
		{"N8_relay_special_purpose_ranges", s.n8RelaySpecialPurposeRanges},
		{"N11_relay_credential_injection", s.n11RelayCredential},
		{"G2_runtime_refuses_zero_limits", s.g2ZeroLimits},
	}
	cases = append(cases, s.kernelCases()...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if by, ok := tgt.Replaced[c.name]; ok {
				if by == "" {
					t.Fatalf("case %s replaced without naming the test that replaces it", c.name)
				}
				t.Skipf("replaced on this runtime by %s", by)
			}
			if tgt.Subset != nil && !tgt.Subset[c.name] {
				t.Skipf("not in this runtime's CI subset: %s", tgt.SubsetNote)
			}
			if why, ok := tgt.Gaps[c.name]; ok {
				if why == "" {
					t.Fatalf("case %s skipped without a reason", c.name)
				}
				t.Skipf("does not hold on this runtime: %s", why)
			}
			t.Parallel()
			c.fn(t)
			s.assertHealthy(t)
		})
	}
}

// newSuite builds the Manager every case runs through.
func newSuite(t *testing.T, tgt Target) *suite {
	t.Helper()
	if tgt.Live == nil {
		tgt.Live = func(ctx context.Context, runID string) ([]string, error) {
			all, err := tgt.Runtime.List(ctx)
			if err != nil {
				return nil, err
			}
			var ids []string
			for _, m := range all {
				if m.RunID == runID {
					ids = append(ids, m.ID)
				}
			}
			return ids, nil
		}
	}
	mgr, err := sandbox.NewManager(sandbox.ManagerOptions{
		Runtime:       tgt.Runtime,
		Images:        []string{tgt.Image},
		Defaults:      sandbox.DefaultLimits(),
		Bounds:        sandbox.LimitBounds(),
		MaxConcurrent: 4,
		QueueSize:     256,
		QueueTimeout:  10 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	return &suite{t: t, tgt: tgt, mgr: mgr}
}

// run runs a job and fails the test on a Manager error. Call it on the test
// goroutine only; a job run beside another uses tryRun.
func (s *suite) run(t *testing.T, spec sandbox.Spec) sandbox.Result {
	t.Helper()
	return s.must(t, s.tryRun(t.Context(), spec))
}

// outcome is what tryRun returns, so that a run on another goroutine can hand
// its error to the test goroutine instead of failing the test from there.
type outcome struct {
	spec sandbox.Spec
	res  sandbox.Result
	err  error
}

// tryRun runs a job and reports a Manager error instead of failing the test:
// it is safe on any goroutine.
func (s *suite) tryRun(ctx context.Context, spec sandbox.Spec) outcome {
	if spec.Image == "" {
		spec.Image = s.tgt.Image
	}
	res, err := s.mgr.Run(ctx, spec)
	return outcome{spec: spec, res: res, err: err}
}

// must fails the test on a Manager error; call it on the test goroutine.
func (s *suite) must(t *testing.T, o outcome) sandbox.Result {
	t.Helper()
	if o.err != nil {
		t.Fatalf("run %q: %v (result %+v)", o.spec.Argv, o.err, o.res.Wire())
	}
	return o.res
}

// py runs a Python program with the given limits.
func (s *suite) py(t *testing.T, prog string, l sandbox.Limits) sandbox.Result {
	t.Helper()
	return s.run(t, sandbox.Spec{Argv: []string{"python3", "-c", prog}, Limits: l})
}

// heardFirst makes spec's job wait, once it has written its first line of
// stdout, until that line has reached the host: the job reads a line of stdin
// next (`read _`, `sys.stdin.readline()`), and the host sends it only then.
// Where the sandbox's end takes aster-init with it, what init had not yet
// passed on is lost whatever the runtime does; without the wait a case that
// checks the output kept past such an end would measure that race (a loaded
// machine lost it). A job run without heardFirst reads an empty stdin and
// goes straight on.
func heardFirst(t *testing.T, spec sandbox.Spec) sandbox.Spec {
	heard := make(chan struct{})
	var once sync.Once
	spec.OnOutput = func(st sandbox.Stream, b []byte) {
		if st == sandbox.Stdout && bytes.IndexByte(b, '\n') >= 0 {
			once.Do(func() { close(heard) })
		}
	}
	spec.Stdin = &gatedReader{open: heard, done: t.Context().Done(), data: []byte("go\n")}
	return spec
}

// gatedReader gives data once open is closed, EOF after it, or EOF at once
// when done is closed first.
type gatedReader struct {
	open, done <-chan struct{}
	data       []byte
}

func (r *gatedReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	select {
	case <-r.open:
	case <-r.done:
		return 0, io.EOF
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

// assertHealthy proves the service still runs a normal job correctly.
func (s *suite) assertHealthy(t *testing.T) {
	t.Helper()
	res := s.run(t, sandbox.Spec{Argv: []string{"sh", "-c", "echo healthy"}})
	if res.Status != sandbox.StatusOK || string(res.Stdout.Data) != "healthy\n" {
		t.Fatalf("next job did not run normally: %+v", res.Wire())
	}
}

// assertGone proves nothing of the run remains on the runtime.
func (s *suite) assertGone(t *testing.T, runID string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ids, err := s.tgt.Live(t.Context(), runID)
		if err != nil {
			t.Fatalf("list sandboxes: %v", err)
		}
		if len(ids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("sandbox of run %s still present: %v", runID, ids)
		}
		select {
		case <-t.Context().Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func wantStatus(t *testing.T, res sandbox.Result, want sandbox.Status) {
	t.Helper()
	if res.Status != want {
		t.Fatalf("status %q, want %q; result %+v", res.Status, want, short(res))
	}
}

func short(r sandbox.Result) string {
	w := r.Wire()
	cut := func(s string) string {
		if len(s) > 600 {
			return textclip.Head(s, 300, "…") + textclip.Tail(s, 300, "")
		}
		return s
	}
	return fmt.Sprintf("status=%s exit=%d signal=%s err=%q stdout=%q stderr=%q dur=%dms", w.Status, w.ExitCode, w.Signal, w.Error, cut(w.Stdout), cut(w.Stderr), w.DurationMS)
}

// lines returns stdout's lines as key=value pairs.
func kv(res sandbox.Result) map[string]string {
	out := map[string]string{}
	for _, l := range strings.Split(string(res.Stdout.Data), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			out[k] = v
		}
	}
	return out
}

func tarOf(t *testing.T, entries ...*tar.Header) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range entries {
		body := []byte{}
		if h.Typeflag == tar.TypeReg {
			body = []byte("content of " + h.Name + "\n")
			h.Size = int64(len(body))
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf
}

var (
	_ = errors.New
	_ = os.Getpid
	_ = filepath.Join
	_ = runtime.GC
)
