package oci_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/cgroupstat"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/oci"
	"github.com/asterhq/aster/internal/sandbox/oci/ocitest"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
)

// hostTaskRuntimes are the runtimes the host task budget counts: crun,
// one host task per task of the job, and gVisor, many per task.
var hostTaskRuntimes = []struct {
	name string
	open func(testing.TB) *oci.Runtime
}{
	{"oci", ocitest.Runtime},
	{"gvisor", ocitest.GVisor},
}

// taskBomb fills the sandbox's pids limit with processes that each start
// threads until they are refused, every thread spinning on the CPU (on
// gVisor's ptrace platform a running thread of each process costs the
// sentry a host thread of its own), then forks on, as a fork bomb, until
// refused; after a few seconds they all end.
const taskBomb = `
import os, threading, time
end = time.time() + 6
def spin():
    while time.time() < end: pass
kids = 0
while True:
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        while True:
            try:
                threading.Thread(target=spin, daemon=True).start()
            except RuntimeError:
                break
        spin()
        os._exit(0)
    kids += 1
print("processes", kids, flush=True)
spin()
`

// TestHostTasksWithinCharge: a sandbox running a fork and thread bomb cannot
// make the host tasks of its own cgroup (where every host task of the
// sandbox lives: on gVisor the sentry's, the gofer's and the platform's
// stubs) exceed what the Manager charges it of the host task budget; the
// cgroup's bound is set within that charge; the next job runs normally.
func TestHostTasksWithinCharge(t *testing.T) {
	for _, c := range hostTaskRuntimes {
		t.Run(c.name, func(t *testing.T) {
			rt := c.open(t)
			l := sandbox.DefaultLimits()
			l.Pids, l.TimeoutMS = 64, 90_000
			charge := rt.HostTasks(l)
			id := sandbox.NewRunID()
			inst, err := rt.Prepare(t.Context(), sandbox.PrepareOptions{RunID: id, Image: sandboxtest.Image(), Limits: l, Deadline: time.Now().Add(time.Hour)})
			if err != nil {
				t.Fatal(err)
			}
			defer inst.Close(context.Background())
			dir := pidsCgroup(id)
			bound, err := readCount(filepath.Join(dir, "pids.max"))
			if err != nil || bound <= 0 || bound > charge {
				t.Fatalf("the sandbox's host pids cgroup bound is %d (%v), want one within its charge of %d", bound, err, charge)
			}
			peak := watchPeak(dir)
			res, err := inst.Run(t.Context(), sandbox.Job{Argv: []string{"python3", "-c", taskBomb}, Limits: l})
			most := peak()
			hits, _ := cgroupstat.PidsLimitHits(dir)
			t.Logf("%s: pids %d, charge %d host tasks, cgroup bound %d, peak %d (%.1f per job task), bound reached %d times; %s: %s %q",
				rt.Name(), l.Pids, charge, bound, most, float64(most)/float64(l.Pids), hits, res.Status, strings.TrimSpace(string(res.Stdout.Data)), res.Error)
			if err != nil && res.Status != sandbox.StatusError {
				t.Fatal(err)
			}
			if most > charge {
				t.Fatalf("the sandbox's cgroup held %d host tasks, more than its charge of %d", most, charge)
			}
			if most < l.Pids/2 {
				t.Fatalf("the bomb reached only %d host tasks of a pids limit of %d: the probe did not run", most, l.Pids)
			}
			inst.Close(context.Background())

			mgr := sandboxtest.Manager(t, rt, 1)
			next, err := mgr.Run(t.Context(), sandbox.Spec{Argv: []string{"echo", "next"}})
			if err != nil || next.Status != sandbox.StatusOK || string(next.Stdout.Data) != "next\n" {
				t.Fatalf("the next job: %v %+v", err, next.Wire())
			}
		})
	}
}

// TestHostTaskBudgetAdmission: with a host task budget that holds two
// sandboxes and slots to spare, the third concurrent sandbox waits in the
// queue and the fourth is refused at once, with a message that gives the
// budget's use; a run whose charge exceeds the whole budget is refused as
// invalid; when a sandbox ends the waiting one runs normally, and so does
// the next job.
func TestHostTaskBudgetAdmission(t *testing.T) {
	for _, c := range hostTaskRuntimes {
		t.Run(c.name, func(t *testing.T) {
			rt := c.open(t)
			l := sandbox.DefaultLimits()
			l.Pids = 32
			l.TimeoutMS = 300_000 // the holders wait for the test, however loaded the machine
			charge := rt.HostTasks(l)
			budget := 2*charge + charge/2
			mgr, err := sandbox.NewManager(sandbox.ManagerOptions{
				Runtime: rt, Images: []string{sandboxtest.Image()}, Defaults: l, Bounds: sandbox.LimitBounds(),
				MaxConcurrent: 8, QueueSize: 1, QueueTimeout: 10 * time.Minute, HostTasks: budget,
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { mgr.Close(context.Background()) })
			if st := mgr.Stats(); st.HostTaskBudget != budget {
				t.Fatalf("budget %d, want %d", st.HostTaskBudget, budget)
			}

			// Two sandboxes take the budget, each holding until it reads a line.
			start := func(argv []string, stdin io.Reader) chan runOutcome {
				done := make(chan runOutcome, 1)
				go func() {
					res, err := mgr.Run(context.Background(), sandbox.Spec{Argv: argv, Stdin: stdin})
					done <- runOutcome{res, err}
				}()
				return done
			}
			var writers []*io.PipeWriter
			var holders []chan runOutcome
			for range 2 {
				r, w := io.Pipe()
				writers = append(writers, w)
				holders = append(holders, start([]string{"sh", "-c", `read line; echo "$line"`}, r))
			}
			t.Cleanup(func() {
				for _, w := range writers {
					w.Close()
				}
			})
			waitStats(t, mgr, func(st sandbox.Stats) bool { return st.Running == 2 && st.HostTasks == 2*charge })

			third := start([]string{"echo", "third"}, nil)
			for mgr.Stats().Queued != 1 {
				select {
				case o := <-third:
					t.Fatalf("the third sandbox was not held back by the host task budget: it ran beside the two holding it (%s, %v); %+v", o.res.Status, o.err, mgr.Stats())
				case <-time.After(5 * time.Millisecond):
				}
			}
			if st := mgr.Stats(); st.Running != 2 || st.HostTasks != 2*charge {
				t.Fatalf("with the third queued: %+v", st)
			}
			_, err = mgr.Run(t.Context(), sandbox.Spec{Argv: []string{"true"}})
			want := "host task budget: " + strconv.FormatInt(2*charge, 10) + " of " + strconv.FormatInt(budget, 10) + " in use"
			if !errors.Is(err, sandbox.ErrBusy) || !strings.Contains(err.Error(), want) {
				t.Fatalf("the fourth run: %v, want busy with %q", err, want)
			}
			_, err = mgr.Run(t.Context(), sandbox.Spec{Argv: []string{"true"}, Limits: sandbox.Limits{Pids: 1024}})
			if !errors.Is(err, sandbox.ErrInvalidSpec) || !strings.Contains(err.Error(), "more than the whole host task budget") {
				t.Fatalf("a run over the whole budget: %v", err)
			}

			writers[0].Write([]byte("first\n"))
			writers[0].Close()
			if o := <-holders[0]; o.err != nil || o.res.Status != sandbox.StatusOK || string(o.res.Stdout.Data) != "first\n" {
				t.Fatalf("first holder: %v %+v", o.err, o.res.Wire())
			}
			if o := <-third; o.err != nil || o.res.Status != sandbox.StatusOK || string(o.res.Stdout.Data) != "third\n" {
				t.Fatalf("the queued run: %v %+v", o.err, o.res.Wire())
			}
			writers[1].Write([]byte("second\n"))
			writers[1].Close()
			if o := <-holders[1]; o.err != nil || o.res.Status != sandbox.StatusOK {
				t.Fatalf("second holder: %v %+v", o.err, o.res.Wire())
			}
			next, err := mgr.Run(t.Context(), sandbox.Spec{Argv: []string{"echo", "next"}})
			if err != nil || next.Status != sandbox.StatusOK || string(next.Stdout.Data) != "next\n" {
				t.Fatalf("the next job: %v %+v", err, next.Wire())
			}
			if st := mgr.Stats(); st.Running != 0 || st.HostTasks != 0 {
				t.Fatalf("after every run: %+v", st)
			}
		})
	}
}

type runOutcome struct {
	res sandbox.Result
	err error
}

// waitStats waits up to two minutes for the Manager's counters to satisfy ok.
func waitStats(t *testing.T, mgr *sandbox.Manager, ok func(sandbox.Stats) bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !ok(mgr.Stats()) {
		if time.Now().After(deadline) {
			t.Fatalf("admission never reached the state awaited: %+v", mgr.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// pidsCgroup is the host directory of sandbox id's pids cgroup.
func pidsCgroup(id string) string {
	if cgroupstat.V2() {
		return filepath.Join("/sys/fs/cgroup/aster", id)
	}
	return filepath.Join("/sys/fs/cgroup/pids/aster", id)
}

func readCount(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// watchPeak follows the tasks of the pids cgroup in dir and returns a
// function that stops and gives the most seen: the kernel's own pids.peak
// where it has one, and pids.current sampled every 10 ms.
func watchPeak(dir string) func() int64 {
	stop, done := make(chan struct{}), make(chan int64, 1)
	go func() {
		var most int64
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			if n, err := readCount(filepath.Join(dir, "pids.current")); err == nil {
				most = max(most, n)
			}
			select {
			case <-stop:
				if n, err := readCount(filepath.Join(dir, "pids.peak")); err == nil {
					most = max(most, n)
				}
				done <- most
				return
			case <-tick.C:
			}
		}
	}()
	return func() int64 {
		close(stop)
		return <-done
	}
}
