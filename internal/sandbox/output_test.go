package sandbox

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCaptureUnderCap(t *testing.T) {
	c := NewCapture(100)
	c.Write([]byte("hello "))
	c.Write([]byte("world"))
	o := c.Output()
	if string(o.Data) != "hello world" || o.Truncated || o.TotalBytes != 11 || o.DroppedBytes != 0 {
		t.Fatalf("%+v", o)
	}
}

func TestCaptureKeepsHeadAndTail(t *testing.T) {
	for _, chunk := range []int{1, 7, 64, 1000, 10000} {
		t.Run(fmt.Sprint(chunk), func(t *testing.T) {
			var stream bytes.Buffer
			for i := 0; i < 2000; i++ {
				fmt.Fprintf(&stream, "line %04d\n", i)
			}
			all := stream.Bytes()
			c := NewCapture(1000)
			for p := all; len(p) > 0; {
				n := min(chunk, len(p))
				c.Write(p[:n])
				p = p[n:]
			}
			o := c.Output()
			if !o.Truncated || o.TotalBytes != int64(len(all)) {
				t.Fatalf("truncated=%v total=%d", o.Truncated, o.TotalBytes)
			}
			head, tail, ok := strings.Cut(string(o.Data), "\n[... aster: ")
			if !ok {
				t.Fatalf("no marker in %q", o.Data)
			}
			_, tail, _ = strings.Cut(tail, " ...]\n")
			if !bytes.HasPrefix(all, []byte(head)) || !bytes.HasSuffix(all, []byte(tail)) {
				t.Fatal("head or tail is not from the stream")
			}
			if len(head) != 500 || len(tail) != 500 {
				t.Fatalf("head %d tail %d, want 500 each", len(head), len(tail))
			}
			if o.DroppedBytes != int64(len(all))-1000 || !strings.Contains(string(o.Data), fmt.Sprintf("%d bytes dropped", o.DroppedBytes)) {
				t.Fatalf("dropped %d, marker %q", o.DroppedBytes, o.Data[490:560])
			}
		})
	}
}

func TestCaptureExactlyAtCap(t *testing.T) {
	c := NewCapture(10)
	c.Write([]byte("0123456789"))
	if o := c.Output(); o.Truncated || string(o.Data) != "0123456789" {
		t.Fatalf("%+v", o)
	}
	c.Write([]byte("X"))
	if o := c.Output(); !o.Truncated || o.DroppedBytes != 1 {
		t.Fatalf("%+v", o)
	}
}

func TestCaptureCutsOnRuneBoundaries(t *testing.T) {
	s := strings.Repeat("é✓😀", 500) // 2+3+4 bytes per group
	for limit := int64(10); limit < 200; limit += 7 {
		c := NewCapture(limit)
		c.Write([]byte(s))
		o := c.Output()
		if !utf8.Valid(o.Data) {
			t.Fatalf("limit %d: valid UTF-8 input became invalid: %q", limit, o.Data)
		}
	}
}

func TestWireRoundTripAndEncoding(t *testing.T) {
	r := Result{ID: "r-1", Status: StatusOK, Stdout: Output{Data: []byte("text ✓")}, Stderr: Output{Data: []byte{0xff, 0, 'a'}}}
	w := r.Wire()
	if w.StdoutEncoding != EncodingUTF8 || w.StderrEncoding != EncodingBase64 {
		t.Fatalf("encodings %q %q", w.StdoutEncoding, w.StderrEncoding)
	}
	back, err := FromWire(w)
	if err != nil || !bytes.Equal(back.Stderr.Data, r.Stderr.Data) || !bytes.Equal(back.Stdout.Data, r.Stdout.Data) {
		t.Fatalf("round trip: %v %+v", err, back)
	}
	if _, err := FromWire(WireResult{Stdout: "!!", StdoutEncoding: "base64"}); err == nil {
		t.Fatal("bad base64 accepted")
	}
	if _, err := FromWire(WireResult{StdoutEncoding: "rot13"}); err == nil {
		t.Fatal("unknown encoding accepted")
	}
}

func TestExplain(t *testing.T) {
	l := Limits{TimeoutMS: 5000, MemoryBytes: 96 << 20, OutputCeilingBytes: 64 << 20}
	cases := []struct {
		r    Result
		want []string // every one must be in the sentence; nil: no sentence
	}{
		{Result{Status: StatusOK}, nil},
		{Result{Status: StatusExitNonzero, ExitCode: 3}, nil},
		{Result{Status: StatusTimeout}, []string{"5s wall-clock limit", "killed"}},
		{Result{Status: StatusOOM}, []string{"96MiB of memory", "OOM killer"}},
		{Result{Status: StatusOutputLimit}, []string{"more than 64MiB", "output_limit"}},
		{Result{Status: StatusKilled, Error: "signal KILL"}, []string{"killed: signal KILL"}},
		{Result{Status: StatusKilled}, []string{"killed by a signal"}},
		{Result{Status: StatusError, Error: "image gone"}, []string{"could not run the job: image gone"}},
	}
	for _, c := range cases {
		got := c.r.Explain(l)
		if c.want == nil {
			if got != "" {
				t.Errorf("%s: %q, want no sentence", c.r.Status, got)
			}
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", c.r.Status, got, w)
			}
		}
	}
}

func TestCLIExitCode(t *testing.T) {
	cases := []struct {
		r    Result
		want int
	}{
		{Result{Status: StatusOK}, 0},
		{Result{Status: StatusExitNonzero, ExitCode: 3}, 3},
		{Result{Status: StatusTimeout}, 124},
		{Result{Status: StatusOutputLimit}, 125},
		{Result{Status: StatusOOM}, 137},
		{Result{Status: StatusKilled, Signal: "SIGSEGV"}, 139},
		{Result{Status: StatusKilled}, 137},
		{Result{Status: StatusError}, 126},
	}
	for _, c := range cases {
		if got := c.r.CLIExitCode(); got != c.want {
			t.Errorf("%s/%d/%s: %d, want %d", c.r.Status, c.r.ExitCode, c.r.Signal, got, c.want)
		}
	}
}
