package sandboxapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/sandbox"
)

// wantsStream reports whether the client asked for NDJSON events: a stream
// route, or Accept: application/x-ndjson on a plain one.
func wantsStream(r *http.Request) bool {
	if p := r.URL.Path; p == api.RouteExecuteStream || p == api.RouteTestStream {
		return true
	}
	for _, v := range r.Header.Values("Accept") {
		if strings.Contains(v, api.ContentTypeNDJSON) {
			return true
		}
	}
	return false
}

// streamer writes an NDJSON event stream. The response starts (200 and
// headers) when the run is admitted, so a refused run still gets its 429.
// Every write has its own deadline: a client that stops reading is dropped
// and its run cancelled, rather than holding the job's output pipe.
type streamer struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	cancel  context.CancelCauseFunc
	started bool
	failed  error
	carry   map[sandbox.Stream][]byte // an incomplete UTF-8 sequence held back
	buf     bytes.Buffer
	enc     *json.Encoder
}

func newStreamer(w http.ResponseWriter, timeout time.Duration, cancel context.CancelCauseFunc) *streamer {
	st := &streamer{w: w, rc: http.NewResponseController(w), timeout: timeout, cancel: cancel, carry: map[sandbox.Stream][]byte{}}
	st.enc = json.NewEncoder(&st.buf)
	st.enc.SetEscapeHTML(false)
	return st
}

// start sends the headers.
func (st *streamer) start() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.startLocked()
}

func (st *streamer) startLocked() {
	if st.started {
		return
	}
	st.started = true
	h := st.w.Header()
	h.Set("Content-Type", api.ContentTypeNDJSON)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	st.deadline()
	st.w.WriteHeader(http.StatusOK)
	if err := st.rc.Flush(); err != nil {
		st.fail(err)
	}
}

// isStarted reports whether the response has begun.
func (st *streamer) isStarted() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.started
}

// output sends a chunk of the job's output. A UTF-8 sequence cut by the end
// of the chunk is held back and joined with the next chunk, so text stays
// text; bytes that are not UTF-8 at all travel as base64.
func (st *streamer) output(stream sandbox.Stream, data []byte) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.failed != nil {
		return
	}
	st.startLocked()
	if held := st.carry[stream]; len(held) > 0 {
		data = append(held, data...)
	}
	cut := incompleteSuffix(data)
	st.carry[stream] = append([]byte(nil), data[len(data)-cut:]...)
	data = data[:len(data)-cut]
	if len(data) == 0 {
		return
	}
	text, enc := api.EncodeText(data)
	st.writeLocked(api.OutputEvent{Type: string(stream), Data: text, Encoding: enc})
}

// finish flushes held-back bytes and writes the closing events.
func (st *streamer) finish(events ...any) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.startLocked()
	for _, s := range []sandbox.Stream{sandbox.Stdout, sandbox.Stderr} {
		if held := st.carry[s]; len(held) > 0 && st.failed == nil {
			text, enc := api.EncodeText(held)
			st.writeLocked(api.OutputEvent{Type: string(s), Data: text, Encoding: enc})
		}
		delete(st.carry, s)
	}
	for _, ev := range events {
		if st.failed != nil {
			return
		}
		st.writeLocked(ev)
	}
}

func (st *streamer) writeLocked(v any) {
	st.buf.Reset()
	if err := st.enc.Encode(v); err != nil {
		st.fail(err)
		return
	}
	st.deadline()
	if _, err := st.w.Write(st.buf.Bytes()); err != nil {
		st.fail(err)
		return
	}
	if err := st.rc.Flush(); err != nil {
		st.fail(err)
	}
}

func (st *streamer) deadline() {
	if st.timeout > 0 {
		_ = st.rc.SetWriteDeadline(time.Now().Add(st.timeout))
	}
}

func (st *streamer) fail(err error) {
	if st.failed == nil {
		st.failed = err
		st.cancel(fmt.Errorf("the client stopped reading the event stream: %w", err))
	}
}

// incompleteSuffix returns how many bytes at the end of b start a UTF-8
// sequence that the next bytes could complete.
func incompleteSuffix(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(b[i]) {
			if b[i] >= 0xC0 && !utf8.FullRune(b[i:]) {
				return len(b) - i
			}
			return 0
		}
	}
	return 0
}

// resultEvent wraps a result body as the last event of a stream.
func resultEvent(body any) any {
	switch v := body.(type) {
	case sandbox.WireResult:
		return struct {
			Type string `json:"type"`
			sandbox.WireResult
		}{api.EventResult, v}
	case api.TestResponse:
		return struct {
			Type string `json:"type"`
			api.TestResponse
		}{api.EventResult, v}
	}
	return body
}
