// Package bytebudget is the byte semaphore every server uses to bound what
// concurrent requests may hold (webhook bodies, API bodies in memory,
// snapshots spooled to disk). It refuses instead of waiting: a reservation
// that does not fit fails at once, so held-open requests cannot queue memory
// or disk behind them. Callers name and classify the refusal themselves.
package bytebudget

import "sync"

// Budget is a pool of Total bytes. A Total of zero or less is unlimited.
// Safe for concurrent use.
type Budget struct {
	total int64

	mu   sync.Mutex
	used int64
	peak int64
}

// New returns a budget of total bytes.
func New(total int64) *Budget { return &Budget{total: total} }

// Total is the budget's size (zero or less: unlimited).
func (b *Budget) Total() int64 { return b.total }

// Max is Total, under the name the webhook handler uses.
func (b *Budget) Max() int64 { return b.total }

// InUse is the bytes reserved now.
func (b *Budget) InUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// Peak is the most bytes ever reserved at once.
func (b *Budget) Peak() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.peak
}

// TryTake reserves n bytes if they fit now. When they do not, it returns false
// and the bytes reserved by others at that moment.
func (b *Budget) TryTake(n int64) (ok bool, inUse int64) {
	if n < 0 {
		return false, b.InUse()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.total > 0 && b.used+n > b.total {
		return false, b.used
	}
	b.used += n
	b.peak = max(b.peak, b.used)
	return true, b.used
}

// Give returns n bytes taken before.
func (b *Budget) Give(n int64) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}
