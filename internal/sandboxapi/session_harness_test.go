package sandboxapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/egress"
	"github.com/asterhq/aster/internal/sandbox"
)

// mustTokens parses a token file, failing t on an error.
func mustTokens(t testing.TB, file string) *Tokens {
	t.Helper()
	toks, err := ParseTokens(strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	return toks
}

// createSession makes a session with req for h's token, fails the test
// unless it is created, and deletes it when the test ends. It returns the
// session and its route.
func (h *harness) createSession(req api.SessionRequest) (api.Session, string) {
	h.t.Helper()
	s, base, _ := h.createSessionBody(req)
	return s, base
}

// createSessionBody is createSession that also returns the answer.
func (h *harness) createSessionBody(req api.SessionRequest) (api.Session, string, []byte) {
	h.t.Helper()
	resp, body := h.postJSON(api.RouteSessions, req)
	if resp.StatusCode != http.StatusCreated {
		h.t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	var s api.Session
	if err := json.Unmarshal(body, &s); err != nil {
		h.t.Fatalf("create answered %s (%v)", body, err)
	}
	base := api.RouteSessions + "/" + s.ID
	h.t.Cleanup(func() { h.do(context.Background(), http.MethodDelete, base, "", nil) })
	return s, base, body
}

// sessionExec runs argv in the session at base (90 s at most) and returns
// its stdout, failing the test unless it ended with status ok.
func (h *harness) sessionExec(base string, argv ...string) string {
	h.t.Helper()
	return h.sessionExecTo(io.Discard, base, argv...)
}

// sessionExecTo is sessionExec that also writes the answer to w.
func (h *harness) sessionExecTo(w io.Writer, base string, argv ...string) string {
	h.t.Helper()
	resp, body := h.postJSON(base+"/exec", api.SessionExecRequest{Argv: argv, Timeout: "90s"})
	_, _ = w.Write(body)
	r := decodeOK[api.Result](h.t, resp, body)
	if r.Status != sandbox.StatusOK {
		h.t.Fatalf("%v: %+v", argv, r)
	}
	return r.Stdout
}

// holdExec starts argv in the session at base, a command that writes
// /work/first-ok once its first request is answered and then holds its
// tunnel, and returns once it has. The channel gets "STATUS STDOUT STDERR"
// when the command ends.
func (h *harness) holdExec(base string, argv ...string) <-chan string {
	h.t.Helper()
	held := make(chan string, 1)
	go func() {
		resp, body, err := h.tryPost(base+"/exec", api.SessionExecRequest{Argv: argv, Timeout: "90s"})
		if err != nil {
			held <- "error " + err.Error()
			return
		}
		var r api.Result
		json.Unmarshal(body, &r)
		held <- fmt.Sprintf("%d %s %s", resp.StatusCode, r.Stdout, r.Stderr)
	}()
	waitFor(h.t, 60e9, "the held exec's first answer", func() bool {
		resp, _ := h.do(context.Background(), http.MethodGet, base+"/files/first-ok", "", nil)
		return resp.StatusCode == http.StatusOK
	})
	return held
}

// setSessionEgress switches the session at base to the profile name,
// failing the test unless the answer names it.
func (h *harness) setSessionEgress(base, name string) {
	h.t.Helper()
	resp, body := h.do(context.Background(), http.MethodPut, base+"/egress", api.ContentTypeJSON, bytes.NewReader([]byte(`{"profile":"`+name+`"}`)))
	if got := decodeOK[api.Session](h.t, resp, body); got.EgressProfile != name {
		h.t.Fatalf("switch to %q: %+v", name, got)
	}
}

// serveHello serves plain HTTP on a loopback port until the test ends,
// answering "hello-HOST" (HOST from the request's Host), and returns the
// port.
func serveHello(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello-%s", strings.Split(r.Host, ":")[0])
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

// loopbackPolicy allows rules, each admitted at 127.0.0.1 only, resolving
// names by res.
func loopbackPolicy(res mapResolver, rules ...egress.Rule) *egress.Policy {
	lo := []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	p := &egress.Policy{Allow: rules, Addresses: map[egress.Rule][]netip.Prefix{}, Resolver: res}
	for _, r := range rules {
		p.Addresses[r] = lo
	}
	return p
}
