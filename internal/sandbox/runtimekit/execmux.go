package runtimekit

import (
	"context"
	"errors"
	"fmt"
	"github.com/asterhq/aster/internal/sandbox"
	"io"
	"sync"

	"github.com/asterhq/aster/internal/initproto"
)

// ExecMux is the host's side of a session holder that serves execs itself
// (its hello says Execs): every exec is a channel of the holder's one pair of
// streams, and the mux hands each channel's frames to that exec alone. A
// channel carries the one-shot protocol, so RunExec drives an exec the same
// way whether it is a channel or a further init started by the runtime.
//
// The holder is aster-init, reporting beside the untrusted jobs exactly as a
// one-shot init does; what a job writes is payload of its own channel, so it
// cannot reach another exec's stream.
type ExecMux struct {
	fw *initproto.Writer

	mu    sync.Mutex
	next  uint32
	chans map[uint32]*MuxExec
	dead  bool // the holder's stream ended
	err   error
	done  chan struct{}
}

// hostChanBuffer is how much of one exec's stream the host holds unread
// before the holder's stream waits for that exec's reader.
const hostChanBuffer = 8 << 20

// NewExecMux serves execs over a holder's streams: w carries frames to the
// holder, r its frames (its hello already read). It reads r until it ends.
func NewExecMux(w io.Writer, r *initproto.Reader) *ExecMux {
	m := &ExecMux{fw: initproto.NewWriter(w), chans: map[uint32]*MuxExec{}, done: make(chan struct{})}
	go m.read(r)
	return m
}

// ErrMuxClosed: the holder's stream has ended, no exec can be opened.
var ErrMuxClosed = errors.New("the session's holder has ended")

// Done is closed once the holder's stream has ended.
func (m *ExecMux) Done() <-chan struct{} { return m.done }

// Err, once Done is closed, says why the stream ended: nil when the holder
// closed it (the sandbox ended), else what was wrong in it. A holder that
// said something wrong is not to be trusted: its runtime destroys it.
func (m *ExecMux) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

// Open starts a new exec channel.
func (m *ExecMux) Open() (*MuxExec, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dead {
		return nil, ErrMuxClosed
	}
	m.next++
	x := &MuxExec{m: m, id: m.next, in: initproto.NewChanBuffer(hostChanBuffer), exited: make(chan struct{})}
	x.r = initproto.NewReader(x.in)
	m.chans[x.id] = x
	// An empty frame opens the channel: the holder starts the exec, whose
	// init says hello before the host sends anything more.
	if err := m.fw.WriteFrame(initproto.TypeChan, initproto.EncodeChanEnd(x.id)); err != nil {
		delete(m.chans, x.id)
		return nil, fmt.Errorf("%w: %v", ErrMuxClosed, err)
	}
	return x, nil
}

func (m *ExecMux) read(r *initproto.Reader) {
	var bad error
	defer func() {
		m.mu.Lock()
		m.dead, m.err = true, bad
		chans := m.chans
		m.chans = map[uint32]*MuxExec{}
		m.mu.Unlock()
		for _, x := range chans {
			x.ended()
		}
		close(m.done)
	}()
	for {
		f, err := r.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				bad = err
			}
			return
		}
		switch f.Type {
		case initproto.TypeChan:
			id, data, err := initproto.DecodeChan(f.Payload)
			if err != nil {
				bad = err // the holder speaks no other way: nothing it says is trusted now
				return
			}
			if x := m.get(id); x != nil {
				_, _ = x.in.Write(data)
			}
		case initproto.TypeChanEnd:
			id, err := initproto.DecodeChanEnd(f.Payload)
			if err != nil {
				bad = err
				return
			}
			m.mu.Lock()
			x := m.chans[id]
			delete(m.chans, id)
			m.mu.Unlock()
			if x != nil {
				x.ended()
			}
		case initproto.TypeHello:
			// An answer to a hello request: nothing to do.
		default:
			bad = fmt.Errorf("unexpected %s frame from the session's holder", f.Type)
			return
		}
	}
}

func (m *ExecMux) get(id uint32) *MuxExec {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.chans[id]
}

// MuxExec is one exec channel.
type MuxExec struct {
	m      *ExecMux
	id     uint32
	in     *initproto.ChanBuffer
	r      *initproto.Reader
	exited chan struct{}

	endOnce, closeOnce sync.Once
}

// ID is the channel's number.
func (x *MuxExec) ID() uint32 { return x.id }

// Reader reads the exec's frames.
func (x *MuxExec) Reader() *initproto.Reader { return x.r }

// Exited is closed when the holder has ended the exec (or itself ended).
func (x *MuxExec) Exited() <-chan struct{} { return x.exited }

func (x *MuxExec) ended() {
	x.endOnce.Do(func() {
		x.in.Close()
		close(x.exited)
	})
}

// Discard drops whatever the holder still sends for this exec: its reader
// is done (RunExec returned), and the holder's stream must not wait for it.
func (x *MuxExec) Discard() { x.in.Close() }

// Write sends bytes of the exec's stream to the holder.
func (x *MuxExec) Write(p []byte) (int, error) {
	n, err := initproto.ChanWriter{W: x.m.fw, ID: x.id}.Write(p)
	if err != nil {
		err = fmt.Errorf("exec channel %d: %w", x.id, err)
	}
	return n, err
}

// Close tells the holder the host is gone for this exec: it ends the job.
func (x *MuxExec) Close() error {
	var err error
	x.closeOnce.Do(func() {
		err = x.m.fw.WriteFrame(initproto.TypeChanEnd, initproto.EncodeChanEnd(x.id))
	})
	return err
}

// ChannelJob says job can run over an exec channel of a holder that serves
// execs while other ways remain for the rest: a command with its argv, env,
// working directory, stdin and limits. A job with a workspace or an export
// (the file API), a terminal or egress is a further init started by the
// runtime (oci, docker), as each needs what only a one-shot init does alone
// in its process (a loopback port, the whole of /work, a terminal).
func ChannelJob(job sandbox.Job) bool {
	return job.Terminal == nil && job.Egress == nil && job.Export == nil &&
		job.Workspace.Tar == nil && len(job.Workspace.Files) == 0
}

// Run runs job over a new exec channel of the holder, driven by RunExec with
// p's sandbox parts (the channel fills in W, R and Exited). A holder that
// cannot open one more channel has ended: the session is gone.
func (m *ExecMux) Run(ctx context.Context, job sandbox.Job, p ExecParts) (sandbox.Result, error) {
	x, err := m.Open()
	if err != nil {
		return ExecFailed(p.ID, p.Runtime, fmt.Errorf("%w: %v", sandbox.ErrSessionGone, err))
	}
	defer x.Discard()
	p.W, p.R, p.Exited = x, x.Reader(), x.Exited()
	return RunExec(ctx, job, p)
}
