package sandboxapi

import (
	"fmt"
	"sync"

	"github.com/asterhq/aster/internal/bytebudget"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/testphase"
	"github.com/asterhq/aster/internal/units"
)

// Budget is a byte semaphore shared by the requests of one server: request
// bodies held in memory, or what requests put on disk (snapshots, and the
// dependency archives of /v1/test). A request reserves what it may use
// before it reads or writes a byte, so the sum over every request in flight
// never passes the total, whatever the clients send.
type Budget struct {
	*bytebudget.Budget
	what string // "spool space (--max-spool)", for messages
	// onRefuse, when set, counts a 429 (the server's metrics).
	onRefuse func()
}

// NewBudget returns a budget of total bytes; what names it in errors (with
// its flag). A total of zero or less is unlimited.
func NewBudget(total int64, what string) *Budget {
	return &Budget{Budget: bytebudget.New(total), what: what}
}

// Reserve takes n bytes without waiting. The errors are classed: a request
// larger than the whole budget can never fit (sandbox.ErrTooLarge, 413);
// one that does not fit now may later (sandbox.ErrBusy, 429).
func (b *Budget) Reserve(n int64) (*Reservation, error) {
	res := &Reservation{b: b}
	if err := res.Grow(n); err != nil {
		return nil, err
	}
	return res, nil
}

// take adds n to a reservation that already holds held bytes.
func (b *Budget) take(held, n int64) error {
	if b == nil || b.Total() <= 0 {
		return nil
	}
	if held+n > b.Total() {
		return fmt.Errorf("%w: %s asked for, over this server's %s of %s", sandbox.ErrTooLarge,
			units.FormatBytes(held+n), b.what, units.FormatBytes(b.Total()))
	}
	if ok, used := b.TryTake(n); !ok {
		if b.onRefuse != nil {
			b.onRefuse()
		}
		return fmt.Errorf("%w: %s of the %s of %s is taken by other requests; try again later", sandbox.ErrBusy,
			units.FormatBytes(used), b.what, units.FormatBytes(b.Total()))
	}
	return nil
}

var _ testphase.Disk = (*Reservation)(nil)

func (b *Budget) give(n int64) {
	if b == nil || b.Total() <= 0 {
		return
	}
	b.Give(n)
}

// Reservation is one request's share of a Budget. Its methods are safe on a
// nil Reservation (nothing reserved). A /v1/test's reservation of the spool
// space is also its test run's disk (testphase.Disk).
type Reservation struct {
	b  *Budget
	mu sync.Mutex
	n  int64
}

// Grow reserves n more bytes, or fails as Budget.Reserve does.
func (r *Reservation) Grow(n int64) error {
	if r == nil || n <= 0 {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.b.take(r.n, n); err != nil {
		return err
	}
	r.n += n
	return nil
}

// ShrinkTo gives back what is reserved above n bytes (a snapshot that turned
// out smaller than its limit keeps only its size).
func (r *Reservation) ShrinkTo(n int64) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if n < r.n {
		r.b.give(r.n - n)
		r.n = n
	}
}

// Give gives back n of the bytes reserved (a file the request wrote is
// gone); never more than it holds.
func (r *Reservation) Give(n int64) {
	if r == nil || n <= 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	n = min(n, r.n)
	r.b.give(n)
	r.n -= n
}

// Release gives everything back. It may be called more than once.
func (r *Reservation) Release() { r.ShrinkTo(0) }
