package runtimekit

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
