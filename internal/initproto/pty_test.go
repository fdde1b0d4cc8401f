package initproto

import (
	"bytes"
	"testing"
)

func TestResizeFrame(t *testing.T) {
	for _, s := range []TermSize{{1, 1}, {80, 24}, {300, 999}, {MaxTermSize, MaxTermSize}} {
		got, err := DecodeResize(EncodeResize(s))
		if err != nil || got != s {
			t.Errorf("%v: round trip gave %v, %v", s, got, err)
		}
	}
	for _, p := range [][]byte{nil, {0, 80, 0}, {0, 0, 0, 24}, {0, 80, 0, 0}, {0xff, 0xff, 0, 24}, {0x03, 0xe9, 0, 24}, {0, 80, 0, 24, 0}} {
		if s, err := DecodeResize(p); err == nil {
			t.Errorf("%v: decoded to %v, want an error", p, s)
		}
	}
	var buf bytes.Buffer
	if err := NewWriter(&buf).WriteFrame(TypeResize, EncodeResize(TermSize{120, 40})); err != nil {
		t.Fatal(err)
	}
	f, err := NewReader(&buf).Next()
	if err != nil || f.Type != TypeResize || f.Type.String() != "resize" {
		t.Fatalf("the resize frame reads back as %v (%v)", f.Type, err)
	}
}

func TestJobHeaderPTY(t *testing.T) {
	h := JobHeader{Version: Version, Argv: []string{"sh"}, Dir: ".", TimeoutMS: 1, OutputCeilingBytes: 1, PTY: &TermSize{80, 24}}
	if err := h.Validate(); err != nil {
		t.Fatalf("80x24: %v", err)
	}
	for _, s := range []TermSize{{0, 24}, {80, 0}, {MaxTermSize + 1, 24}} {
		h.PTY = &s
		if err := h.Validate(); err == nil {
			t.Errorf("%v accepted", s)
		}
	}
}

func FuzzDecodeResize(f *testing.F) {
	f.Add(EncodeResize(TermSize{80, 24}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, p []byte) {
		s, err := DecodeResize(p)
		if err != nil {
			return
		}
		if s.Validate() != nil || !bytes.Equal(EncodeResize(s), p) {
			t.Fatalf("%v decoded to %v", p, s)
		}
	})
}
