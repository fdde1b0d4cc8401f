package store

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCrashHelper is not a test: TestRecoverAfterKill runs the test binary with
// ASTER_STORE_CRASH_HELPER set, and this process claims a job and hangs until killed.
func TestCrashHelper(t *testing.T) {
	spec := os.Getenv("ASTER_STORE_CRASH_HELPER")
	if spec == "" {
		t.Skip("helper process only")
	}
	kind, target, _ := strings.Cut(spec, "=")
	o := Options{Queue: QueueOptions{ClientID: os.Getenv("ASTER_STORE_CRASH_CLIENT"), PollInterval: 20 * time.Millisecond}}
	if kind == "sqlite" {
		o.Path = target
	} else {
		o.URL = target
	}
	s, err := Open(context.Background(), o)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	err = s.Start(context.Background(), func(ctx context.Context, j *Job) error {
		if _, err := j.Claim(ctx); err != nil {
			return err
		}
		fmt.Printf("claimed %d\n", j.ID)
		select {} // killed here
	})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	if _, err := s.RequestReview(context.Background(), request("d-crash", 7, "aaa")); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	select {}
}

// TestRecoverAfterKill kills -9 a process in the middle of a job and starts the queue again
// under the same client id: the job runs again at once, exactly once, and the pull request
// is not left leased by the dead process.
func TestRecoverAfterKill(t *testing.T) {
	run := func(t *testing.T, kind, target string, open func(client string) *Store) {
		client := "crash-" + randHex(3)
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestCrashHelper$", "-test.count=1")
		cmd.Env = append(os.Environ(), "ASTER_STORE_CRASH_HELPER="+kind+"="+target, "ASTER_STORE_CRASH_CLIENT="+client)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(out)
		claimed := make(chan string, 1)
		go func() {
			for lines.Scan() {
				if strings.HasPrefix(lines.Text(), "claimed ") || strings.HasPrefix(lines.Text(), "error:") {
					claimed <- lines.Text()
					return
				}
			}
			close(claimed)
		}()
		select {
		case l := <-claimed:
			if !strings.HasPrefix(l, "claimed ") {
				t.Fatalf("helper: %q", l)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("helper never claimed its job")
		}
		t.Logf("claimed after %s", time.Since(t0))
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()

		s := open(client)
		ctx := t.Context()
		p, _, _ := s.Pull(ctx, PullKey{"acme", "widgets", 7})
		if p.RunningJob == 0 || p.LeaseOwner == "" {
			t.Fatalf("before restart the dead process should still hold the lease: %+v", p)
		}
		ran := make(chan int, 4)
		if err := s.Start(ctx, func(ctx context.Context, j *Job) error {
			if _, err := j.Claim(ctx); err != nil {
				return err
			}
			ran <- j.Attempt
			return j.Finish(ctx, Finish{ReviewedSHA: "aaa", Record: &ReviewRecord{Pull: j.Pull, HeadSHA: "aaa", Outcome: OutcomePosted}})
		}); err != nil {
			t.Fatal(err)
		}
		select {
		case a := <-ran:
			t.Logf("rerun after %s", time.Since(t0))
			if a != 2 {
				t.Fatalf("rerun attempt = %d, want 2", a)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the interrupted job did not run again after the restart")
		}
		time.Sleep(300 * time.Millisecond)
		if len(ran) != 0 {
			t.Fatal("the interrupted job ran more than once after the restart")
		}
		h, _ := s.History(ctx, HistoryFilter{})
		if len(h) != 1 {
			t.Fatalf("history = %d records, want 1", len(h))
		}
	}
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "aster.db")
		run(t, "sqlite", path, func(client string) *Store {
			// The dead helper's flock went with it.
			return openTest(t, Options{Path: path, Queue: QueueOptions{ClientID: client}})
		})
	})
	t.Run("postgres", func(t *testing.T) {
		u := PostgresTestURL(t)
		run(t, "postgres", u, func(client string) *Store {
			return openTest(t, Options{URL: u, Queue: QueueOptions{ClientID: client}})
		})
	})
}
