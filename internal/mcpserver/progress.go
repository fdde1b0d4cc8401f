package mcpserver

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/units"
)

// progress sends notifications/progress for one tool call while its sandbox
// runs: when it is queued, when it gets a slot, then every interval with the
// elapsed time, the output so far and the last line written. A call without a
// progress token gets none.
type progress struct {
	ctx      context.Context
	session  *mcp.ServerSession
	token    any
	interval time.Duration
	start    time.Time

	mu       sync.Mutex
	phase    string
	status   string // when set, replaces the output summary (validate)
	admitted time.Time
	bytes    map[sandbox.Stream]int64
	lastLine []byte
	partial  []byte // the unfinished line at the end of the output so far
	last     float64
	stop     chan struct{}
	done     chan struct{}
}

// lastLineMax caps the output line quoted in a progress message.
const lastLineMax = 160

func newProgress(ctx context.Context, req *mcp.CallToolRequest, interval time.Duration) *progress {
	p := &progress{ctx: ctx, interval: interval, start: time.Now(), phase: "queued for a sandbox slot",
		bytes: map[sandbox.Stream]int64{}, stop: make(chan struct{}), done: make(chan struct{})}
	if req != nil && req.Params != nil && req.Session != nil {
		p.session = req.Session
		p.token = req.Params.GetProgressToken()
	}
	return p
}

func (p *progress) enabled() bool { return p.token != nil && p.session != nil }

// begin sends the first notification and starts the ticker.
func (p *progress) begin() {
	if !p.enabled() {
		close(p.done)
		return
	}
	p.send(p.message())
	go func() {
		defer close(p.done)
		t := time.NewTicker(p.interval)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-p.ctx.Done():
				return
			case <-t.C:
				p.send(p.message())
			}
		}
	}()
}

// admittedNow records that the run got its sandbox slot.
func (p *progress) admittedNow() {
	p.mu.Lock()
	p.phase = "running"
	p.admitted = time.Now()
	p.mu.Unlock()
	if p.enabled() {
		p.send(p.message())
	}
}

// output counts a chunk of output and remembers the last complete line. It
// runs on the sandbox's output path, so it only does O(len(data)) work with
// no allocation beyond the bounded line buffers.
func (p *progress) output(s sandbox.Stream, data []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.bytes[s] += int64(len(data))
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		line := data[:i]
		whole := false
		if j := bytes.LastIndexByte(line, '\n'); j >= 0 {
			line, whole = line[j+1:], true
		}
		line = tailBytes(line, lastLineMax)
		p.lastLine = p.lastLine[:0]
		if !whole && len(line) < lastLineMax {
			p.lastLine = append(p.lastLine, tailBytes(p.partial, lastLineMax-len(line))...)
		}
		p.lastLine = append(p.lastLine, line...)
		p.partial = append(p.partial[:0], tailBytes(data[i+1:], lastLineMax)...)
		return
	}
	p.partial = append(p.partial, data...)
	if len(p.partial) > lastLineMax {
		p.partial = append(p.partial[:0], tailBytes(p.partial, lastLineMax)...)
	}
}

func tailBytes(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// finish stops the ticker and sends the final notification.
func (p *progress) finish(status sandbox.Status) {
	p.finishWith(fmt.Sprintf("finished: %s", status))
}

func (p *progress) finishWith(msg string) {
	close(p.stop)
	<-p.done
	if p.enabled() && p.ctx.Err() == nil {
		p.send(fmt.Sprintf("%s after %s", msg, round(time.Since(p.start))))
	}
}

// note replaces the message with a status line and sends it at once.
func (p *progress) note(status string) {
	p.mu.Lock()
	p.status = status
	p.mu.Unlock()
	if p.enabled() {
		p.send(p.message())
	}
}

func (p *progress) message() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.status != "" {
		return fmt.Sprintf("%s (%s)", p.status, round(time.Since(p.start)))
	}
	if p.admitted.IsZero() {
		return fmt.Sprintf("%s (%s)", p.phase, round(time.Since(p.start)))
	}
	msg := fmt.Sprintf("%s %s: stdout %s, stderr %s", p.phase, round(time.Since(p.admitted)),
		units.FormatBytes(p.bytes[sandbox.Stdout]), units.FormatBytes(p.bytes[sandbox.Stderr]))
	if line := printable(p.lastLine); line != "" {
		msg += " | last line: " + line
	}
	return msg
}

// printable makes an untrusted output line safe for a one-line message.
func printable(b []byte) string {
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	return strings.TrimSpace(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return ' '
		}
		return r
	}, s))
}

// send emits one notification. Progress must grow with every notification,
// so it is the elapsed milliseconds, nudged up when two land in the same one.
func (p *progress) send(msg string) {
	p.mu.Lock()
	v := float64(time.Since(p.start).Milliseconds())
	if v <= p.last {
		v = p.last + 1
	}
	p.last = v
	p.mu.Unlock()
	// A failed notification (client gone) must not fail the run.
	_ = p.session.NotifyProgress(p.ctx, &mcp.ProgressNotificationParams{ProgressToken: p.token, Progress: v, Message: msg})
}
