package initproto

import (
	"encoding/binary"
	"fmt"
	"io"
	"sync"
)

// Exec channels: a session's holder (aster-init -hold) serves many execs over
// its one pair of streams. Each exec is a channel, numbered by the host in
// increasing order; each direction of a channel carries the bytes of the
// one-shot protocol (hello, job, output, result) of that exec alone, cut
// into channel frames. The holder tags what it sends with the channel of the
// exec it serves, so a job's output, whatever bytes it holds, is payload of
// its own channel and never a frame of another.
const (
	// TypeChan carries a piece of a channel's byte stream: a big-endian
	// uint32 channel id, then the bytes. The host opens a channel with its
	// first TypeChan frame (one without bytes, so that the exec says hello).
	TypeChan Type = 'X'
	// TypeChanEnd ends one direction of a channel: the uint32 channel id.
	// From the host it means the host is gone for that exec (the holder ends
	// its job); from the holder, that the exec is over (its result, if any,
	// was sent before).
	TypeChanEnd Type = 'x'
)

// chanHeader is the size of a channel frame's id.
const chanHeader = 4

// DecodeChan splits a TypeChan payload into its channel id and bytes.
func DecodeChan(p []byte) (uint32, []byte, error) {
	if len(p) < chanHeader {
		return 0, nil, fmt.Errorf("channel frame of %d bytes, want at least %d", len(p), chanHeader)
	}
	return binary.BigEndian.Uint32(p), p[chanHeader:], nil
}

// DecodeChanEnd parses a TypeChanEnd payload.
func DecodeChanEnd(p []byte) (uint32, error) {
	if len(p) != chanHeader {
		return 0, fmt.Errorf("channel end frame of %d bytes, want %d", len(p), chanHeader)
	}
	return binary.BigEndian.Uint32(p), nil
}

// EncodeChanEnd is the payload of a TypeChanEnd frame, and of a TypeChan
// frame that opens the channel.
func EncodeChanEnd(id uint32) []byte {
	return binary.BigEndian.AppendUint32(nil, id)
}

// ChanWriter is the writing end of one channel over a shared Writer: each
// Write becomes channel frames of ID (safe for concurrent use, as the Writer
// is; one Write's frames may interleave with other channels' frames, never
// with another Write of this channel made concurrently, as each frame is
// written whole).
type ChanWriter struct {
	W  *Writer
	ID uint32
}

// maxChanData is the most stream bytes one channel frame carries.
const maxChanData = MaxPayload - chanHeader

func (c ChanWriter) Write(p []byte) (int, error) {
	n := len(p)
	buf := make([]byte, chanHeader, chanHeader+min(len(p), maxChanData))
	binary.BigEndian.PutUint32(buf, c.ID)
	for len(p) > 0 {
		k := min(len(p), maxChanData)
		buf = append(buf[:chanHeader], p[:k]...)
		if err := c.W.WriteFrame(TypeChan, buf); err != nil {
			return n - len(p), err
		}
		p = p[k:]
	}
	return n, nil
}

// ChanBuffer is the reading end of one channel: the demultiplexer writes
// what arrives for the channel, the exec's Reader reads it. Write blocks
// while Max bytes wait unread, so one slow reader holds up the stream it
// shares only once it is that far behind; Close ends the stream (a read
// then drains what is left, then gets io.EOF) and unblocks every writer.
type ChanBuffer struct {
	mu     sync.Mutex
	cond   *sync.Cond
	buf    []byte
	max    int
	closed bool
}

// NewChanBuffer returns an empty ChanBuffer holding at most max unread bytes.
func NewChanBuffer(max int) *ChanBuffer {
	b := &ChanBuffer{max: max}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// Write appends p. After Close it drops p and returns io.ErrClosedPipe.
func (b *ChanBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for len(b.buf) >= b.max && !b.closed {
		b.cond.Wait()
	}
	if b.closed {
		return 0, io.ErrClosedPipe
	}
	b.buf = append(b.buf, p...)
	b.cond.Broadcast()
	return len(p), nil
}

// Read takes what is buffered, waiting for something or the end.
func (b *ChanBuffer) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for len(b.buf) == 0 && !b.closed {
		b.cond.Wait()
	}
	if len(b.buf) == 0 {
		return 0, io.EOF
	}
	n := copy(p, b.buf)
	b.buf = b.buf[n:]
	if len(b.buf) == 0 {
		b.buf = nil
	}
	b.cond.Broadcast()
	return n, nil
}

// Close ends the stream.
func (b *ChanBuffer) Close() error {
	b.mu.Lock()
	b.closed = true
	b.cond.Broadcast()
	b.mu.Unlock()
	return nil
}
