package sandboxapi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/sandbox"
)

// An exec in a session streams as /v1/execute does when the client asks for
// NDJSON: output events while the command runs, in order, then the result,
// and together they are exactly the command's output; an exec past its
// timeout streams what it printed and ends with a timeout result, and the
// session lives on.
func TestSessionExecStreamHTTP(t *testing.T) {
	forSessionRuntimes(t, sessionStreamCase)
}

func sessionStreamCase(t *testing.T, rt sandbox.Runtime) {
	h := newHarness(t, harnessOpts{runtime: rt})
	_, base := h.createSession(api.SessionRequest{TTL: "5m"})

	exec := func(req api.SessionExecRequest) (events []api.Event, firstAt, resultAt time.Time) {
		t.Helper()
		b, _ := json.Marshal(req)
		hr, err := http.NewRequestWithContext(t.Context(), http.MethodPost, h.base+base+"/exec", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		hr.Header.Set("Content-Type", api.ContentTypeJSON)
		hr.Header.Set("Accept", api.ContentTypeNDJSON)
		resp, err := h.http.Do(hr)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != api.ContentTypeNDJSON || resp.Header.Get(api.HeaderRunID) == "" {
			t.Fatalf("exec: %d %v", resp.StatusCode, resp.Header)
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var ev api.Event
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				t.Fatalf("line %q: %v", sc.Text(), err)
			}
			if !resultAt.IsZero() {
				t.Fatalf("event after the result: %s", sc.Text())
			}
			switch ev.Type {
			case api.EventStdout, api.EventStderr:
				if firstAt.IsZero() {
					firstAt = time.Now()
				}
			case api.EventResult:
				resultAt = time.Now()
			default:
				t.Errorf("unexpected event %s", sc.Text())
			}
			events = append(events, ev)
		}
		if resultAt.IsZero() {
			t.Fatal("no result event")
		}
		return events, firstAt, resultAt
	}
	split := func(events []api.Event) (stdout, stderr string, res sandbox.WireResult) {
		var o, e strings.Builder
		for _, ev := range events {
			switch ev.Type {
			case api.EventStdout:
				o.Write(ev.Data)
			case api.EventStderr:
				e.Write(ev.Data)
			case api.EventResult:
				if err := json.Unmarshal(ev.Result, &res); err != nil {
					t.Fatal(err)
				}
			}
		}
		return o.String(), e.String(), res
	}

	script := `for i in 1 2 3; do echo "out $i"; echo "err $i" >&2; sleep 0.4; done; echo last > /tmp/kept; cat /tmp/kept`
	events, firstAt, resultAt := exec(api.SessionExecRequest{Argv: []string{"sh", "-c", script}})
	stdout, stderr, res := split(events)
	if stdout != "out 1\nout 2\nout 3\nlast\n" || stderr != "err 1\nerr 2\nerr 3\n" {
		t.Errorf("streamed stdout %q stderr %q", stdout, stderr)
	}
	if res.Status != sandbox.StatusOK || res.Stdout != stdout || res.Stderr != stderr {
		t.Errorf("result %+v does not match the stream", res)
	}
	if d := resultAt.Sub(firstAt); d < 700*time.Millisecond {
		t.Errorf("first output only %s before the result: not streamed", d)
	}

	events, _, _ = exec(api.SessionExecRequest{Argv: []string{"sh", "-c", "echo before; sleep 30"}, Timeout: "1s"})
	stdout, _, res = split(events)
	if res.Status != sandbox.StatusTimeout || stdout != "before\n" {
		t.Errorf("timed-out exec: stdout %q, result %+v", stdout, res)
	}
	// The session lives on, its /tmp with it.
	events, _, _ = exec(api.SessionExecRequest{Argv: []string{"cat", "/tmp/kept"}})
	if stdout, _, res = split(events); res.Status != sandbox.StatusOK || stdout != "last\n" {
		t.Errorf("after the timeout: stdout %q, result %+v", stdout, res)
	}
}
