package initproto

import (
	"errors"
	"io"
	"sync"
)

// Conn is one side's end of a tunnel: on init's side the job's connection to
// the CONNECT proxy, on the host's side the connection to the destination.
type Conn interface {
	io.ReadWriteCloser
	// CloseWrite ends the write direction only (TCP half-close).
	CloseWrite() error
}

// Mux relays the tunnels of one side over the shared frame stream. Both the
// host (internal/sandbox) and aster-init use it, so the flow control is the
// same code on both ends. Handle never blocks: each tunnel has its own pumps,
// and what a tunnel has received but not yet written is bounded by
// TunnelWindow, because the other side sends no more than it was granted.
type Mux struct {
	w       *Writer
	mu      sync.Mutex
	tunnels map[uint32]*Tunnel
	closed  bool
	wg      sync.WaitGroup
}

// NewMux returns a Mux writing its frames to w.
func NewMux(w *Writer) *Mux { return &Mux{w: w, tunnels: make(map[uint32]*Tunnel)} }

// ErrMuxClosed is returned by Add once the Mux is closed.
var ErrMuxClosed = errors.New("tunnels closed")

// Tunnel is one relayed connection.
type Tunnel struct {
	id uint32
	c  Conn
	m  *Mux

	mu       sync.Mutex
	credit   int64    // bytes this side may still send
	queue    [][]byte // received, not yet written to c
	queued   int64
	peerEOF  bool // the other side writes no more
	aborted  bool
	peerGone bool          // the other side aborted: no need to tell it
	wake     chan struct{} // data or EOF arrived, or the tunnel ended: the write pump
	more     chan struct{} // credit arrived, or the tunnel ended: the read pump
	started  bool
	live     int           // pumps still running
	done     chan struct{} // closed when the tunnel is finished
}

// Done is closed when the tunnel is finished both ways and its conn closed.
func (t *Tunnel) Done() <-chan struct{} { return t.done }

// Add registers conn as tunnel id; frames for it are queued from now on. Start
// it once the other side knows the tunnel exists.
func (m *Mux) Add(id uint32, c Conn) (*Tunnel, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrMuxClosed
	}
	if _, dup := m.tunnels[id]; dup {
		return nil, errors.New("tunnel id in use")
	}
	t := &Tunnel{id: id, c: c, m: m, credit: TunnelWindow, wake: make(chan struct{}, 1), more: make(chan struct{}, 1), done: make(chan struct{})}
	m.tunnels[id] = t
	return t, nil
}

// Len is the number of tunnels registered and not yet finished.
func (m *Mux) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.tunnels)
}

// Start runs the tunnel's two pumps: conn → frames (within credit) and
// received frames → conn (granting back what was written).
func (t *Tunnel) Start() {
	t.mu.Lock()
	if t.started || t.aborted {
		t.mu.Unlock()
		return
	}
	t.started, t.live = true, 2
	t.mu.Unlock()
	t.m.wg.Add(2)
	go t.readPump()
	go t.writePump()
}

// Handle takes a tunnel frame (data, grant, close) from the other side. A
// frame for a tunnel this side does not know (one it already closed) is
// dropped; a malformed frame is an error, and a frame that breaks the flow
// control aborts its tunnel.
func (m *Mux) Handle(f Frame) error {
	var id uint32
	switch f.Type {
	case TypeTunnelData:
		tid, data, err := DecodeTunnelData(f.Payload)
		if err != nil {
			return err
		}
		id = tid
		if t := m.get(id); t != nil {
			t.received(data)
		}
	case TypeTunnelGrant:
		tid, n, err := DecodeTunnelGrant(f.Payload)
		if err != nil {
			return err
		}
		id = tid
		if t := m.get(id); t != nil {
			t.granted(int64(n))
		}
	case TypeTunnelClose:
		tid, how, err := DecodeTunnelClose(f.Payload)
		if err != nil {
			return err
		}
		id = tid
		if t := m.get(id); t != nil {
			if how == CloseAbort {
				t.abort(true)
			} else {
				t.mu.Lock()
				t.peerEOF = true
				t.mu.Unlock()
				t.poke()
			}
		}
	default:
		return errors.New("not a tunnel frame: " + f.Type.String())
	}
	return nil
}

// Close aborts every tunnel and waits for their pumps to end. It sends no
// frame: it is for the end of the run, which the other side learns anyway,
// and the stream may no longer be read.
func (m *Mux) Close() {
	m.mu.Lock()
	m.closed = true
	all := make([]*Tunnel, 0, len(m.tunnels))
	for _, t := range m.tunnels {
		all = append(all, t)
	}
	m.mu.Unlock()
	for _, t := range all {
		t.abort(true)
	}
	m.wg.Wait()
}

// Abort ends tunnel id both ways (a local reason: the job ended, a cap).
func (m *Mux) Abort(id uint32) {
	if t := m.get(id); t != nil {
		t.abort(false)
	}
}

func (m *Mux) get(id uint32) *Tunnel {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.tunnels[id]
}

func (m *Mux) remove(t *Tunnel) {
	m.mu.Lock()
	if m.tunnels[t.id] == t {
		delete(m.tunnels, t.id)
	}
	m.mu.Unlock()
}

func (t *Tunnel) poke() { signal(t.wake) }

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func (t *Tunnel) received(data []byte) {
	t.mu.Lock()
	if t.aborted || t.peerEOF || t.queued+int64(len(data)) > TunnelWindow {
		// Data past its credit or after its own EOF: the other side broke
		// the flow control. Only this tunnel pays.
		bad := !t.aborted
		t.mu.Unlock()
		if bad {
			t.abort(false)
		}
		return
	}
	t.queue = append(t.queue, data)
	t.queued += int64(len(data))
	t.mu.Unlock()
	t.poke()
}

func (t *Tunnel) granted(n int64) {
	t.mu.Lock()
	t.credit += n
	bad := t.credit > TunnelWindow
	t.mu.Unlock()
	if bad {
		t.abort(false)
		return
	}
	signal(t.more)
}

// abort ends the tunnel both ways; peer says the other side asked for it.
func (t *Tunnel) abort(peer bool) {
	t.mu.Lock()
	if t.aborted {
		t.mu.Unlock()
		return
	}
	t.aborted, t.peerGone = true, peer
	started := t.started
	t.mu.Unlock()
	_ = t.c.Close() // unblocks the pumps' Read and Write
	if !peer {
		_ = t.m.w.WriteFrame(TypeTunnelClose, EncodeTunnelClose(t.id, CloseAbort))
	}
	t.poke()
	signal(t.more)
	if !started {
		t.m.remove(t)
		close(t.done)
	}
}

// pumpDone is called by each pump as it ends; the last one releases the tunnel.
func (t *Tunnel) pumpDone() {
	t.mu.Lock()
	t.live--
	last := t.live == 0
	t.mu.Unlock()
	if last {
		_ = t.c.Close()
		t.m.remove(t)
		close(t.done)
	}
	t.m.wg.Done()
}

// readPump sends what the local end writes, never more than the credit.
func (t *Tunnel) readPump() {
	defer t.pumpDone()
	buf := make([]byte, MaxTunnelChunk)
	for {
		t.mu.Lock()
		credit, aborted := t.credit, t.aborted
		t.mu.Unlock()
		if aborted {
			return
		}
		if credit <= 0 {
			<-t.more
			continue
		}
		n, err := t.c.Read(buf[:min(credit, MaxTunnelChunk)])
		if n > 0 {
			t.mu.Lock()
			t.credit -= int64(n)
			t.mu.Unlock()
			if werr := t.m.w.WriteFrame(TypeTunnelData, EncodeTunnelData(t.id, buf[:n])); werr != nil {
				t.abort(true) // the stream is gone: nobody to tell
				return
			}
		}
		if errors.Is(err, io.EOF) {
			t.mu.Lock()
			aborted := t.aborted
			t.mu.Unlock()
			if !aborted {
				_ = t.m.w.WriteFrame(TypeTunnelClose, EncodeTunnelClose(t.id, CloseWrite))
			}
			return
		}
		if err != nil {
			t.abort(false)
			return
		}
	}
}

// writePump writes what the other side sent and grants it back.
func (t *Tunnel) writePump() {
	defer t.pumpDone()
	for {
		t.mu.Lock()
		if t.aborted {
			t.mu.Unlock()
			return
		}
		if len(t.queue) == 0 {
			eof := t.peerEOF
			t.mu.Unlock()
			if eof {
				if err := t.c.CloseWrite(); err != nil {
					t.abort(false)
				}
				return
			}
			<-t.wake
			continue
		}
		data := t.queue[0]
		t.queue[0] = nil
		t.queue = t.queue[1:]
		t.mu.Unlock()
		if _, err := t.c.Write(data); err != nil {
			t.abort(false)
			return
		}
		t.mu.Lock()
		t.queued -= int64(len(data))
		t.mu.Unlock()
		if err := t.m.w.WriteFrame(TypeTunnelGrant, EncodeTunnelGrant(t.id, uint32(len(data)))); err != nil {
			t.abort(true)
			return
		}
	}
}
