package bench

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"

	"github.com/asterhq/aster/internal/github/githubtest"
)

// fakeTB is what githubtest's fake GitHub needs of a test, for a benchmark
// run outside `go test`: what would fail a test is recorded, and what would
// stop one (Fatal, Skip) records and panics with abortFake, which guard
// turns back into an error.
type fakeTB struct {
	dir      string
	mu       sync.Mutex
	errs     []string
	cleanups []func()
}

var _ githubtest.TB = (*fakeTB)(nil)

type abortFake struct{ msg string }

func (f *fakeTB) Helper() {}

func (f *fakeTB) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}

func (f *fakeTB) Fatal(args ...any) { f.stop(fmt.Sprint(args...)) }

func (f *fakeTB) Fatalf(format string, args ...any) { f.stop(fmt.Sprintf(format, args...)) }

func (f *fakeTB) Skipf(format string, args ...any) { f.stop(fmt.Sprintf(format, args...)) }

func (f *fakeTB) stop(msg string) {
	f.Errorf("%s", msg)
	panic(abortFake{msg})
}

func (f *fakeTB) Cleanup(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cleanups = append(f.cleanups, fn)
}

func (f *fakeTB) TempDir() string {
	d, err := os.MkdirTemp(f.dir, "fake-")
	if err != nil {
		f.Fatalf("temp dir: %v", err)
	}
	return d
}

// errors returns what was recorded, at most the first few.
func (f *fakeTB) errors() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.errs[:min(len(f.errs), 5)])
}

// close runs the cleanups, last first.
func (f *fakeTB) close() {
	f.mu.Lock()
	fns := f.cleanups
	f.cleanups = nil
	f.mu.Unlock()
	for _, fn := range slices.Backward(fns) {
		fn()
	}
}

// guard runs fn, which calls into githubtest, and returns a stop as an error.
func guard(fn func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			a, ok := r.(abortFake)
			if !ok {
				panic(r)
			}
			err = errors.New(a.msg)
		}
	}()
	fn()
	return nil
}
