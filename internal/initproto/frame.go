// Package initproto is the framed protocol between the host and aster-init, the
// small agent that runs as PID 1 inside every sandbox. The host writes a job
// (header, workspace tar, stdin) to the sandbox's stdin; aster-init answers on
// its stdout with output chunks and one final result.
//
// A frame is one type byte, a big-endian uint32 payload length, and the payload.
// Payloads are at most MaxPayload bytes; a larger length is a protocol error, so
// neither side ever allocates what the other claims.
package initproto

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Version is the protocol version carried in the job header and the hello.
const Version = 3

// MaxPayload is the largest payload a frame may carry.
const MaxPayload = 1 << 20

// HeaderSize is the size of a frame header.
const HeaderSize = 5

// smallFrame is the largest payload written with its header in one write:
// frame and header fit PIPE_BUF (4096), which Linux writes to a pipe atomically.
const smallFrame = 4096 - HeaderSize

// Type is a frame type.
type Type byte

// Frames the host sends to aster-init.
const (
	TypeJob      Type = 'J' // JSON JobHeader; always first
	TypeTar      Type = 'T' // a chunk of the workspace tar stream
	TypeTarEnd   Type = 't' // end of the workspace tar stream
	TypeStdin    Type = 'I' // a chunk of the command's stdin
	TypeStdinEnd Type = 'i' // the command's stdin is closed
)

// Frames aster-init sends to the host.
const (
	TypeHello  Type = 'H' // JSON Hello; sent once at start, before the job arrives
	TypeStdout Type = 'O' // a chunk of the command's stdout
	TypeStderr Type = 'E' // a chunk of the command's stderr
	TypeResult Type = 'R' // JSON ResultFrame; always last
	// TypeStdinWant grants the host more stdin: a 4-byte big-endian count of
	// bytes init can take now. The host sends no stdin beyond what init has
	// granted, so the stream from the host is never backed up behind a job
	// that does not read: init keeps reading it, and sees at once when the
	// host goes away.
	TypeStdinWant Type = 'W'
)

// EncodeWant is the payload of a TypeStdinWant frame.
func EncodeWant(n uint32) []byte {
	return []byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}
}

// DecodeWant parses a TypeStdinWant payload.
func DecodeWant(p []byte) (uint32, error) {
	if len(p) != 4 {
		return 0, fmt.Errorf("stdin-want frame of %d bytes, want 4", len(p))
	}
	return uint32(p[0])<<24 | uint32(p[1])<<16 | uint32(p[2])<<8 | uint32(p[3]), nil
}

func (t Type) String() string {
	switch t {
	case TypeJob:
		return "job"
	case TypeTar:
		return "tar"
	case TypeTarEnd:
		return "tar-end"
	case TypeStdin:
		return "stdin"
	case TypeStdinEnd:
		return "stdin-end"
	case TypeHello:
		return "hello"
	case TypeStdout:
		return "stdout"
	case TypeStderr:
		return "stderr"
	case TypeResult:
		return "result"
	case TypeStdinWant:
		return "stdin-want"
	case TypeTunnelOpen:
		return "tunnel-open"
	case TypeTunnelAnswer:
		return "tunnel-answer"
	case TypeTunnelData:
		return "tunnel-data"
	case TypeTunnelGrant:
		return "tunnel-grant"
	case TypeTunnelClose:
		return "tunnel-close"
	case TypeExport:
		return "export"
	case TypeExportEnd:
		return "export-end"
	case TypeResize:
		return "resize"
	case TypeChan:
		return "chan"
	case TypeChanEnd:
		return "chan-end"
	}
	return fmt.Sprintf("unknown(%#x)", byte(t))
}

func (t Type) known() bool { return t.String()[0] != 'u' }

// ErrFrame is returned for a malformed frame: unknown type or oversize length.
var ErrFrame = errors.New("malformed frame")

// Frame is one decoded frame. Payload is owned by the caller.
type Frame struct {
	Type    Type
	Payload []byte
}

// Writer writes frames; it is safe for concurrent use and splits data payloads
// larger than MaxPayload into several frames of the same type.
type Writer struct {
	mu    sync.Mutex
	w     io.Writer
	hdr   [HeaderSize]byte
	small [HeaderSize + smallFrame]byte
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// WriteFrame writes p as one or more frames of type t. An empty p writes one
// empty frame (used for end markers).
func (fw *Writer) WriteFrame(t Type, p []byte) error {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	if len(p) <= smallFrame {
		// One write for a small frame: a pipe takes it atomically, so a reader
		// that joins the stream late (an attach) sees whole frames or none.
		buf := fw.small[:HeaderSize+len(p)]
		buf[0] = byte(t)
		binary.BigEndian.PutUint32(buf[1:], uint32(len(p)))
		copy(buf[HeaderSize:], p)
		_, err := fw.w.Write(buf)
		return err
	}
	for {
		n := min(len(p), MaxPayload)
		fw.hdr[0] = byte(t)
		binary.BigEndian.PutUint32(fw.hdr[1:], uint32(n))
		if _, err := fw.w.Write(fw.hdr[:]); err != nil {
			return err
		}
		if n > 0 {
			if _, err := fw.w.Write(p[:n]); err != nil {
				return err
			}
		}
		p = p[n:]
		if len(p) == 0 {
			return nil
		}
	}
}

// Reader reads frames.
type Reader struct {
	r   *bufio.Reader
	hdr [HeaderSize]byte
}

// NewReader returns a Reader on r.
func NewReader(r io.Reader) *Reader {
	if br, ok := r.(*bufio.Reader); ok {
		return &Reader{r: br}
	}
	return &Reader{r: bufio.NewReaderSize(r, 64<<10)}
}

// Next reads the next frame. It returns io.EOF only at a clean frame boundary and
// io.ErrUnexpectedEOF for a stream cut inside a frame.
func (fr *Reader) Next() (Frame, error) {
	if _, err := io.ReadFull(fr.r, fr.hdr[:]); err != nil {
		return Frame{}, err
	}
	t := Type(fr.hdr[0])
	n := binary.BigEndian.Uint32(fr.hdr[1:])
	if !t.known() {
		return Frame{}, fmt.Errorf("%w: unknown type %#x", ErrFrame, fr.hdr[0])
	}
	if n > MaxPayload {
		return Frame{}, fmt.Errorf("%w: %s payload of %d bytes exceeds %d", ErrFrame, t, n, MaxPayload)
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(fr.r, p); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return Frame{}, err
	}
	return Frame{Type: t, Payload: p}, nil
}

// ChunkWriter adapts a frame type to io.Writer: each Write becomes frames of t.
type ChunkWriter struct {
	W    *Writer
	Type Type
}

func (c ChunkWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if err := c.W.WriteFrame(c.Type, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// ChunkBuffer gathers small writes (tar headers are 512 bytes) into frames of
// type Type of up to its capacity; Flush sends what is left.
type ChunkBuffer struct {
	fw  *Writer
	t   Type
	buf []byte
}

// NewChunkBuffer returns a ChunkBuffer writing frames of t of up to size bytes.
func NewChunkBuffer(fw *Writer, t Type, size int) *ChunkBuffer {
	return &ChunkBuffer{fw: fw, t: t, buf: make([]byte, 0, size)}
}

func (c *ChunkBuffer) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		k := min(cap(c.buf)-len(c.buf), len(p))
		c.buf = append(c.buf, p[:k]...)
		p = p[k:]
		if len(c.buf) == cap(c.buf) {
			if err := c.Flush(); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

// Flush sends the buffered bytes as one frame.
func (c *ChunkBuffer) Flush() error {
	if len(c.buf) == 0 {
		return nil
	}
	err := c.fw.WriteFrame(c.t, c.buf)
	c.buf = c.buf[:0]
	return err
}
