package runtimekit

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/asterhq/aster/internal/initproto"
	"github.com/asterhq/aster/internal/sandbox"
)

// egressRefusal is implemented by a Dialer's error that is a refusal by
// policy (the job's proxy answers 403) rather than a failure to reach an
// allowed destination (502).
type egressRefusal interface{ EgressRefused() bool }

// hostTunnels is the host side of a run's tunnels: each open that aster-init
// relays from the job's CONNECT is handed to the run's Dialer, and the
// connection it returns is relayed through a Mux.
type hostTunnels struct {
	d      sandbox.Dialer
	fw     *initproto.Writer
	mux    *initproto.Mux
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	lastID  uint32
	pending map[uint32]context.CancelFunc
}

func newHostTunnels(ctx context.Context, d sandbox.Dialer, fw *initproto.Writer) *hostTunnels {
	ctx, cancel := context.WithCancel(ctx)
	return &hostTunnels{d: d, fw: fw, mux: initproto.NewMux(fw), ctx: ctx, cancel: cancel, pending: make(map[uint32]context.CancelFunc)}
}

// open handles a tunnel-open frame: the dial runs in its own goroutine, so a
// slow destination never holds up the frame loop. Ids must increase, so a
// frame for a closed tunnel can never be taken for a new one.
func (h *hostTunnels) open(payload []byte) error {
	o, err := initproto.DecodeTunnelOpen(payload)
	if err != nil {
		return err
	}
	h.mu.Lock()
	if o.ID <= h.lastID {
		h.mu.Unlock()
		return fmt.Errorf("tunnel id %d after %d", o.ID, h.lastID)
	}
	h.lastID = o.ID
	// init allows MaxTunnels at once; the slack covers tunnels init has
	// finished and the host has not yet.
	if len(h.pending)+h.mux.Len() >= 2*initproto.MaxTunnels {
		h.mu.Unlock()
		h.answer(o.ID, initproto.AnswerRefused, fmt.Sprintf("too many tunnels open at once (at most %d)", initproto.MaxTunnels))
		return nil
	}
	ctx, cancel := context.WithCancel(h.ctx)
	h.pending[o.ID] = cancel
	h.mu.Unlock()
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		defer cancel()
		conn, err := h.d.DialEgress(ctx, o.Host, int(o.Port))
		h.mu.Lock()
		_, still := h.pending[o.ID]
		delete(h.pending, o.ID)
		h.mu.Unlock()
		if err != nil {
			status := initproto.AnswerFailed
			var r egressRefusal
			if errors.As(err, &r) && r.EgressRefused() {
				status = initproto.AnswerRefused
			}
			h.answer(o.ID, status, err.Error())
			return
		}
		c, ok := conn.(initproto.Conn)
		if !ok {
			c = noHalfClose{conn}
		}
		if !still {
			// init gave up on it, or the run is ending.
			c.Close()
			return
		}
		t, err := h.mux.Add(o.ID, c)
		if err != nil {
			c.Close()
			h.answer(o.ID, initproto.AnswerFailed, "the run is ending")
			return
		}
		h.answer(o.ID, initproto.AnswerOpen, "")
		t.Start()
	}()
	return nil
}

func (h *hostTunnels) answer(id uint32, status byte, reason string) {
	_ = h.fw.WriteFrame(initproto.TypeTunnelAnswer, initproto.EncodeTunnelAnswer(initproto.TunnelAnswer{ID: id, Status: status, Reason: reason}))
}

// frame handles data, grant and close frames from init. A close of a tunnel
// still being dialled cancels the dial.
func (h *hostTunnels) frame(f initproto.Frame) error {
	if f.Type == initproto.TypeTunnelClose {
		id := initproto.TunnelID(f.Payload)
		h.mu.Lock()
		cancel, ok := h.pending[id]
		delete(h.pending, id)
		h.mu.Unlock()
		if ok {
			cancel()
		}
	}
	return h.mux.Handle(f)
}

// close cancels every dial and ends every tunnel; the Dialer's connections are
// all closed when it returns, so its statistics are complete.
func (h *hostTunnels) close() {
	h.cancel()
	h.wg.Wait()
	h.mux.Close()
}

// noHalfClose adapts a net.Conn without CloseWrite: the write direction then
// ends with the whole connection.
type noHalfClose struct{ net.Conn }

func (c noHalfClose) CloseWrite() error { return nil }
