package cli

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/config"
)

// The messages a user meets first say what to do: a mistyped flag gets the nearest one, a
// bad value from an ASTER_* variable names the variable, and a taken address names the
// flag that moves it.
func TestHints(t *testing.T) {
	if code, _, stderr := run(t, "exec", "--tmeout", "5s", "--", "true"); code != ExitUsage ||
		!strings.Contains(stderr, "unknown flag: --tmeout: did you mean --timeout?") {
		t.Errorf("a mistyped flag: %d %q", code, stderr)
	}
	if code, _, stderr := run(t, "exec", "--zzzzzz", "--", "true"); code != ExitUsage || strings.Contains(stderr, "did you mean") {
		t.Errorf("a flag like no other: %d %q", code, stderr)
	}

	env := map[string]string{"ASTER_MAX_CONCURRENT": "lots", "ASTER_LOG_LEVEL": "info"}
	var errb syncBuffer
	code := Run(t.Context(), []string{"sandbox", "serve"}, IO{
		Stdin: strings.NewReader(""), Stdout: &syncBuffer{}, Stderr: &errb,
		Getenv:  func(k string) string { return env[k] },
		Environ: func() []string { return []string{"ASTER_MAX_CONCURRENT=lots", "ASTER_LOG_LEVEL=info"} },
	})
	if code != ExitUsage || !strings.Contains(errb.String(), `max-concurrent "lots"`) ||
		!strings.Contains(errb.String(), "the value comes from ASTER_MAX_CONCURRENT=lots") || strings.Contains(errb.String(), "ASTER_LOG_LEVEL") {
		t.Errorf("a bad ASTER_MAX_CONCURRENT: %d %q", code, errb.String())
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if code, _, stderr := run(t, "sandbox", "serve", "--addr", ln.Addr().String(), "--docker-host", "unix:///nonexistent.sock"); code != ExitFailure ||
		!strings.Contains(stderr, "address already in use") || !strings.Contains(stderr, "choose another address with --addr") {
		t.Errorf("a taken address: %d %q", code, stderr)
	}
}

// JSON logs write durations as Go's text, never as raw nanoseconds.
func TestJSONLogDurations(t *testing.T) {
	var errb syncBuffer
	g := &globals{stdio: IO{Stderr: &errb}}
	g.logger(config.Config{LogFormat: "json"}).Info("waited", "wait", 1500*time.Millisecond, "grace", 30*time.Second)
	if out := errb.String(); !strings.Contains(out, `"wait":"1.5s"`) || !strings.Contains(out, `"grace":"30s"`) {
		t.Errorf("JSON log: %s", out)
	}
}
