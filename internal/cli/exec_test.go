package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), args, IO{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }})
	return code, out.String(), errb.String()
}

// Bad flags are refused with exit 2 and one clear line, before any engine is
// contacted (these run with no engine configured at all).
func TestExecBadFlags(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"exec", "true"}, "missing -- before the command"},
		{[]string{"exec"}, "no command given"},
		{[]string{"exec", "--"}, "no command given"},
		{[]string{"exec", "--memory", "-5m", "--", "true"}, "negative"},
		{[]string{"exec", "--memory", "100t", "--", "true"}, "memory 100TiB is out of range"},
		{[]string{"exec", "--cpus", "0", "--", "true"}, "must be positive"},
		{[]string{"exec", "--timeout", "forever", "--", "true"}, "not a duration"},
		{[]string{"exec", "--timeout", "1ms", "--", "true"}, "timeout 1ms is out of range"},
		{[]string{"exec", "--pids", "3", "--", "true"}, "pids 3 is out of range"},
		{[]string{"exec", "--pids", "lots", "--", "true"}, "not a whole number"},
		{[]string{"exec", "--env", "NOVALUE", "--", "true"}, "want KEY=VALUE"},
		{[]string{"exec", "--file", "/nonexistent/file", "--", "true"}, "no such file"},
		{[]string{"exec", "--file", "exec_test.go:../up", "--", "true"}, "leaves the workspace"},
		{[]string{"exec", "--bogus", "--", "true"}, "unknown flag"},
		{[]string{"exec", "--output-limit", "10g", "--", "true"}, "output-limit"},
		{[]string{"nosuchcommand"}, "unknown command"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, stdout, stderr := run(t, c.args...)
			if code != ExitUsage {
				t.Fatalf("exit %d, want %d; stderr %q", code, ExitUsage, stderr)
			}
			if stdout != "" {
				t.Fatalf("stdout not empty: %q", stdout)
			}
			if !strings.Contains(stderr, c.want) || !strings.HasPrefix(stderr, "aster: ") {
				t.Fatalf("stderr %q does not say %q", stderr, c.want)
			}
		})
	}
}

func TestHelpTeaches(t *testing.T) {
	code, out, _ := run(t, "exec", "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"--timeout", "--memory", "--json", "Exit status", "124", "no network", "Examples:"} {
		if !strings.Contains(out, want) {
			t.Errorf("exec --help lacks %q", want)
		}
	}
	code, out, _ = run(t, "version")
	if code != 0 || !strings.HasPrefix(out, "aster ") {
		t.Fatalf("version: %d %q", code, out)
	}
}
