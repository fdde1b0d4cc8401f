package sandboxtest

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/sandbox"
)

// terminalCase drives a terminal of s (Sandbox.Terminal): allocated inside
// the sandbox at the size asked and resized; escape sequences and bytes
// that are not text come out as they went in; a flood read slowly arrives
// whole; cancelling the terminal ends every process of its process
// session, and the session lives on.
func terminalCase(t *testing.T, s *sandbox.Sandbox) {
	var (
		mu  sync.Mutex
		out bytes.Buffer
		n   int64
	)
	slow := make(chan struct{}) // closed: the reader stops dawdling
	in, typed := io.Pipe()
	resize := make(chan sandbox.TermSize, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type ended struct {
		res sandbox.Result
		err error
	}
	done := make(chan ended, 1)
	go func() {
		res, err := s.Terminal(ctx, sandbox.TerminalSpec{Size: sandbox.TermSize{Cols: 91, Rows: 33}, Input: in, Resize: resize,
			Output: func(b []byte) {
				select {
				case <-slow:
				default:
					time.Sleep(time.Millisecond) // a reader slower than the flood
				}
				mu.Lock()
				n += int64(len(b))
				if out.Len() > 1<<20 {
					out.Reset()
				}
				out.Write(b)
				mu.Unlock()
			}})
		done <- ended{res, err}
	}()
	typeIn := func(s string) {
		t.Helper()
		if _, err := typed.Write([]byte(s)); err != nil {
			t.Fatalf("type %q: %v", s, err)
		}
	}
	wait := func(want string) {
		t.Helper()
		for range 3000 {
			mu.Lock()
			ok := bytes.Contains(out.Bytes(), []byte(want))
			mu.Unlock()
			if ok {
				return
			}
			select {
			case e := <-done:
				t.Fatalf("the terminal ended (%s: %v %v) without %q", e.res.Status, e.res.Error, e.err, want)
			case <-time.After(20 * time.Millisecond):
			}
		}
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("no %q from the terminal in a minute; output ends %q", want, out.Bytes()[max(0, out.Len()-300):])
	}
	typeIn("stty size; tty\n")
	wait("33 91")
	wait("/dev/pts/")
	resize <- sandbox.TermSize{Cols: 132, Rows: 50}
	for i := 0; ; i++ {
		typeIn("stty size\n")
		time.Sleep(50 * time.Millisecond)
		mu.Lock()
		ok := bytes.Contains(out.Bytes(), []byte("50 132"))
		mu.Unlock()
		if ok {
			break
		}
		if i == 200 {
			t.Fatal("the resize did not reach the terminal")
		}
	}
	typeIn(`printf '\033]52;c;aGk=\007\033[2J\033[?1049h\000\377-%s\n' done` + "\n")
	wait("\x1b]52;c;aGk=\x07\x1b[2J\x1b[?1049h\x00\xff-done")
	typeIn("head -c 3000000 /dev/urandom; echo; echo flood-$((2*21))\n")
	wait("flood-42")
	close(slow)
	mu.Lock()
	got := n
	mu.Unlock()
	if got < 3_000_000 {
		t.Fatalf("the flood gave %d bytes, want at least 3000000", got)
	}
	typeIn("sleep 2000 & (sleep 2001 &); echo bg-$((1+1))\n")
	wait("bg-2")
	cancel()
	typed.Close()
	select {
	case e := <-done:
		if e.res.Status != sandbox.StatusKilled {
			t.Fatalf("a cancelled terminal ended %s (%s, %v), want killed", e.res.Status, e.res.Error, e.err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the terminal did not end when cancelled")
	}
	for i := 0; ; i++ {
		res, err := s.Exec(t.Context(), sandbox.ExecSpec{Argv: []string{"sh", "-c", "cat /proc/[0-9]*/cmdline | tr '\\0' ' '"}})
		if err != nil || res.Status != sandbox.StatusOK {
			t.Fatalf("exec after the terminal: %v %+v", err, res)
		}
		if !strings.Contains(string(res.Stdout.Data), "sleep 200") {
			break
		}
		if i == 100 {
			t.Fatalf("the terminal's processes outlived it: %q", res.Stdout.Data)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := s.Terminal(t.Context(), sandbox.TerminalSpec{Size: sandbox.TermSize{Cols: 0, Rows: 24}}); err == nil {
		t.Fatal("a terminal of 0 columns was opened")
	}
}
