package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// `aster review --color`: always renders the Markdown with colour (escape sequences, no
// Markdown markers left); never, a pipe and NO_COLOR print the Markdown itself.
func TestReviewRendersForTheTerminal(t *testing.T) {
	dir := t.TempDir()
	git := func(args ...string) {
		cmd := exec.CommandContext(t.Context(), "git", append([]string{"-C", dir, "-c", "gc.auto=0"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(dir, "a.sh"), []byte("echo hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	review := func(env map[string]string, args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		code := Run(t.Context(), append([]string{"review", "--base", "HEAD"}, append(args, dir)...), IO{
			Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return env[k] }})
		if code != 0 {
			t.Fatalf("aster review %v: exit %d: %s", args, code, errb.String())
		}
		return out.String()
	}
	if out := review(nil); !strings.Contains(out, "**Nothing to review**") || strings.Contains(out, "\x1b") {
		t.Errorf("piped: want the Markdown itself:\n%q", out)
	}
	if out := review(nil, "--color", "never"); !strings.Contains(out, "**Nothing to review**") {
		t.Errorf("--color never: %q", out)
	}
	out := review(nil, "--color", "always")
	if !strings.Contains(out, "\x1b[") || strings.Contains(out, "**Nothing to review**") || !strings.Contains(out, "Nothing to review") {
		t.Errorf("--color always: want rendered text with escape sequences:\n%q", out)
	}
	if out := review(map[string]string{"NO_COLOR": "1"}); strings.Contains(out, "\x1b") || !strings.Contains(out, "**Nothing to review**") {
		t.Errorf("NO_COLOR: want the Markdown itself:\n%q", out)
	}
	if code, _, stderr := run(t, "review", "--color", "sometimes", dir); code != ExitUsage || !strings.Contains(stderr, "--color") {
		t.Errorf("--color sometimes: %d %s", code, stderr)
	}
}

// Text from the repository, an analyzer or a model cannot drive the terminal: control
// characters are dropped before rendering, so only the renderer's own colour codes remain.
func TestRenderDropsControlCharacters(t *testing.T) {
	md := "# Finding\n\nA message with \x1b]0;owned\x07 a title change, \x1b[2J a clear, \x9b31m a C1 CSI and a bell \x07.\n"
	var b bytes.Buffer
	if err := writeRendered(&b, []byte(md), "color"); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, bad := range []string{"\x1b]", "\x07", "\x1b[2J", "\u009b"} {
		if strings.Contains(out, bad) {
			t.Errorf("rendered output carries %q:\n%q", bad, out)
		}
	}
	if !strings.Contains(out, "a title change") {
		t.Errorf("the text itself is gone: %q", out)
	}
}

// openPTY opens a pseudo-terminal and returns its terminal side, with the other side
// drained in the background (so writes never block) until the test ends.
func openPTY(t *testing.T) *os.File {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { ptmx.Close() })
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close() })
	go io.Copy(io.Discard, ptmx)
	return tty
}

// On a real terminal, auto renders with colour, and NO_COLOR or TERM=dumb keep the
// Markdown itself.
func TestRenderModeOnATerminal(t *testing.T) {
	tty := openPTY(t)
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	for _, c := range []struct {
		name, mode string
		getenv     func(string) string
		want       string
	}{
		{"auto", colorAuto, env(), "color"},
		{"NO_COLOR", colorAuto, env("NO_COLOR", "1"), ""},
		{"TERM=dumb", colorAuto, env("TERM", "dumb"), ""},
		{"never", colorNever, env(), ""},
		{"always over NO_COLOR", colorAlways, env("NO_COLOR", "1"), "color"},
	} {
		if got := renderMode(tty, c.mode, c.getenv); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	var b bytes.Buffer
	if got := renderMode(&b, colorAuto, env()); got != "" {
		t.Errorf("a buffer is not a terminal: %q", got)
	}
}
