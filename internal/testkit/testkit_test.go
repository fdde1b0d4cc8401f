package testkit

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// recorder is a testing.TB whose cleanups and errors the test inspects.
type recorder struct {
	testing.TB
	cleanups []func()
	errs     []string
}

func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recorder) end() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

func TestServe(t *testing.T) {
	r := &recorder{TB: t}
	s := Serve(r, func(ctx context.Context, ln net.Listener) error {
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("up")) })}
		go func() { <-ctx.Done(); srv.Close() }()
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	resp, err := http.Get(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := s.Stop(10 * time.Second); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if _, err := http.Get(s.URL); err == nil {
		t.Error("still serving after Stop")
	}
	r.end()
	if len(r.errs) != 0 {
		t.Errorf("a clean stop reported %q", r.errs)
	}
}

func TestServeReportsItsError(t *testing.T) {
	r := &recorder{TB: t}
	Serve(r, func(ctx context.Context, ln net.Listener) error {
		<-ctx.Done()
		return errors.New("listener broke")
	})
	r.end()
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], "listener broke") {
		t.Errorf("errors at the end: %q", r.errs)
	}
}

func TestStopGivesUpOnAServerThatDoesNotReturn(t *testing.T) {
	r := &recorder{TB: t}
	release := make(chan struct{})
	defer close(release)
	s := Serve(r, func(context.Context, net.Listener) error { <-release; return nil })
	err := s.Stop(50 * time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "did not return within 50ms") {
		t.Errorf("Stop: %v", err)
	}
	if again := s.Stop(time.Hour); again != err {
		t.Errorf("second Stop: %v, want the first answer %v", again, err)
	}
}

func TestSame(t *testing.T) {
	r := &recorder{TB: t}
	if got := Same(r, func() string { return "a" }); got != "a" || len(r.errs) != 0 {
		t.Errorf("steady: %q, errors %q", got, r.errs)
	}
	n := 0
	Same(r, func() string { n++; return fmt.Sprint(n / 5) })
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], "call 5 gave") {
		t.Errorf("changing output: errors %q", r.errs)
	}
}
