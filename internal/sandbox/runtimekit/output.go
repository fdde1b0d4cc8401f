package runtimekit

import (
	"fmt"
	"github.com/asterhq/aster/internal/sandbox"
	"sync"
	"unicode/utf8"
)

// Capture keeps a bounded view of one output stream: the first half of its
// budget from the start of the stream and the second half from the end, so a
// long log keeps both how it began and how it ended. Memory use is bounded by
// the budget whatever the job writes.
type Capture struct {
	limit   int64
	head    []byte
	tail    []byte // ring buffer once full
	tailPos int    // next write position in tail when full
	tailCap int
	full    bool // tail ring has wrapped
	total   int64
}

// NewCapture returns a Capture that keeps at most limit bytes (plus a marker).
func NewCapture(limit int64) *Capture {
	if limit < 2 {
		limit = 2
	}
	headCap := limit / 2
	return &Capture{limit: limit, head: make([]byte, 0, min(headCap, 64<<10)), tailCap: int(limit - headCap)}
}

// Total returns the number of bytes written so far.
func (c *Capture) Total() int64 { return c.total }

// Write records p. It never fails.
func (c *Capture) Write(p []byte) (int, error) {
	n := len(p)
	c.total += int64(n)
	headCap := int(c.limit / 2)
	if room := headCap - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 {
		return n, nil
	}
	if len(p) >= c.tailCap {
		// The write alone fills the tail: keep its last tailCap bytes.
		if cap(c.tail) < c.tailCap {
			c.tail = make([]byte, c.tailCap)
		}
		c.tail = c.tail[:c.tailCap]
		copy(c.tail, p[len(p)-c.tailCap:])
		c.tailPos = 0
		c.full = true
		return n, nil
	}
	if !c.full {
		if len(c.tail)+len(p) <= c.tailCap {
			c.tail = append(c.tail, p...)
			if len(c.tail) == c.tailCap {
				c.full = true
				c.tailPos = 0
			}
			return n, nil
		}
		// Grow to full size, then fall through to ring writes.
		k := c.tailCap - len(c.tail)
		c.tail = append(c.tail, p[:k]...)
		p = p[k:]
		c.full = true
		c.tailPos = 0
	}
	for len(p) > 0 {
		k := copy(c.tail[c.tailPos:], p)
		p = p[k:]
		c.tailPos = (c.tailPos + k) % c.tailCap
	}
	return n, nil
}

// tailBytes returns the tail in stream order.
func (c *Capture) tailBytes() []byte {
	if !c.full || c.tailPos == 0 {
		return c.tail
	}
	out := make([]byte, 0, len(c.tail))
	out = append(out, c.tail[c.tailPos:]...)
	return append(out, c.tail[:c.tailPos]...)
}

// Output returns what was kept. When bytes were dropped, a marker line between
// the head and the tail says how many; the cut points are moved to UTF-8
// boundaries so that valid UTF-8 output stays valid.
func (c *Capture) Output() sandbox.Output {
	tail := c.tailBytes()
	kept := int64(len(c.head) + len(tail))
	if kept == c.total {
		data := make([]byte, 0, kept)
		data = append(data, c.head...)
		return sandbox.Output{Data: append(data, tail...), TotalBytes: c.total}
	}
	head := c.head
	// Trim a partial rune at the end of head and the start of tail.
	if i := lastRuneStart(head); i >= 0 {
		head = head[:i]
	}
	start := 0
	for start < len(tail) && start < utf8.UTFMax && !utf8.RuneStart(tail[start]) {
		start++
	}
	tail = tail[start:]
	dropped := c.total - int64(len(head)) - int64(len(tail))
	marker := fmt.Sprintf("\n[... aster: %d bytes dropped ...]\n", dropped)
	data := make([]byte, 0, len(head)+len(marker)+len(tail))
	data = append(data, head...)
	data = append(data, marker...)
	data = append(data, tail...)
	return sandbox.Output{Data: data, Truncated: true, TotalBytes: c.total, DroppedBytes: dropped}
}

// lastRuneStart returns the index at which to cut b so that it does not end in
// the middle of a multi-byte rune, or -1 when b already ends on a boundary.
func lastRuneStart(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if r, size := utf8.DecodeRune(b[i:]); r == utf8.RuneError && size <= 1 && len(b)-i < utf8.UTFMax && b[i] >= 0xc0 {
				return i // an incomplete multi-byte sequence
			}
			return -1
		}
	}
	return -1
}

// LockedCapture is a Capture written by one goroutine (the copier of a
// sandbox's log) and read by another (an error message).
type LockedCapture struct {
	mu sync.Mutex
	c  *Capture
}

// NewLockedCapture returns a LockedCapture that keeps at most limit bytes.
func NewLockedCapture(limit int64) *LockedCapture {
	return &LockedCapture{c: NewCapture(limit)}
}

// Write records p. It never fails.
func (l *LockedCapture) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.c.Write(p)
}

// String returns what was kept.
func (l *LockedCapture) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.c.Output().Data)
}
