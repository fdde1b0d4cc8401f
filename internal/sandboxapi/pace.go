package sandboxapi

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/units"
)

// Pace bounds how slowly a client may send a request body, so that a slow
// client (headers only, then nothing; or a byte a second) cannot hold what
// a body is admitted to: an upload slot, spool space, body bytes. Zero
// fields are not enforced.
type Pace struct {
	// FirstByte is how long after its headers a body's first byte may take.
	// Nothing is reserved for a request before that byte arrives.
	FirstByte time.Duration
	// Idle bounds every later wait for data.
	Idle time.Duration
	// MinRate is the slowest average a body may arrive at, in bytes per
	// second, counted after a grace of Idle from the first byte.
	MinRate int64
	// Total bounds reading the whole body.
	Total time.Duration
}

// DefaultPace is the pace of `aster sandbox serve` and `aster mcp --http`
// without flags.
func DefaultPace() Pace {
	return Pace{FirstByte: config.DefaultFirstByteTimeout, Idle: config.DefaultBodyIdleTimeout,
		MinRate: config.DefaultMinBodyRate, Total: config.DefaultBodyReadTimeout}
}

// PacedBody is a request body under a Pace. It replaces r.Body; Done ends
// the pacing (the connection's read deadline is cleared, so a long run that
// follows the body is not cut off by it).
type PacedBody struct {
	r        io.Reader
	c        io.Closer
	rc       *http.ResponseController
	pace     Pace
	start    time.Time
	deadline time.Time

	mu   sync.Mutex
	n    int64
	done bool
}

// PaceBody waits up to pace.FirstByte for the first byte of r's body and
// puts the paced body in its place. A request without a body is left as it
// is (nil, nil). A body whose first byte does not come in time is an
// ErrRequestTimeout (408).
func PaceBody(w http.ResponseWriter, r *http.Request, pace Pace) (*PacedBody, error) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return nil, nil
	}
	now := time.Now()
	p := &PacedBody{c: r.Body, rc: http.NewResponseController(w), pace: pace, start: now}
	if pace.Total > 0 {
		p.deadline = now.Add(pace.Total)
	}
	// A small buffer: Peek needs one, and larger reads go past it.
	br := bufio.NewReaderSize(r.Body, 16)
	p.r = br
	if pace.FirstByte > 0 {
		p.setDeadline(now.Add(pace.FirstByte))
	}
	if _, err := br.Peek(1); err != nil && !errors.Is(err, io.EOF) {
		p.Done()
		if isTimeout(err) {
			return nil, fmt.Errorf("%w: the request body did not start within %s", api.ErrRequestTimeout, pace.FirstByte)
		}
		return nil, sandbox.Invalidf("reading the request body: %v", err)
	}
	p.start = time.Now()
	r.Body = p
	return p, nil
}

// Read reads with a deadline of Idle (within Total) for this read, and
// fails a body that has fallen under MinRate.
func (p *PacedBody) Read(b []byte) (int, error) {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if !done {
		d := p.deadline
		if p.pace.Idle > 0 {
			if idle := time.Now().Add(p.pace.Idle); d.IsZero() || idle.Before(d) {
				d = idle
			}
		}
		p.setDeadline(d)
	}
	n, err := p.r.Read(b)
	p.mu.Lock()
	p.n += int64(n)
	total := p.n
	p.mu.Unlock()
	if err != nil {
		if isTimeout(err) {
			return n, fmt.Errorf("%w: the request body was not received in time (no data for %s, or over %s in all)",
				api.ErrRequestTimeout, p.pace.Idle, p.pace.Total)
		}
		return n, err
	}
	if p.pace.MinRate > 0 && !done {
		if late := time.Since(p.start) - p.pace.Idle; late > 0 && float64(total) < float64(p.pace.MinRate)*late.Seconds() {
			return n, fmt.Errorf("%w: the request body arrives at %s/s, under this server's minimum of %s/s (--min-body-rate)",
				api.ErrRequestTimeout, units.FormatBytes(int64(float64(total)/time.Since(p.start).Seconds())), units.FormatBytes(p.pace.MinRate))
		}
	}
	return n, nil
}

// Close closes the underlying body.
func (p *PacedBody) Close() error { return p.c.Close() }

// Received is the bytes read so far.
func (p *PacedBody) Received() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

// Done ends the pacing and clears the read deadline. Safe on nil.
func (p *PacedBody) Done() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.done = true
	p.mu.Unlock()
	_ = p.rc.SetReadDeadline(time.Time{})
}

func (p *PacedBody) setDeadline(t time.Time) {
	if !t.IsZero() {
		_ = p.rc.SetReadDeadline(t)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// ReserveBody reserves r's body in budget: its Content-Length at once, or,
// when the length is unknown (chunked), each read as it arrives, the read
// failing with the budget's error (429, or 413) when it does not fit. The
// caller releases the reservation when the body's memory is no longer held.
func ReserveBody(r *http.Request, budget *Budget) (*Reservation, error) {
	if budget == nil || r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return nil, nil
	}
	if r.ContentLength > 0 {
		return budget.Reserve(r.ContentLength)
	}
	res := &Reservation{b: budget}
	r.Body = &reservingBody{ReadCloser: r.Body, res: res}
	return res, nil
}

// reservingBody grows its reservation by what each read returns.
type reservingBody struct {
	io.ReadCloser
	res *Reservation
}

func (b *reservingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if gerr := b.res.Grow(int64(n)); gerr != nil {
		return 0, gerr
	}
	return n, err
}

// clientSlots bounds the uploads in progress per client (remote IP), so
// one client cannot take every upload slot.
type clientSlots struct {
	max int
	mu  sync.Mutex
	n   map[string]int
}

func newClientSlots(max int) *clientSlots { return &clientSlots{max: max, n: map[string]int{}} }

// take holds a slot for r's client, or fails with ErrBusy (429).
func (c *clientSlots) take(r *http.Request) (release func(), err error) {
	if c.max <= 0 {
		return func() {}, nil
	}
	ip := r.RemoteAddr
	if host, _, err := net.SplitHostPort(ip); err == nil {
		ip = host
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[ip] >= c.max {
		return nil, fmt.Errorf("%w: %d uploads from %s in progress, this server's limit per client (--max-uploads-per-client); try again later",
			sandbox.ErrBusy, c.n[ip], ip)
	}
	c.n[ip]++
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.n[ip]--; c.n[ip] <= 0 {
				delete(c.n, ip)
			}
		})
	}, nil
}
