package sandboxapi

import (
	"archive/tar"
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/sandbox"
)

// manyFiles is an archive of n regular files of size bytes each.
func manyFiles(t testing.TB, n, size int) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	data := bytes.Repeat([]byte("a"), size)
	for i := range n {
		if err := tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("f%05d", i), Mode: 0o644, Size: int64(size), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// spoolWatch records the largest size any spool file reached, measured on
// the file itself after every write.
type spoolWatch struct {
	mu  sync.Mutex
	max int64
	n   int
}

func (w *spoolWatch) hook(f *os.File) {
	fi, err := f.Stat()
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.max = max(w.max, fi.Size())
	w.n++
}

func (w *spoolWatch) peak() (int64, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.max, w.n
}

// SECURITY L1: an upload is spooled up to the request's own workdir_size,
// not the server's ceiling: an archive larger than that is refused 413 with
// the spool file never past it, and nothing started.
func TestSpoolBoundedByRequestSize(t *testing.T) {
	t.Parallel()
	var watch spoolWatch
	h := newHarness(t, harnessOpts{server: func(o *Options) {
		o.MaxBodyBytes = 16 << 20
		o.spoolHook = watch.hook
	}})
	const limit = 1 << 20
	spec := `{"argv":["true"],"limits":{"workdir_size":"1m"}}`
	for name, archive := range map[string][]byte{
		// Many small files: the archive's headers alone pass the limit
		// before the files' bytes do.
		"3000 files of 1KiB": manyFiles(t, 3000, 1<<10),
		// A few files whose bytes pass it.
		"6 files of 300KiB": manyFiles(t, 6, 300<<10),
	} {
		resp, body := rawPost(t, strings.TrimPrefix(h.base, "http://"), spec, archive)
		d := errorOf(t, resp, body, http.StatusRequestEntityTooLarge, "too_large")
		if !strings.Contains(d.Message, "1MiB") || !strings.Contains(d.Message, "workdir_size") {
			t.Errorf("%s: message %q does not name the request's limit", name, d.Message)
		}
		peak, writes := watch.peak()
		if writes == 0 || peak > limit {
			t.Errorf("%s (%d bytes): the spool file reached %d bytes in %d writes, want at most %d", name, len(archive), peak, writes, limit)
		}
		t.Logf("%s: %d-byte archive refused; spool peak %d bytes", name, len(archive), peak)
	}
	if got := h.srv.spool.InUse(); got != 0 {
		t.Errorf("%d spool bytes still reserved", got)
	}
	// The same request with a snapshot that fits runs.
	small := manyFiles(t, 3, 1<<10)
	resp, body := h.do(t.Context(), http.MethodPost, api.RouteExecute, api.ContentTypeTar, bytes.NewReader(small), api.HeaderSpec,
		`{"argv":["sh","-c","cat f00002 | wc -c"],"limits":{"workdir_size":"1m"}}`)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"stdout":"1024\n"`) {
		t.Errorf("fitting snapshot: %d %s", resp.StatusCode, body)
	}
	if got := h.metric(`aster_sandbox_runs_total{status="ok"}`); got != 1 {
		t.Errorf("runs ok %v, want only the fitting one", got)
	}
}

// rawPost sends a tar upload on its own connection and reads the answer
// while it writes: a server that refuses early and closes may reset the
// connection before the body is written, which a client that waits for its
// writes (net/http's) reports instead of the answer.
func rawPost(t *testing.T, addr, spec string, body []byte) (*http.Response, []byte) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	go func() {
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: %s\r\n%s: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n",
			api.RouteExecute, api.ContentTypeTar, api.HeaderSpec, spec, len(body))
		_, _ = conn.Write(body) // fails once the server has answered and closed
	}()
	_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("read the answer: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read the answer's body: %v", err)
	}
	req, _ := http.NewRequest(http.MethodPost, api.RouteExecute, nil)
	req.Header.Set("Content-Type", api.ContentTypeTar)
	req.Header.Set(api.HeaderSpec, spec)
	if err := apiSpec(t).CheckExchange(req, body, resp, b); err != nil {
		t.Errorf("openapi: %v", err)
	}
	return resp, b
}

// rawUpload is a client on its own connection that sends headers and the
// first part of a body, then the rest when told.
type rawUpload struct {
	conn   net.Conn
	rest   []byte
	status chan *http.Response
}

func startUpload(t *testing.T, addr, local, spec string, body []byte, first int) *rawUpload {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second}
	if local != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(local)}
	}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	u := &rawUpload{conn: conn, rest: body[first:], status: make(chan *http.Response, 1)}
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: %s\r\n%s: %s\r\nContent-Length: %d\r\n\r\n",
		api.RouteExecute, api.ContentTypeTar, api.HeaderSpec, spec, len(body))
	if first > 0 {
		if _, err := conn.Write(body[:first]); err != nil {
			t.Fatal(err)
		}
	}
	_ = conn.SetReadDeadline(time.Now().Add(2 * time.Minute))
	u.awaitAnswer(t)
	return u
}

// awaitAnswer reads the answer to u's POST to /v1/execute in the background,
// checks it against the description and hands it to u.status (nil when none
// came).
func (u *rawUpload) awaitAnswer(t *testing.T) {
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(u.conn), nil)
		if err != nil {
			u.status <- nil
			return
		}
		checkRaw(t, http.MethodPost, api.RouteExecute, resp)
		u.status <- resp
	}()
}

// SECURITY L1: snapshots being spooled share the server's spool space.
// Six concurrent uploads that each reserve 2 MiB of a 5 MiB space: two are
// spooled, the other four are answered 429 with Retry-After at once, the
// space is never over, and the service is fine afterwards.
func TestSpoolTotalCap(t *testing.T) {
	t.Parallel()
	const total = 5 << 20
	var watch spoolWatch
	h := newHarness(t, harnessOpts{server: func(o *Options) {
		o.MaxSpoolBytes = total
		o.MinBodyRate = -1 // the held uploads wait on the test, not on the network
		o.spoolHook = watch.hook
	}})
	addr := strings.TrimPrefix(h.base, "http://")
	spec := `{"argv":["true"],"limits":{"workdir_size":"2m"}}`
	archive := manyFiles(t, 4, 64<<10)
	var ups []*rawUpload
	for range 6 {
		ups = append(ups, startUpload(t, addr, "", spec, archive, 1024))
	}
	refused, held := 0, map[int]bool{}
	deadline := time.After(30 * time.Second)
	for refused < 4 {
		select {
		case <-deadline:
			t.Fatalf("%d of 6 uploads refused after 30s, want 4", refused)
		default:
		}
		for i, u := range ups {
			select {
			case resp := <-u.status:
				if resp == nil || resp.StatusCode != http.StatusTooManyRequests {
					t.Fatalf("upload %d answered %v while the others held the space", i, resp)
				}
				if resp.Header.Get("Retry-After") == "" {
					t.Errorf("429 without Retry-After")
				}
				refused++
				held[i] = false
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	if peak := h.srv.spool.Peak(); peak > total {
		t.Errorf("spool reservations peaked at %d bytes, over the %d cap", peak, total)
	}
	for i, u := range ups {
		if _, done := held[i]; done {
			continue
		}
		if _, err := u.conn.Write(u.rest); err != nil {
			t.Fatal(err)
		}
		if resp := <-u.status; resp == nil || resp.StatusCode != http.StatusOK {
			t.Errorf("held upload %d: %v", i, resp)
		}
	}
	if got := h.srv.spool.InUse(); got != 0 {
		t.Errorf("%d spool bytes still reserved after every upload ended", got)
	}
	if peak, _ := watch.peak(); peak > 2<<20 {
		t.Errorf("a spool file reached %d bytes", peak)
	}
	resp, body := h.do(t.Context(), http.MethodPost, api.RouteExecute, api.ContentTypeTar, bytes.NewReader(archive), api.HeaderSpec, spec)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("after the burst: %d %s", resp.StatusCode, body)
	}
}

// SECURITY L3: the JSON bodies being read and served share a byte budget;
// past it the answer is 429 with Retry-After, before the body is read.
func TestBodyBytesInFlight(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{server: func(o *Options) {
		o.MaxBodyBytes = 512 << 10
		o.MaxBodyInFlightBytes = 1 << 20
		o.MinBodyRate = -1
	}})
	addr := strings.TrimPrefix(h.base, "http://")
	filler := strings.Repeat("x", 400<<10)
	b, _ := json.Marshal(api.ExecuteRequest{Argv: []string{"true"}, JobRequest: api.JobRequest{Env: map[string]string{}, Files: map[string]api.File{"f": api.TextFile(filler)}}})
	send := func() *rawUpload {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		u := &rawUpload{conn: conn, rest: b[1:], status: make(chan *http.Response, 1)}
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s", api.RouteExecute, api.ContentTypeJSON, len(b), b[:1])
		u.awaitAnswer(t)
		return u
	}
	a, c := send(), send()
	waitFor(t, 10*time.Second, "two bodies to be admitted", func() bool { return h.srv.bodies.InUse() == 2*int64(len(b)) })
	third := send()
	select {
	case resp := <-third.status:
		if resp == nil || resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
			t.Errorf("third body: %v", resp)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the third body was not refused")
	}
	for _, u := range []*rawUpload{a, c} {
		if _, err := u.conn.Write(u.rest); err != nil {
			t.Fatal(err)
		}
		if resp := <-u.status; resp == nil || resp.StatusCode != http.StatusOK {
			t.Errorf("admitted body: %v", resp)
		}
	}
	if got, peak := h.srv.bodies.InUse(), h.srv.bodies.Peak(); got != 0 || peak > 1<<20 {
		t.Errorf("body budget in use %d, peak %d", got, peak)
	}
}

// SECURITY L4: slow clients cannot hold upload slots. With five slots, four
// clients that send headers only and six from one address that send a byte
// a second do not stop a normal client from uploading at once; the
// headers-only ones hold nothing and are dropped at the first-byte deadline,
// the slow ones are held to three slots by the per-client limit and
// dropped under the minimum rate.
func TestSlowClientsCannotHoldUploads(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{maxConcurrent: 1, queue: 4, server: func(o *Options) {
		o.FirstByteTimeout = 500 * time.Millisecond
		o.BodyIdleTimeout = time.Second
		// BodyReadTimeout stays at its 60s default: that alone held the
		// slots for a minute.
	}})
	addr := strings.TrimPrefix(h.base, "http://")
	spec := `{"argv":["true"]}`
	archive := manyFiles(t, 2, 1<<10)
	type slow struct {
		what string
		conn net.Conn
		done chan time.Duration
		code chan int
	}
	var slows []*slow
	t0 := time.Now()
	dial := func(what, local string) *slow {
		conn, err := (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}).Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		s := &slow{what: what, conn: conn, done: make(chan time.Duration, 1), code: make(chan int, 1)}
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: %s\r\n%s: %s\r\nContent-Length: %d\r\n\r\n",
			api.RouteExecute, api.ContentTypeTar, api.HeaderSpec, spec, len(archive))
		go func() {
			_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			s.done <- time.Since(t0)
			if err != nil {
				s.code <- 0
				return
			}
			checkRaw(t, http.MethodPost, api.RouteExecute, resp)
			s.code <- resp.StatusCode
		}()
		slows = append(slows, s)
		return s
	}
	for i := range 4 {
		dial("headers-only", fmt.Sprintf("127.0.0.%d", 2+i))
	}
	stop := make(chan struct{})
	var dribble sync.WaitGroup
	for range 6 {
		s := dial("byte-a-second", "127.0.0.9")
		dribble.Add(1)
		go func() {
			defer dribble.Done()
			for i := 0; i < 30; i++ {
				if _, err := s.conn.Write(archive[i : i+1]); err != nil {
					return
				}
				select {
				case <-stop:
					return
				case <-time.After(time.Second):
				}
			}
		}()
	}
	t.Cleanup(func() { close(stop); dribble.Wait() })
	// Let the slow ones take whatever they can.
	time.Sleep(300 * time.Millisecond)

	start := time.Now()
	var resp *http.Response
	var body []byte
	for time.Since(start) < 10*time.Second {
		resp, body = h.do(t.Context(), http.MethodPost, api.RouteExecute, api.ContentTypeTar, bytes.NewReader(archive), api.HeaderSpec, spec)
		if resp.StatusCode != http.StatusTooManyRequests {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	took := time.Since(start)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("normal upload during the slow clients: %d %s", resp.StatusCode, body)
	}
	t.Logf("normal upload answered %s after it started", took.Round(time.Millisecond))
	// Held behind the slow clients, the upload would wait for their 30 s of
	// dribbling or the 60 s body read timeout; its own run of `true` takes
	// well under a second on a quiet host and several on a loaded one.
	if took > 15*time.Second {
		t.Errorf("the normal upload took %s", took)
	}
	codes := map[string]map[int]int{}
	for _, s := range slows {
		var d time.Duration
		select {
		case d = <-s.done:
		case <-time.After(20 * time.Second):
			t.Fatalf("a %s client is still connected after 20s", s.what)
		}
		code := <-s.code
		if codes[s.what] == nil {
			codes[s.what] = map[int]int{}
		}
		codes[s.what][code]++
		// Cut by the first-byte timeout (0.5 s) or the minimum rate (1 s
		// idle); kept, they would hold on for 30 s.
		if limit := 12 * time.Second; d > limit {
			t.Errorf("a %s client held on for %s", s.what, d)
		}
	}
	t.Logf("slow clients' answers: %v", codes)
	if n := codes["headers-only"][http.StatusRequestTimeout]; n != 4 {
		t.Errorf("headers-only clients answered %v, want four 408s", codes["headers-only"])
	}
	if n := codes["byte-a-second"][http.StatusTooManyRequests]; n != 3 {
		t.Errorf("byte-a-second clients answered %v, want three refused by the per-client limit", codes["byte-a-second"])
	}
	if n := codes["byte-a-second"][http.StatusRequestTimeout]; n != 3 {
		t.Errorf("byte-a-second clients answered %v, want three dropped under the minimum rate", codes["byte-a-second"])
	}
	waitFor(t, 10*time.Second, "the upload slots to be free", func() bool { return len(h.srv.uploads) == 0 })
}

// SECURITY L5: a job header too large in total is refused with 400, naming
// the limit, before any sandbox starts.
func TestJobHeaderTooLarge(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	env := map[string]string{}
	for i := range 1000 {
		env[fmt.Sprintf("V%04d", i)] = strings.Repeat("e", 2<<10)
	}
	argv := []string{"true"}
	for range 3 {
		argv = append(argv, strings.Repeat("a", 100<<10))
	}
	for name, req := range map[string]api.ExecuteRequest{
		"1000 env vars of 2KiB": {Argv: []string{"env"}, JobRequest: api.JobRequest{Env: env}},
		"300KiB of argv":        {Argv: argv},
		"one 200KiB variable":   {Argv: []string{"env"}, JobRequest: api.JobRequest{Env: map[string]string{"BIG": strings.Repeat("b", 200<<10)}}},
	} {
		resp, body := h.postJSON(api.RouteExecute, req)
		d := errorOf(t, resp, body, http.StatusBadRequest, "invalid_spec")
		if !strings.Contains(d.Message, "KiB") {
			t.Errorf("%s: %q names no limit in human units", name, d.Message)
		}
		t.Logf("%s: %s", name, d.Message)
	}
	if n := containers(t, h.label); n != 0 {
		t.Errorf("%d sandboxes were created", n)
	}
	for _, st := range sandbox.Statuses {
		if got := h.metric(fmt.Sprintf(`aster_sandbox_runs_total{status=%q}`, st)); got != 0 {
			t.Errorf("%v runs ended %s", got, st)
		}
	}
	// Just under the limits, the job runs.
	ok := map[string]string{}
	for i := range 200 {
		ok[fmt.Sprintf("V%04d", i)] = strings.Repeat("e", 2<<10)
	}
	if res := h.execute(api.ExecuteRequest{Argv: []string{"sh", "-c", "env | grep -c ^V"}, JobRequest: api.JobRequest{Env: ok}}); res.Stdout != "200\n" {
		t.Errorf("200 variables of 2KiB: %+v", res)
	}
}

// SECURITY L1, the sparse bomb: a 10 KiB archive (GNU tar
// --sparse, old GNU and PAX formats; testdata made with `truncate -s 1G`)
// declaring a 1 GiB file, sent with workdir_size 1g, is refused before the
// spool holds more than its first headers.
func TestSparseBombNotSpooled(t *testing.T) {
	t.Parallel()
	var watch spoolWatch
	h := newHarness(t, harnessOpts{server: func(o *Options) { o.spoolHook = watch.hook }})
	for _, name := range []string{"sparse-1g-gnu.tar", "sparse-1g-pax.tar"} {
		archive, err := os.ReadFile("testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		resp, body := rawPost(t, strings.TrimPrefix(h.base, "http://"), `{"argv":["true"],"limits":{"workdir_size":"1g"}}`, archive)
		if resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("%s: %d %s", name, resp.StatusCode, body)
		}
		peak, _ := watch.peak()
		t.Logf("%s (%d bytes): %d %s; spool peak %d bytes", name, len(archive), resp.StatusCode, bytes.TrimSpace(body), peak)
		if peak > 64<<10 {
			t.Errorf("%s: the spool file reached %d bytes", name, peak)
		}
	}
	if n := containers(t, h.label); n != 0 {
		t.Errorf("%d sandboxes were created", n)
	}
}
