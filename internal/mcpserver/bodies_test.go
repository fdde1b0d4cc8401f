package mcpserver

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/sandboxapi"
)

// SECURITY L3: the MCP transport's bodies share a byte budget, reserved
// before the SDK reads a body and held until its call is answered: past it
// the answer is 429 with Retry-After, for a declared length at once and for
// a chunked body as it arrives. A client that sends headers only holds
// nothing and is dropped at the first-byte deadline.
func TestBodiesInFlight(t *testing.T) {
	t.Parallel()
	budget := sandboxapi.NewBudget(1<<20, "memory for request bodies (--max-body-in-flight)")
	hold := make(chan struct{})
	reading := make(chan int, 8)
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		reading <- len(b)
		<-hold // the call runs
		fmt.Fprintf(w, "%d\n", len(b))
	})
	o := HTTPOptions{MaxBodyBytes: 512 << 10, Pace: sandboxapi.Pace{FirstByte: 300 * time.Millisecond, Idle: time.Second, Total: 10 * time.Second}}
	srv := httptest.NewServer(limitBodies(next, budget, o))
	t.Cleanup(srv.Close)
	var release sync.Once
	t.Cleanup(func() { release.Do(func() { close(hold) }) }) // before srv.Close, even after a failure
	post := func(body io.Reader, length int64) (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, body)
		req.ContentLength = length
		return http.DefaultClient.Do(req)
	}
	// raw sends a request on its own connection and reads the answer while
	// it writes: a refusal may close the connection before the body is
	// written, which net/http's client reports instead of the answer.
	raw := func(head string, body []byte) int {
		conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		go func() {
			fmt.Fprint(conn, head)
			_, _ = conn.Write(body)
		}()
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Errorf("read the answer: %v", err)
			return 0
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "" {
			t.Error("429 without Retry-After")
		}
		return resp.StatusCode
	}
	body := bytes.Repeat([]byte("x"), 400<<10)
	type answer struct {
		resp *http.Response
		err  error
	}
	held := make(chan answer, 2)
	for range 2 {
		go func() {
			resp, err := post(bytes.NewReader(body), int64(len(body)))
			held <- answer{resp, err}
		}()
	}
	for range 2 {
		select {
		case <-reading:
		case <-time.After(10 * time.Second):
			t.Fatal("the first two bodies were not read")
		}
	}
	if got := budget.InUse(); got != 2*int64(len(body)) {
		t.Errorf("budget in use %d, want %d", got, 2*len(body))
	}
	// A declared length that does not fit: refused before the body is read
	// (with Expect: 100-continue, before it is even sent).
	if code := raw(fmt.Sprintf("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", len(body)), body); code != http.StatusTooManyRequests {
		t.Errorf("declared length over the budget: %d", code)
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(body))
	req.Header.Set("Expect", "100-continue")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("with Expect: 100-continue: %v", err)
	} else if resp.Body.Close(); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("with Expect: 100-continue: %d", resp.StatusCode)
	}
	// Chunked: refused once what arrived does not fit.
	var chunked bytes.Buffer
	for rest := body; len(rest) > 0; {
		c := rest[:min(len(rest), 32<<10)]
		rest = rest[len(c):]
		fmt.Fprintf(&chunked, "%x\r\n%s\r\n", len(c), c)
	}
	chunked.WriteString("0\r\n\r\n")
	if code := raw("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", chunked.Bytes()); code != http.StatusTooManyRequests {
		t.Errorf("chunked body over the budget: %d", code)
	}
	// Headers only: 408 at the first-byte deadline, nothing reserved.
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	t0 := time.Now()
	fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n")
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if r, err := http.ReadResponse(bufio.NewReader(conn), nil); err != nil || r.StatusCode != http.StatusRequestTimeout {
		t.Errorf("headers-only client: %v %v", r, err)
	} else if d := time.Since(t0); d > 3*time.Second {
		t.Errorf("headers-only client held on for %s", d)
	}
	release.Do(func() { close(hold) })
	for range 2 {
		a := <-held
		if a.err != nil || a.resp.StatusCode != http.StatusOK {
			t.Errorf("held call: %v %v", a.resp, a.err)
		} else {
			a.resp.Body.Close()
		}
	}
	if got, peak := budget.InUse(), budget.Peak(); got != 0 || peak > 1<<20 {
		t.Errorf("budget in use %d after every call, peak %d", got, peak)
	}
	resp, err = post(bytes.NewReader(body), int64(len(body)))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("after the burst: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
}

// The limit sits in front of the SDK in the real handler: a declared body
// over --max-body is answered with Aster's JSON error before the SDK sees it.
func TestHandlerLimitsBodies(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, &fakeExecutor{}, nil)
	srv := httptest.NewServer(s.Handler(HTTPOptions{MaxBodyBytes: 1 << 10}))
	t.Cleanup(srv.Close)
	req, _ := http.NewRequest(http.MethodPost, srv.URL+Path, strings.NewReader(strings.Repeat(" ", 4<<10)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), `"too_large"`) {
		t.Errorf("%d %s", resp.StatusCode, b)
	}
}
