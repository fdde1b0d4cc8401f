package initproto

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"
	"time"
)

func TestChanWriterRoundTrip(t *testing.T) {
	var stream bytes.Buffer
	fw := NewWriter(&stream)
	big := bytes.Repeat([]byte("x"), MaxPayload+10)
	for _, w := range []struct {
		id uint32
		p  []byte
	}{{1, []byte("one")}, {2, big}, {1, []byte("two")}} {
		if _, err := (ChanWriter{W: fw, ID: w.id}).Write(w.p); err != nil {
			t.Fatal(err)
		}
	}
	got := map[uint32][]byte{}
	r := NewReader(&stream)
	for {
		f, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil || f.Type != TypeChan {
			t.Fatalf("frame %s: %v", f.Type, err)
		}
		id, data, err := DecodeChan(f.Payload)
		if err != nil {
			t.Fatal(err)
		}
		got[id] = append(got[id], data...)
	}
	if string(got[1]) != "onetwo" || !bytes.Equal(got[2], big) {
		t.Fatalf("channel 1 %q, channel 2 %d bytes", got[1], len(got[2]))
	}
}

func TestChanBufferBlocksAtMaxAndEnds(t *testing.T) {
	b := NewChanBuffer(4)
	if _, err := b.Write([]byte("abcd")); err != nil {
		t.Fatal(err)
	}
	wrote := make(chan struct{})
	go func() {
		_, _ = b.Write([]byte("e"))
		close(wrote)
	}()
	select {
	case <-wrote:
		t.Fatal("a write past max did not wait for the reader")
	case <-time.After(50 * time.Millisecond):
	}
	p := make([]byte, 8)
	if n, _ := b.Read(p); string(p[:n]) != "abcd" {
		t.Fatalf("read %q", p[:n])
	}
	<-wrote
	b.Close()
	if n, err := b.Read(p); string(p[:n]) != "e" || err != nil {
		t.Fatalf("after close: %q %v, want the rest first", p[:n], err)
	}
	if _, err := b.Read(p); err != io.EOF {
		t.Fatalf("drained: %v, want EOF", err)
	}
	if _, err := b.Write([]byte("f")); err != io.ErrClosedPipe {
		t.Fatalf("write after close: %v", err)
	}
}

func FuzzDecodeChan(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 'a'})
	f.Add([]byte{0, 0, 1})
	f.Fuzz(func(t *testing.T, p []byte) {
		id, data, err := DecodeChan(p)
		if err != nil {
			if len(p) >= 4 {
				t.Fatalf("refused %d bytes", len(p))
			}
			return
		}
		if id != binary.BigEndian.Uint32(p) || !bytes.Equal(data, p[4:]) {
			t.Fatal("wrong split")
		}
		if _, err := DecodeChanEnd(p); (err == nil) != (len(p) == 4) {
			t.Fatalf("chan end of %d bytes: %v", len(p), err)
		}
	})
}
