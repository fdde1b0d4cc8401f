package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/asterhq/aster/api"
)

// tempUse is the disk a process holds under dir: the files there, and the
// files it unlinked there and still keeps open (a deleted file takes its
// space until its last descriptor closes). Only what the test owns is
// measured: its own directory, the server's own descriptors.
func tempUse(pid int, dir string) (int64, error) {
	seen := map[[2]uint64]int64{}
	add := func(info fs.FileInfo) {
		if st, ok := info.Sys().(*syscall.Stat_t); ok && info.Mode().IsRegular() {
			seen[[2]uint64{st.Dev, st.Ino}] = info.Size()
		}
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // gone meanwhile
		}
		if info, err := d.Info(); err == nil {
			add(info)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(fdDir)
	if err != nil {
		return 0, err
	}
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
		if err != nil || !strings.HasPrefix(target, dir+"/") {
			continue
		}
		if info, err := os.Stat(filepath.Join(fdDir, fd.Name())); err == nil {
			add(info)
		}
	}
	var n int64
	for _, size := range seen {
		n += size
	}
	return n, nil
}

// peakSampler records the most tempUse ever saw until stopped.
type peakSampler struct {
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	peak int64
	err  error
}

func samplePeak(pid int, dir string) *peakSampler {
	s := &peakSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for {
			n, err := tempUse(pid, dir)
			s.mu.Lock()
			s.peak = max(s.peak, n)
			if err != nil && s.err == nil {
				s.err = err
			}
			s.mu.Unlock()
			select {
			case <-s.stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	return s
}

func (s *peakSampler) result() (int64, error) {
	close(s.stop)
	<-s.done
	return s.peak, s.err
}

// asterTempFiles lists the entries of dir named like Aster's temporary files.
func asterTempFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "aster-") {
			out = append(out, e.Name())
		}
	}
	return out
}

// installTest is a /v1/test whose install phase leaves mb megabytes of
// dependencies, and whose tests check they arrived and then run cmd.
func installTest(mb int, cmd string) api.TestRequest {
	return api.TestRequest{
		Setup:   []string{"sh", "-c", fmt.Sprintf("mkdir -p node_modules && head -c %d /dev/zero > node_modules/blob", mb*1000*1000)},
		Command: []string{"sh", "-c", fmt.Sprintf("test $(wc -c < node_modules/blob) -eq %d && %s", mb*1000*1000, cmd)},
		JobRequest: api.JobRequest{Limits: api.Limits{Timeout: "2m"},
			Files: map[string]api.File{"README": {Content: "a project\n"}}},
	}
}

// SECURITY L (disk of /v1/test): with one slot and a 256 MiB spool, three
// requests whose install leaves 150 MB of dependencies each. Before, the
// install's export, the dependency archive and the test workspace were
// ordinary temporary files outside --max-spool, and a test phase waiting for
// the slot kept its files: three such requests took over 700 MB of the
// server's temporary directory. Now every byte a request puts there is
// counted in its share of --max-spool from its first phase to its answer:
// the server's temporary disk stays within the budget, a request that does
// not fit is refused with 429 and Retry-After naming --max-spool, and the
// next request runs normally.
func TestServeTestDiskWithinSpool(t *testing.T) {
	needEngine(t)
	const budget = 256 << 20
	tmp := t.TempDir()
	labelEnv, _ := uniqueLabel(t)
	// A long queue timeout: on a loaded machine a test phase may wait for
	// the other installs longer than the default, and this test is about disk.
	p := startServe(t, []string{"TMPDIR=" + tmp, labelEnv}, "--max-concurrent", "1", "--queue-timeout", "10m",
		"--max-spool", "256m", "--max-workdir-size", "256m", "--egress-allow", "registry.invalid")
	sampler := samplePeak(p.proc.Pid, tmp)

	type answer struct {
		status int
		retry  string
		body   []byte
		err    error
	}
	answers := make(chan answer, 3)
	for range 3 {
		go func() {
			st, retry, body, err := p.post(context.Background(), api.RouteTest, installTest(150, "true"))
			answers <- answer{st, retry, body, err}
		}()
	}
	ok, refused := 0, 0
	for range 3 {
		a := <-answers
		switch {
		case a.err != nil:
			t.Errorf("request: %v", a.err)
		case a.status == 200:
			var tr api.TestResponse
			if err := json.Unmarshal(a.body, &tr); err != nil || tr.Status != "ok" || tr.Install == nil || tr.Install.Status != api.InstallOK {
				t.Errorf("a served request did not run: %s", a.body)
			}
			ok++
		case a.status == 429:
			var eb api.ErrorBody
			if err := json.Unmarshal(a.body, &eb); err != nil || eb.Error.Code != api.CodeBusy || !strings.Contains(eb.Error.Message, "--max-spool") {
				t.Errorf("refusal not clear: %s", a.body)
			}
			if n, err := strconv.Atoi(a.retry); err != nil || n < 1 {
				t.Errorf("refusal without Retry-After: %q", a.retry)
			}
			refused++
		default:
			t.Errorf("answer %d %s", a.status, a.body)
		}
	}
	peak, err := sampler.result()
	if err != nil {
		t.Fatalf("measure the server's temporary directory: %v", err)
	}
	t.Logf("served %d, refused %d; peak temporary disk of the server %.1f MiB (budget %d MiB)", ok, refused, float64(peak)/(1<<20), budget>>20)
	// The constant: nothing this test sends is spooled, so the budget is
	// all; 8 MiB of slack for files no request owns.
	if peak > budget+8<<20 {
		t.Errorf("the server's temporary disk reached %.1f MiB, over --max-spool %d MiB", float64(peak)/(1<<20), budget>>20)
	}
	if ok == 0 {
		t.Error("no request was served")
	}
	// Nothing is held any more, and the next request runs normally.
	if n, err := tempUse(p.proc.Pid, tmp); err != nil || n != 0 {
		t.Errorf("after the answers the server still holds %d bytes of temporary disk (%v)", n, err)
	}
	st, _, body, err := p.post(context.Background(), api.RouteTest, installTest(100, "true"))
	if err != nil || st != 200 || !strings.Contains(string(body), `"status":"ok"`) {
		t.Errorf("the next request: %d %s %v", st, body, err)
	}
}

// SECURITY L (kill -9 and /v1/test's files): a server killed while a
// /v1/test has installed its dependencies and runs its tests leaves nothing
// in its temporary directory. Before, the dependency archive and the test
// workspace (aster-deps-*.tar, aster-testws-*.tar) stayed behind after a
// kill -9; now the only file a test run writes is unlinked as soon as it is
// created, so nothing of Aster's is ever visible there, not even while the
// run goes; after a restart the next request runs normally.
func TestServeKill9LeavesNoTestFiles(t *testing.T) {
	needEngine(t)
	eng := engineAPI(t, "")
	tmp := t.TempDir()
	labelEnv, label := uniqueLabel(t)
	t.Cleanup(func() { removeLabelled(t, eng, label) })
	env := []string{"TMPDIR=" + tmp, labelEnv}
	args := []string{"--max-concurrent", "2", "--egress-allow", "registry.invalid"}
	p := startServe(t, env, args...)

	interrupted := make(chan error, 1)
	go func() {
		st, _, body, err := p.post(context.Background(), api.RouteTest, installTest(40, "sleep 100"))
		if err == nil {
			interrupted <- fmt.Errorf("got an answer %d %s", st, body)
			return
		}
		interrupted <- nil
	}()
	// The install has ended and the test phase's sandbox runs.
	eventually(t, 2*time.Minute, "the test phase to run", func() bool {
		items, _ := listLabelled(t, eng, label)
		for _, c := range items {
			if c.State == "running" && !strings.HasSuffix(c.Labels["aster.run"], "-install") {
				return true
			}
		}
		return false
	})
	use, err := tempUse(p.proc.Pid, tmp)
	if err != nil {
		t.Fatal(err)
	}
	visible := asterTempFiles(t, tmp)
	t.Logf("while the tests run: %.1f MiB held in the temporary directory, visible there: %q", float64(use)/(1<<20), visible)
	if use < 40*1000*1000 {
		t.Errorf("the server holds %d bytes there: the dependencies were not where this test looks", use)
	}
	if len(visible) > 0 {
		t.Errorf("files visible while the run goes: %q", visible)
	}
	if err := p.proc.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.wait(10 * time.Second)
	if err := <-interrupted; err != nil {
		t.Errorf("the interrupted request: %v", err)
	}
	if left := asterTempFiles(t, tmp); len(left) > 0 {
		t.Errorf("left in the temporary directory after kill -9: %q", left)
	}

	p2 := startServe(t, env, args...)
	if left := asterTempFiles(t, tmp); len(left) > 0 {
		t.Errorf("left in the temporary directory after the restart: %q", left)
	}
	st, _, body, err := p2.post(context.Background(), api.RouteTest, installTest(1, "true"))
	if err != nil || st != 200 || !strings.Contains(string(body), `"status":"ok"`) {
		t.Errorf("after the restart: %d %s %v", st, body, err)
	}
}

// removeLabelled force-removes the containers with a label: the sandbox a
// killed server left running.
func removeLabelled(t *testing.T, eng *client.Client, label string) {
	items, _ := listLabelled(t, eng, label)
	for _, c := range items {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, _ = eng.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true})
		cancel()
	}
}
