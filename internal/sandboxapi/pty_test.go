package sandboxapi

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/client"
	"github.com/asterhq/aster/internal/sandbox"
)

// termOutput gathers a terminal's output off the test goroutine.
type termOutput struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	n    int64
	done chan struct{}
	err  error
}

func readTerminal(term *client.Terminal, keep bool) *termOutput {
	o := &termOutput{done: make(chan struct{})}
	go func() {
		defer close(o.done)
		b := make([]byte, 64<<10)
		for {
			n, err := term.Read(b)
			o.mu.Lock()
			o.n += int64(n)
			if keep || o.buf.Len() < 1<<20 {
				o.buf.Write(b[:n])
			} else {
				// Only the tail is looked at.
				tail := append([]byte(nil), o.buf.Bytes()[o.buf.Len()-4096:]...)
				o.buf.Reset()
				o.buf.Write(tail)
				o.buf.Write(b[:n])
			}
			if err != nil {
				if !errors.Is(err, io.EOF) {
					o.err = err
				}
				o.mu.Unlock()
				return
			}
			o.mu.Unlock()
		}
	}()
	return o
}

// wait returns once the output holds want, failing after a minute.
func (o *termOutput) wait(t *testing.T, want string) {
	t.Helper()
	limit := time.Now().Add(time.Minute)
	for time.Now().Before(limit) {
		o.mu.Lock()
		ok := bytes.Contains(o.buf.Bytes(), []byte(want))
		o.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-o.done:
			o.mu.Lock()
			ok = bytes.Contains(o.buf.Bytes(), []byte(want))
			o.mu.Unlock()
			if !ok {
				t.Fatalf("the terminal closed without %q (err %v); output ends %q", want, o.err, o.tail())
			}
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("no %q from the terminal in a minute; output ends %q", want, o.tail())
}

func (o *termOutput) tail() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	b := o.buf.Bytes()
	return string(b[max(0, len(b)-400):])
}

func (o *termOutput) reset() {
	o.mu.Lock()
	o.buf.Reset()
	o.mu.Unlock()
}

// TestSessionTerminalHTTP drives GET /v1/sessions/{id}/pty on the real
// engine: a real terminal allocated in the sandbox at the size asked,
// resized by the resize request, output bytes relayed as they are (escape
// sequences and all), a flood paced to the reader, the terminal's processes
// ended when it closes, another token's 404, and the terminal closed when
// the session ends.
func TestSessionTerminalHTTP(t *testing.T) {
	toks := mustTokens(t, "token-for-terminals-aaaa\ntoken-for-terminals-bbbb\n")
	h := newHarness(t, harnessOpts{server: func(o *Options) { o.Tokens = toks }})
	h.token = "token-for-terminals-aaaa"
	ctx := context.Background()
	sess, base := h.createSession(api.SessionRequest{TTL: "5m"})

	owner, err := client.New(client.Options{BaseURL: h.base, Token: h.token})
	if err != nil {
		t.Fatal(err)
	}
	other, _ := client.New(client.Options{BaseURL: h.base, Token: "token-for-terminals-bbbb"})
	if _, err := other.OpenTerminal(ctx, sess.ID, client.TerminalOptions{}); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("another token's terminal: %v, want not found", err)
	}
	// Refused before any upgrade: no WebSocket, a bad size.
	resp, body := h.do(ctx, http.MethodGet, base+"/pty", "", nil)
	errorOf(t, resp, body, http.StatusBadRequest, "invalid_spec")
	if _, err := owner.OpenTerminal(ctx, sess.ID, client.TerminalOptions{Cols: 1001}); !errors.Is(err, api.ErrInvalidSpec) {
		t.Fatalf("cols 1001: %v", err)
	}
	resp, body = h.postJSON(base+"/pty/resize", api.TerminalResize{Cols: 100, Rows: 30})
	errorOf(t, resp, body, http.StatusNotFound, "not_found")

	term, err := owner.OpenTerminal(ctx, sess.ID, client.TerminalOptions{Cols: 100, Rows: 30, Name: "main"})
	if err != nil {
		t.Fatal(err)
	}
	defer term.Close()
	if term.Name != "main" {
		t.Fatalf("terminal name %q", term.Name)
	}
	out := readTerminal(term, true)
	type_ := func(s string) {
		t.Helper()
		if _, err := term.Write([]byte(s)); err != nil {
			t.Fatalf("type %q: %v", s, err)
		}
	}
	// A real terminal, of the size asked, as the job user.
	type_("stty size; tty; id -u\n")
	out.wait(t, "30 100")
	out.wait(t, "/dev/pts/")
	if _, err := owner.OpenTerminal(ctx, sess.ID, client.TerminalOptions{Name: "main"}); !errors.Is(err, api.ErrInvalidSpec) {
		t.Fatalf("a second terminal of the same name: %v", err)
	}

	// Resized: the request needs no name while one terminal is open.
	resp, body = h.postJSON(base+"/pty/resize", api.TerminalResize{Cols: 120, Rows: 40})
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("resize: %d %s", resp.StatusCode, body)
	}
	// The size reaches init beside the typed bytes, not in order with them.
	for i := 0; ; i++ {
		out.reset()
		type_("stty size\n")
		time.Sleep(100 * time.Millisecond)
		if strings.Contains(out.tail(), "40 120") {
			break
		}
		if i == 100 {
			t.Fatalf("the resize did not reach the terminal: %q", out.tail())
		}
	}
	resp, body = h.postJSON(base+"/pty/resize", api.TerminalResize{Terminal: "nope", Cols: 10, Rows: 10})
	errorOf(t, resp, body, http.StatusNotFound, "not_found")
	resp, body = h.postJSON(base+"/pty/resize", api.TerminalResize{Cols: 0, Rows: 10})
	errorOf(t, resp, body, http.StatusBadRequest, "invalid_spec")

	// Escape sequences and bytes that are not text are relayed as they are:
	// data, never interpreted on the host.
	out.reset()
	type_(`printf '\033]0;title\007\033[31mRED\033[0m\001\377\033[6n-%s\n' END` + "\n")
	out.wait(t, "\x1b]0;title\x07\x1b[31mRED\x1b[0m\x01\xff\x1b[6n-END")

	// Processes of the terminal, in its process group or another of its
	// process session (job control), end when it closes.
	type_("sleep 1000 & (sleep 1001 &); echo started-$((6*7))\n")
	out.wait(t, "started-42")
	if err := term.Close(); err != nil {
		t.Fatal(err)
	}
	<-out.done
	psGone := func(words ...string) bool {
		resp, body := h.postJSON(base+"/exec", api.SessionExecRequest{Argv: []string{"sh", "-c", "cat /proc/[0-9]*/cmdline | tr '\\0' ' '"}})
		res := decodeOK[api.Result](t, resp, body)
		for _, w := range words {
			if strings.Contains(res.Stdout, w) {
				return false
			}
		}
		return true
	}
	for i := 0; !psGone("sleep 1000", "sleep 1001"); i++ {
		if i == 100 {
			t.Fatal("the terminal's processes outlived it")
		}
		time.Sleep(100 * time.Millisecond)
	}

	// A flood of output arrives whole, in order, at the reader's pace; the
	// terminal and the session live on.
	term, err = owner.OpenTerminal(ctx, sess.ID, client.TerminalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer term.Close()
	flood := readTerminal(term, false)
	if _, err := term.Write([]byte("head -c 16000000 /dev/urandom; head -c 8000000 /dev/zero | tr '\\0' x; echo; echo flood-$((40+2))\n")); err != nil {
		t.Fatal(err)
	}
	flood.wait(t, "flood-42")
	flood.mu.Lock()
	got := flood.n
	flood.mu.Unlock()
	if got < 24_000_000 {
		t.Fatalf("the flood gave %d bytes, want at least 24000000", got)
	}
	resp, body = h.postJSON(base+"/exec", api.SessionExecRequest{Argv: []string{"true"}})
	if res := decodeOK[api.Result](t, resp, body); res.Status != sandbox.StatusOK {
		t.Fatalf("exec after the flood: %+v", res)
	}

	// The session's end closes its terminals.
	resp, _ = h.do(ctx, http.MethodDelete, base, "", nil)
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d", resp.StatusCode)
	}
	select {
	case <-flood.done:
	case <-time.After(time.Minute):
		t.Fatal("the terminal stayed open after its session ended")
	}
	if r := term.CloseReason(); !strings.Contains(r, "session ended") {
		t.Fatalf("close reason %q, want the session's end", r)
	}
}
