package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/openapitest"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
	"github.com/asterhq/aster/internal/testkit"
)

// serveProc is a running `aster sandbox serve` built from this tree.
type serveProc struct {
	t    *testing.T
	url  string
	logs *syncBuffer
	proc *os.Process
	done chan error
	// http checks every call against the API's OpenAPI description.
	http *http.Client
}

// uniqueLabel is aster.test=<test>-<pid>-<n>: other test processes (a
// teammate's `go test ./...`) run the same tests against the same engine, so
// the test name alone does not say whose sandboxes these are.
func uniqueLabel(t *testing.T) (env, label string) {
	t.Helper()
	labelSeq.Lock()
	labelSeq.n++
	n := labelSeq.n
	labelSeq.Unlock()
	v := fmt.Sprintf("%s-%d-%d", filepath.Base(t.Name()), os.Getpid(), n)
	return "ASTER_LABELS=aster.test=" + v, "aster.test=" + v
}

var labelSeq struct {
	sync.Mutex
	n int
}

// needEngine skips with -short, and otherwise fails or skips (as
// sandboxtest.Docker decides) without an engine and the image.
func needEngine(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the container engine (skipped with -short)")
	}
	sandboxtest.Docker(t)
}

// startServe starts the server on a free loopback port with extra
// environment and flags, and waits until /healthz answers.
func startServe(t *testing.T, env []string, args ...string) *serveProc {
	t.Helper()
	addr := testkit.FreeAddr(t)
	cmd := asterCmd(t, append([]string{"sandbox", "serve", "--addr", addr, "--log-level", "debug"}, args...)...)
	cmd.Env = append(cmd.Env, env...)
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	spec, err := openapitest.Load()
	if err != nil {
		t.Fatal(err)
	}
	p := &serveProc{t: t, url: "http://" + addr, logs: logs, proc: cmd.Process, done: make(chan error, 1), http: spec.Client(t)}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.proc.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("server logs:\n%s", tail(logs.String(), 4000))
		}
	})
	waitHTTP(t, p.url+api.RouteHealth, logs)
	return p
}

// wait returns the process's exit error, failing after timeout.
func (p *serveProc) wait(timeout time.Duration) error {
	p.t.Helper()
	select {
	case err := <-p.done:
		p.done <- err // for the cleanup
		return err
	case <-time.After(timeout):
		p.t.Fatalf("server still running after %s", timeout)
		return nil
	}
}

// post sends a JSON request and returns the status, Retry-After and body.
func (p *serveProc) post(ctx context.Context, path string, v any) (int, string, []byte, error) {
	b, _ := json.Marshal(v)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.url+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", api.ContentTypeJSON)
	resp, err := p.http.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), body, err
}

// engineAPI connects to an engine (host "" is the environment's).
func engineAPI(t *testing.T, host string) *client.Client {
	t.Helper()
	opts := []client.Opt{client.WithHostFromEnv()}
	if host != "" {
		opts = append(opts, client.WithHost(host))
	}
	eng, err := client.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return eng
}

// labelled counts containers with a label (k=v), optionally in one state.
func labelled(t *testing.T, eng *client.Client, label, state string) int {
	t.Helper()
	items, ok := listLabelled(t, eng, label)
	if !ok {
		return -1
	}
	n := 0
	for _, c := range items {
		if state == "" || string(c.State) == state {
			n++
		}
	}
	return n
}

// liveStates counts the live containers with a label — created or running,
// not those exited or being removed, whose processes are gone — and lists
// the states of all of them.
func liveStates(t *testing.T, eng *client.Client, label string) (live, all int, states string) {
	t.Helper()
	items, ok := listLabelled(t, eng, label)
	if !ok {
		return 0, 0, ""
	}
	var list []string
	for _, c := range items {
		list = append(list, string(c.State))
		switch c.State {
		case container.StateExited, container.StateDead, container.StateRemoving:
		default:
			live++
		}
	}
	return live, len(items), strings.Join(list, ", ")
}

// listLabelled lists the containers with a label (k=v), in any state; a
// failed list is reported (not fatal: callers poll) and ok is false.
func listLabelled(t *testing.T, eng *client.Client, label string) (items []container.Summary, ok bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := eng.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", label)})
	if err != nil {
		t.Errorf("list containers: %v", err)
		return nil, false
	}
	return res.Items, true
}

func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	t0 := time.Now()
	for !cond() {
		if time.Since(t0) > timeout {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Since(t0)
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// SECURITY G3: 200 jobs against 4 slots and 8 queue places. Sampled from the
// engine, the live sandboxes never exceed 4; every request gets a result or
// a 429 with Retry-After; nothing is left; the service keeps working.
func TestServeBurst(t *testing.T) {
	needEngine(t)
	eng := engineAPI(t, "")
	labelEnv, label := uniqueLabel(t)
	p := startServe(t, []string{labelEnv}, "--max-concurrent", "4", "--queue", "8", "--queue-timeout", "60s")

	var peak, peakAll, samples int
	var peakStates string
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stopSampling:
				return
			default:
			}
			n, all, states := liveStates(t, eng, label)
			if n > peak {
				peak, peakStates = n, states
			}
			peakAll = max(peakAll, all)
			samples++
		}
	}()

	const jobs = 200
	type outcome struct {
		status int
		retry  string
		body   []byte
		err    error
	}
	outcomes := make([]outcome, jobs)
	var wg sync.WaitGroup
	for i := range jobs {
		if i > 0 && i%50 == 0 {
			time.Sleep(time.Second) // four waves: the queue drains and refills between them
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, retry, body, err := p.post(context.Background(), api.RouteExecute, api.ExecuteRequest{Argv: []string{"sh", "-c", "echo $$; sleep 0.2"}})
			outcomes[i] = outcome{st, retry, body, err}
		}()
	}
	wg.Wait()
	close(stopSampling)
	<-sampled

	ok, busy := 0, 0
	for i, o := range outcomes {
		switch {
		case o.err != nil:
			t.Errorf("job %d: %v", i, o.err)
		case o.status == 200:
			var res sandbox.WireResult
			if err := json.Unmarshal(o.body, &res); err != nil || res.Status != sandbox.StatusOK {
				t.Errorf("job %d: %s %v", i, o.body, err)
			}
			ok++
		case o.status == 429:
			var eb api.ErrorBody
			ra, err := strconv.Atoi(o.retry)
			if json.Unmarshal(o.body, &eb) != nil || eb.Error.Code != "busy" || err != nil || ra < 1 || ra > 60 {
				t.Errorf("job %d: 429 with Retry-After %q body %s", i, o.retry, o.body)
			}
			busy++
		default:
			t.Errorf("job %d: status %d %s", i, o.status, o.body)
		}
	}
	t.Logf("%d results, %d × 429; peak %d live sandboxes (%s) over %d samples; %d listed in any state, those being removed included",
		ok, busy, peak, peakStates, samples, peakAll)
	if ok+busy != jobs || ok < 12 {
		t.Errorf("%d ok + %d busy of %d", ok, busy, jobs)
	}
	if peak > 4 {
		t.Errorf("%d sandboxes alive at once, limit 4", peak)
	}
	if peak == 0 || samples < 20 {
		t.Errorf("sampling saw nothing: peak %d in %d samples", peak, samples)
	}
	eventually(t, 15*time.Second, "no sandbox left", func() bool { return labelled(t, eng, label, "") == 0 })
	st, _, body, err := p.post(context.Background(), api.RouteExecute, api.ExecuteRequest{Argv: []string{"echo", "after"}})
	if err != nil || st != 200 || !strings.Contains(string(body), `"stdout":"after\n"`) {
		t.Errorf("after the burst: %d %s %v", st, body, err)
	}
}

// leakSandbox creates a running container that looks like a sandbox a
// crashed Aster left behind, with the given deadline.
func leakSandbox(t *testing.T, eng *client.Client, label string, deadline time.Time) string {
	t.Helper()
	k, v, _ := strings.Cut(label, "=")
	ctx := t.Context()
	created, err := eng.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{
			Image: sandboxtest.Image(), Cmd: []string{"sleep", "600"}, User: "1000:1000",
			Labels: map[string]string{"aster.managed": "true", "aster.run": "r-leaked", "aster.deadline": strconv.FormatInt(deadline.Unix(), 10), k: v},
		},
		HostConfig: &container.HostConfig{NetworkMode: "none", AutoRemove: true, CapDrop: []string{"ALL"}, ReadonlyRootfs: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		eng.ContainerRemove(context.Background(), created.ID, client.ContainerRemoveOptions{Force: true})
	})
	if _, err := eng.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	return created.ID
}

// SECURITY G4: kill -9 of the server mid-run, then a restart. No labelled
// sandbox survives its deadline plus one reaper period; the interrupted
// requests fail rather than report a result; a sandbox leaked before the
// start is reaped at start-up, one that expires later by the periodic pass.
func TestServeKill9ThenRestart(t *testing.T) {
	needEngine(t)
	eng := engineAPI(t, "")
	labelEnv, label := uniqueLabel(t)
	env := []string{"ASTER_REAPER_ALLOWANCE=1s", labelEnv}
	args := []string{"--max-concurrent", "4", "--reaper-period", "1s", "--reaper-grace", "0s"}

	stale := leakSandbox(t, eng, label, time.Now().Add(-time.Minute))
	p := startServe(t, env, args...)
	eventually(t, 10*time.Second, "the stale sandbox to be reaped at start-up", func() bool {
		_, err := eng.ContainerInspect(t.Context(), stale, client.ContainerInspectOptions{})
		return err != nil
	})

	const timeout = 3 * time.Second
	interrupted := make(chan error, 3)
	for range 3 {
		go func() {
			st, _, body, err := p.post(context.Background(), api.RouteExecute, api.ExecuteRequest{
				Argv: []string{"sleep", "60"}, JobRequest: api.JobRequest{Limits: api.Limits{Timeout: api.Quantity(timeout.String())}},
			})
			if err == nil {
				err = fmt.Errorf("got an answer %d %s", st, body)
			} else {
				err = nil
			}
			interrupted <- err
		}()
	}
	eventually(t, 30*time.Second, "three running sandboxes", func() bool { return labelled(t, eng, label, "running") == 3 })
	started := time.Now()
	if err := p.proc.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.wait(10 * time.Second)
	for range 3 {
		if err := <-interrupted; err != nil {
			t.Errorf("interrupted request: %v", err)
		}
	}
	p2 := startServe(t, env, args...)
	// The deadline label is timeout + kill grace + host grace + allowance
	// from before the sandbox started; past it one reaper period, plus slack
	// for a loaded machine.
	bound := started.Add(timeout + sandbox.KillGrace + sandbox.HostGrace + time.Second + time.Second + 5*time.Second)
	eventually(t, time.Until(bound), "the interrupted sandboxes to go", func() bool { return labelled(t, eng, label, "") == 0 })
	t.Logf("sandboxes gone %s after they were running and aster was killed (bound %s)",
		time.Since(started).Round(time.Millisecond), bound.Sub(started).Round(time.Millisecond))

	// One that expires while the new server runs goes at the next pass.
	late := leakSandbox(t, eng, label, time.Now().Add(2*time.Second))
	eventually(t, 2*time.Second+time.Second+5*time.Second, "the expiring sandbox to be reaped", func() bool {
		_, err := eng.ContainerInspect(t.Context(), late, client.ContainerInspectOptions{})
		return err != nil
	})
	st, _, body, err := p2.post(context.Background(), api.RouteExecute, api.ExecuteRequest{Argv: []string{"echo", "restarted"}})
	if err != nil || st != 200 || !strings.Contains(string(body), "restarted") {
		t.Errorf("after the restart: %d %s %v", st, body, err)
	}
}

// SIGTERM: the running job finishes within the grace period and the server
// exits 0; with a short grace a long job is cancelled and its sandbox removed.
func TestServeSIGTERM(t *testing.T) {
	needEngine(t)
	eng := engineAPI(t, "")
	labelEnv, label := uniqueLabel(t)
	for _, c := range []struct {
		grace  string
		argv   []string
		status sandbox.Status
	}{
		{"20s", []string{"sh", "-c", "sleep 2; echo finished"}, sandbox.StatusOK},
		{"1s", []string{"sleep", "60"}, sandbox.StatusKilled},
	} {
		p := startServe(t, []string{labelEnv}, "--shutdown-grace", c.grace)
		result := make(chan sandbox.WireResult, 1)
		go func() {
			_, _, body, err := p.post(context.Background(), api.RouteExecute, api.ExecuteRequest{Argv: c.argv})
			var res sandbox.WireResult
			if err == nil {
				err = json.Unmarshal(body, &res)
			}
			if err != nil {
				t.Errorf("grace %s: %v", c.grace, err)
			}
			result <- res
		}()
		eventually(t, 30*time.Second, "the job to run", func() bool { return labelled(t, eng, label, "running") == 1 })
		t0 := time.Now()
		if err := p.proc.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		res := <-result
		if res.Status != c.status {
			t.Errorf("grace %s: status %s (%s)", c.grace, res.Status, res.Error)
		}
		if err := p.wait(30 * time.Second); err != nil {
			t.Errorf("grace %s: exit %v", c.grace, err)
		}
		t.Logf("grace %s: stopped %s after SIGTERM", c.grace, time.Since(t0).Round(time.Millisecond))
		if _, err := net.DialTimeout("tcp", strings.TrimPrefix(p.url, "http://"), time.Second); err == nil {
			t.Errorf("grace %s: still listening", c.grace)
		}
		if n := labelled(t, eng, label, ""); n != 0 {
			t.Errorf("grace %s: %d sandboxes left", c.grace, n)
		}
	}
}

// `aster exec --server` prints what `aster exec` prints and exits the same.
func TestExecServerParity(t *testing.T) {
	needEngine(t)
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	os.WriteFile(tokens, []byte("parity-test-token-0000001\n"), 0o600)
	p := startServe(t, nil, "--token-file", tokens)
	env := map[string]string{"HOME": dir, "ASTER_INIT_PATH": sandboxtest.InitBinary(t), "ASTER_LABELS": "aster.test=" + filepath.Base(t.Name())}
	if img := os.Getenv("ASTER_TEST_IMAGE"); img != "" {
		env["ASTER_IMAGES"] = img
	}
	os.WriteFile(filepath.Join(dir, "in.txt"), []byte("from a file\n"), 0o644)
	for _, args := range [][]string{
		{"--", "sh", "-c", "cat in.txt; echo err >&2; exit 3"},
		{"--json", "--", "sh", "-c", "cat in.txt; printf '\\377'"},
		{"--timeout", "1s", "--", "sh", "-c", "echo begun; sleep 10"},
	} {
		withFile := append([]string{"exec", "--file", filepath.Join(dir, "in.txt")}, args...)
		lcode, lout, lerr := runCLI(t, env, withFile...)
		remote := append([]string{"exec", "--server", p.url, "--token-file", tokens, "--file", filepath.Join(dir, "in.txt")}, args...)
		rcode, rout, rerr := runCLI(t, env, remote...)
		if args[0] == "--json" {
			var l, r sandbox.WireResult
			json.Unmarshal([]byte(lout), &l)
			json.Unmarshal([]byte(rout), &r)
			if l.Status != r.Status || l.Stdout != r.Stdout || l.StdoutEncoding != r.StdoutEncoding || r.ID == "" {
				t.Errorf("--json: local %+v\nremote %+v", l, r)
			}
		} else if lout != rout || lcode != rcode {
			t.Errorf("%q: local %d %q, remote %d %q", args, lcode, lout, rcode, rout)
		}
		if lcode != rcode || (args[0] != "--timeout" && lerr != rerr) {
			t.Errorf("%q: local exit %d stderr %q, remote exit %d stderr %q", args, lcode, lerr, rcode, rerr)
		}
	}
	// A refused token is aster's usage error (2), never 1, which a command's
	// own failure would also give.
	wrong := filepath.Join(dir, "wrong")
	os.WriteFile(wrong, []byte("not-the-parity-test-token\n"), 0o600)
	for _, extra := range [][]string{nil, {"--token-file", wrong}, {"--json", "--token-file", wrong}} {
		args := append(append([]string{"exec", "--server", p.url}, extra...), "--", "true")
		code, stdout, stderr := runCLI(t, env, args...)
		if code != ExitUsage || !strings.Contains(stderr, "Bearer") || !strings.Contains(stderr, "--token-file") {
			t.Errorf("%q: exit %d %q", extra, code, stderr)
		}
		if len(extra) > 0 && extra[0] == "--json" && !strings.Contains(stdout, `"code":"usage"`) {
			t.Errorf("--json: stdout %q is not a JSON error", stdout)
		}
	}
	if code, _, stderr := runCLI(t, env, "exec", "--server", p.url, "--token-file", tokens, "--memory", "8g", "--", "true"); code != ExitUsage || !strings.Contains(stderr, "ceiling") {
		t.Errorf("over the ceiling: exit %d %q", code, stderr)
	}
	if code, _, stderr := runCLI(t, env, "exec", "--token-file", tokens, "--", "true"); code != ExitUsage || !strings.Contains(stderr, "--server") {
		t.Errorf("--token-file alone: exit %d %q", code, stderr)
	}
}

func TestServeRefusals(t *testing.T) {
	// Every case is refused at start, before a listener or an engine.
	dir := t.TempDir()
	short := filepath.Join(dir, "short")
	os.WriteFile(short, []byte("short\n"), 0o600)
	env := map[string]string{"HOME": dir}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--addr", "0.0.0.0:0"}, "refusing to listen"},
		{[]string{"--addr", ":0"}, "--token-file"},
		{[]string{"--token-file", short}, "shorter than 16"},
		{[]string{"--token-file", filepath.Join(dir, "missing")}, "token file"},
		{[]string{"--max-memory", "256m"}, "default limits must be within the ceilings"},
		{[]string{"--max-concurrent", "0"}, "max-concurrent"},
		{[]string{"--queue-timeout", "soon"}, "queue-timeout"},
		{[]string{"--max-body", "1"}, "max-body"},
		{[]string{"--reaper-period", "10ms"}, "reaper period"},
		{[]string{"--egress-allow", "10.0.0.1"}, "IP literals are not allowed"},
		{[]string{"--egress-allow", "registry.example", "--egress-allow", "registry.example:99999"}, "bad port"},
	} {
		code, _, stderr := runCLI(t, env, append([]string{"sandbox", "serve"}, c.args...)...)
		if code != ExitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("serve %q: exit %d %q, want %q", c.args, code, stderr, c.want)
		}
	}
}

// readNDJSON reads a stream's events to its end, calling each (when set)
// as they arrive.
func readNDJSON(r io.Reader, each func(api.Event)) ([]api.Event, error) {
	var out []api.Event
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var ev api.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return out, err
		}
		if each != nil {
			each(ev)
		}
		out = append(out, ev)
	}
	return out, sc.Err()
}
