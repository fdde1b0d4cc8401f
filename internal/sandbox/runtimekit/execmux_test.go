package runtimekit

import (
	"io"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/initproto"
)

// A holder's stream is demultiplexed by channel: each exec reads only its
// own bytes; a channel end ends that exec alone; a malformed frame ends the
// mux with an error (the runtime then destroys the sandbox), a closed stream
// without one.
func TestExecMuxChannels(t *testing.T) {
	for _, tc := range []struct {
		name    string
		garbage bool
	}{{"closed", false}, {"malformed", true}} {
		t.Run(tc.name, func(t *testing.T) {
			toHolderR, toHolderW := io.Pipe()
			fromHolderR, fromHolderW := io.Pipe()
			go func() { _, _ = io.Copy(io.Discard, toHolderR) }()
			m := NewExecMux(toHolderW, initproto.NewReader(fromHolderR))
			a, err := m.Open()
			if err != nil {
				t.Fatal(err)
			}
			b, err := m.Open()
			if err != nil {
				t.Fatal(err)
			}
			hw := initproto.NewWriter(fromHolderW)
			go func() {
				_ = initproto.NewWriter(initproto.ChanWriter{W: hw, ID: b.ID()}).WriteFrame(initproto.TypeStdout, []byte("for b"))
				_ = initproto.NewWriter(initproto.ChanWriter{W: hw, ID: a.ID()}).WriteFrame(initproto.TypeStdout, []byte("for a"))
				_ = hw.WriteFrame(initproto.TypeChanEnd, initproto.EncodeChanEnd(a.ID()))
			}()
			for _, x := range []struct {
				x    *MuxExec
				want string
			}{{a, "for a"}, {b, "for b"}} {
				f, err := x.x.Reader().Next()
				if err != nil || string(f.Payload) != x.want {
					t.Fatalf("channel %d: %q %v, want %q", x.x.ID(), f.Payload, err, x.want)
				}
			}
			waitFor(t, a.Exited(), "a's end")
			select {
			case <-b.Exited():
				t.Fatal("b ended with a")
			default:
			}
			if tc.garbage {
				go func() { _, _ = fromHolderW.Write([]byte{'?', 0, 0, 0, 0}) }()
			} else {
				fromHolderW.Close()
			}
			waitFor(t, m.Done(), "the mux's end")
			waitFor(t, b.Exited(), "b's end")
			if (m.Err() != nil) != tc.garbage {
				t.Fatalf("Err() = %v", m.Err())
			}
			if _, err := m.Open(); err == nil {
				t.Fatal("opened a channel on an ended mux")
			}
		})
	}
}

func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s did not come", what)
	}
}
