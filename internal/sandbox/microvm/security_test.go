package microvm_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/microvm"
	"github.com/asterhq/aster/internal/sandbox/microvm/microvmtest"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
	"github.com/asterhq/aster/internal/sandbox/securitytest"
)

// ciSubset is what `make test` runs of the suite on microvm: under TCG a
// VM boots in seconds, so CI runs one case of each kind (exhaustion,
// processes, network, privilege, files, the verdict, host information) and
// `make test-microvm-full` runs them all (ASTER_TEST_MICROVM_FULL=1).
var ciSubset = map[string]bool{
	"B1_fork_bomb_shell":     true,
	"B2_memory_oom":          true,
	"B4_fill_work_and_tmp":   true,
	"B5_readonly_root":       true,
	"B9_gigabytes_of_output": true,
	"C1_setsid_daemon":       true,
	"D1_tcp":                 true,
	"D5_metadata_and_host":   true,
	"E1_proc_status":         true,
	"E2_setuid_binary":       true,
	"E3_refused_syscalls":    true,
	"E5_masked_proc_sys":     true,
	"E7_environment":         true,
	"F1_hostile_archives":    true,
	"K2_init_unreachable":    true,
	"K4_protocol_lookalikes": true,
	"M1_seccomp_io_uring":    true,
	"M4_host_information":    true,
}

// TestSecurity runs SECURITY.md sections B–M against the microvm runtime.
func TestSecurity(t *testing.T) {
	opts := microvmtest.Options(t)
	rt := microvmtest.New(t, opts)
	tgt := securitytest.Target{Runtime: rt, Image: sandboxtest.Image(), StripsSetuid: true, OwnKernel: true,
		StartAllowance: bootAllowance(rt), Slowdown: slowdown(rt),
		Footprint: func(_ context.Context, id string) (securitytest.Footprint, error) {
			// The VM's host storage: its record. Its disk is the shared
			// image, opened read-only; its console is a capped buffer.
			return securitytest.DirFootprint(filepath.Join(opts.StateDir, "runs", id+".json"))
		},
		Replaced: map[string]string{
			// The guest counts the time QEMU is throttled on the host as the
			// job's (its clock runs on), so the job's cpu_ms cannot show the
			// quota; the host cgroup's throttling of QEMU does.
			"B7_busy_loop": "TestSecurityAdapted/B7_busy_loop_qemu_throttled",
			// Every guest uses uids 900 and 1000, each in a kernel of its own:
			// no kernel user, so no per-user quota, is shared.
			"M2_no_shared_kernel_user": "TestSecurityAdapted/M2_a_kernel_per_sandbox",
		},
	}
	if os.Getenv("ASTER_TEST_MICROVM_FULL") != "1" {
		tgt.Subset = ciSubset
		tgt.SubsetNote = "make test-microvm-full runs it"
	}
	securitytest.Run(t, tgt)
}

// TestSecurityAdapted holds the cases whose shared form cannot hold here.
func TestSecurityAdapted(t *testing.T) {
	rt := microvmtest.Runtime(t)
	mgr := manager(t, rt, 2)
	t.Run("B7_busy_loop_qemu_throttled", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		limits := sandbox.DefaultLimits()
		limits.MilliCPUs = 250
		inst, err := rt.Prepare(ctx, sandbox.PrepareOptions{RunID: sandbox.NewRunID(), Image: sandboxtest.Image(), Limits: limits, Deadline: time.Now().Add(2 * time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		defer inst.Close(context.Background())
		before := throttled(t, inst.ID())
		job := sandbox.JobFromSpec(sandbox.Spec{Argv: []string{"sh", "-c", "while :; do :; done"}})
		job.Limits = limits
		job.Limits.TimeoutMS = 3000
		res, _ := inst.Run(ctx, job)
		if res.Status != sandbox.StatusTimeout {
			t.Fatalf("status %s, want timeout (%s)", res.Status, res.Error)
		}
		if after := throttled(t, inst.ID()); after <= before {
			t.Fatalf("QEMU's host cgroup was never throttled during a busy loop at 0.25 CPU (%d -> %d periods)", before, after)
		}
	})
	t.Run("M2_a_kernel_per_sandbox", func(t *testing.T) {
		t.Parallel()
		ids := make(chan string, 2)
		for range 2 {
			go func() {
				res, err := mgr.Run(t.Context(), sandbox.Spec{Image: sandboxtest.Image(), Argv: []string{"sh", "-c", "sleep 2; cat /proc/sys/kernel/random/boot_id"}})
				if err != nil || res.Status != sandbox.StatusOK {
					ids <- ""
					return
				}
				ids <- strings.TrimSpace(string(res.Stdout.Data))
			}()
		}
		a, b := <-ids, <-ids
		if a == "" || b == "" || a == b {
			t.Fatalf("two sandboxes' kernels: boot ids %q and %q, want two different kernels", a, b)
		}
	})
}

// bootAllowance and slowdown widen the suite's wall-time bounds where the VM
// runs on QEMU's software CPU: a boot takes seconds there (tens on a loaded
// machine), and a scan of the whole image several times what it takes on
// hardware. With KVM neither applies.
func bootAllowance(rt *microvm.Runtime) time.Duration {
	if rt.Accel() == microvm.AccelTCG {
		return 60 * time.Second
	}
	return 5 * time.Second
}

func slowdown(rt *microvm.Runtime) int {
	if rt.Accel() == microvm.AccelTCG {
		return 6
	}
	return 1
}

// throttled is how many CPU periods the host throttled a VM's QEMU in.
func throttled(t *testing.T, id string) int64 {
	t.Helper()
	for _, p := range []string{"/sys/fs/cgroup/cpu/aster-microvm/" + id + "/cpu.stat", "/sys/fs/cgroup/aster-microvm/" + id + "/cpu.stat"} {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "nr_throttled "); ok {
				n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				return n
			}
		}
	}
	t.Fatalf("no cpu.stat for VM %s", id)
	return 0
}
