package client

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/asterhq/aster/api"
)

// TerminalOptions open a terminal in a session.
type TerminalOptions struct {
	// Cols and Rows are its size (0: 80 by 24).
	Cols, Rows int
	// Name names it (for Resize from elsewhere); empty lets the server name it.
	Name string
}

// Terminal is an interactive terminal in a session (GET
// /v1/sessions/{id}/pty, a WebSocket). Read returns its output as it comes,
// Write types into it; both are raw bytes, escape sequences included. Read
// returns io.EOF once the server closed it; CloseReason then says why (the
// command's exit, or the session's end).
type Terminal struct {
	// Name is the terminal's name (the server's X-Aster-Terminal).
	Name string

	c       *Client
	session string
	conn    io.ReadWriteCloser
	br      *bufio.Reader

	rmu    sync.Mutex
	msg    int64 // bytes left in the data frame being read
	reason string

	wmu    sync.Mutex
	closed bool

	closeOnce sync.Once
	closeErr  error
}

// maxControl bounds a control frame's payload (RFC 6455: 125 bytes).
const maxControl = 125

// OpenTerminal opens a terminal in session id, running a login shell.
// Cancelling ctx before it returns abandons the handshake; afterwards close
// the Terminal.
func (c *Client) OpenTerminal(ctx context.Context, id string, o TerminalOptions) (*Terminal, error) {
	q := url.Values{}
	if o.Cols > 0 {
		q.Set("cols", strconv.Itoa(o.Cols))
	}
	if o.Rows > 0 {
		q.Set("rows", strconv.Itoa(o.Rows))
	}
	if o.Name != "" {
		q.Set("terminal", o.Name)
	}
	route := sessionPath(id, "/pty")
	target := strings.TrimRight(c.base.String(), "/") + route
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, err
	}
	var nonce [16]byte
	_, _ = rand.Read(nonce[:])
	key := base64.StdEncoding.EncodeToString(nonce[:])
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", key)
	c.decorate(req)
	// The terminal lives as long as it is open: no overall timeout.
	hc := *c.http
	hc.Timeout = 0
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v", route, api.ErrUnavailable, err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		defer resp.Body.Close()
		return nil, apiError(resp)
	}
	conn, ok := resp.Body.(io.ReadWriteCloser)
	if !ok || resp.Header.Get("Sec-WebSocket-Accept") != acceptKey(key) {
		resp.Body.Close()
		return nil, fmt.Errorf("%s: %w: the server's WebSocket handshake is not valid", route, api.ErrUnavailable)
	}
	return &Terminal{Name: resp.Header.Get(api.HeaderTerminal), c: c, session: id, conn: conn, br: bufio.NewReaderSize(conn, 32<<10)}, nil
}

func acceptKey(key string) string {
	h := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	return base64.StdEncoding.EncodeToString(h[:])
}

// Resize changes the terminal's size.
func (t *Terminal) Resize(ctx context.Context, cols, rows int) error {
	return t.c.sessionCall(ctx, http.MethodPost, sessionPath(t.session, "/pty/resize"),
		api.TerminalResize{Terminal: t.Name, Cols: cols, Rows: rows}, http.StatusNoContent, nil)
}

// CloseReason is the reason the server gave when it closed the terminal
// ("exit 0", "session ended (deleted)", ...); "" while it is open.
func (t *Terminal) CloseReason() string {
	t.rmu.Lock()
	defer t.rmu.Unlock()
	return t.reason
}

// WebSocket opcodes.
const (
	opCont   = 0x0
	opText   = 0x1
	opBinary = 0x2
	opClose  = 0x8
	opPing   = 0x9
	opPong   = 0xA
)

// Read reads the terminal's output.
func (t *Terminal) Read(p []byte) (int, error) {
	t.rmu.Lock()
	defer t.rmu.Unlock()
	for t.msg == 0 {
		if t.reason != "" {
			return 0, io.EOF
		}
		op, n, err := t.frameHeader()
		if err != nil {
			return 0, err
		}
		switch op {
		case opCont, opText, opBinary:
			t.msg = n
		case opClose, opPing, opPong:
			if n > maxControl {
				return 0, errors.New("terminal: control frame too large")
			}
			b := make([]byte, n)
			if _, err := io.ReadFull(t.br, b); err != nil {
				return 0, err
			}
			switch op {
			case opPing:
				_ = t.writeFrame(opPong, b)
			case opClose:
				t.reason = "closed"
				if len(b) >= 2 {
					t.reason = strings.ToValidUTF8(string(b[2:]), "")
					if t.reason == "" {
						t.reason = "closed (" + strconv.Itoa(int(binary.BigEndian.Uint16(b))) + ")"
					}
				}
				_ = t.writeFrame(opClose, b[:min(len(b), 2)])
				_ = t.closeConn()
				return 0, io.EOF
			}
		default:
			return 0, fmt.Errorf("terminal: unknown frame opcode %#x", op)
		}
	}
	k := int(min(int64(len(p)), t.msg))
	n, err := t.br.Read(p[:k])
	t.msg -= int64(n)
	return n, err
}

// frameHeader reads a frame's header: its opcode and payload length. The
// server's frames are not masked.
func (t *Terminal) frameHeader() (op byte, n int64, err error) {
	var h [2]byte
	if _, err := io.ReadFull(t.br, h[:]); err != nil {
		return 0, 0, err
	}
	if h[1]&0x80 != 0 {
		return 0, 0, errors.New("terminal: the server sent a masked frame")
	}
	op, n = h[0]&0x0F, int64(h[1]&0x7F)
	switch n {
	case 126:
		var b [2]byte
		if _, err := io.ReadFull(t.br, b[:]); err != nil {
			return 0, 0, err
		}
		n = int64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		if _, err := io.ReadFull(t.br, b[:]); err != nil {
			return 0, 0, err
		}
		u := binary.BigEndian.Uint64(b[:])
		if u > 1<<62 {
			return 0, 0, errors.New("terminal: frame length out of range")
		}
		n = int64(u)
	}
	return op, n, nil
}

// maxInputMessage is the most one message carries (the server takes 64 KiB).
const maxInputMessage = 32 << 10

// Write types p into the terminal (binary messages).
func (t *Terminal) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		k := min(len(p), maxInputMessage)
		if err := t.writeFrame(opBinary, p[:k]); err != nil {
			return n, err
		}
		n, p = n+k, p[k:]
	}
	return n, nil
}

// writeFrame writes one masked frame, as a client must.
func (t *Terminal) writeFrame(op byte, p []byte) error {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	if t.closed {
		return errors.New("terminal: closed")
	}
	hdr := make([]byte, 0, 14+len(p))
	hdr = append(hdr, 0x80|op)
	switch n := len(p); {
	case n < 126:
		hdr = append(hdr, 0x80|byte(n))
	case n <= 0xFFFF:
		hdr = append(hdr, 0x80|126)
		hdr = binary.BigEndian.AppendUint16(hdr, uint16(n))
	default:
		hdr = append(hdr, 0x80|127)
		hdr = binary.BigEndian.AppendUint64(hdr, uint64(n))
	}
	var mask [4]byte
	_, _ = rand.Read(mask[:])
	hdr = append(hdr, mask[:]...)
	for i, b := range p {
		hdr = append(hdr, b^mask[i%4])
	}
	_, err := t.conn.Write(hdr)
	if op == opClose {
		t.closed = true
	}
	return err
}

// Close closes the terminal: the server ends its command's processes. A
// terminal the server closed already (Read returned io.EOF, perhaps in
// another goroutine answering this very Close) closes without error.
func (t *Terminal) Close() error {
	_ = t.writeFrame(opClose, binary.BigEndian.AppendUint16(nil, 1000))
	return t.closeConn()
}

// closeConn closes the connection once; later calls return the first one's
// error.
func (t *Terminal) closeConn() error {
	t.closeOnce.Do(func() { t.closeErr = t.conn.Close() })
	return t.closeErr
}
