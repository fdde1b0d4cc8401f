package sandboxapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/coder/websocket"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/initproto"
	"github.com/asterhq/aster/internal/sandbox"
)

// Terminals (GET /v1/sessions/{id}/pty): a WebSocket whose messages are a
// terminal's raw input and output, the terminal itself allocated by
// aster-init inside the session's sandbox. The host relays bytes only: a
// flood is paced by the client's reading (the terminal's programs block on
// their writes), escape sequences are bytes like any other.

// maxTerminalMessage bounds one message of terminal input (a paste is many).
const maxTerminalMessage = 64 << 10

// terminalName is what a client may name a terminal (?terminal=).
var terminalName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// terminalTable holds the open terminals by session, each with the channel
// its resizes go to.
type terminalTable struct {
	mu     sync.Mutex
	bySess map[string]map[string]chan sandbox.TermSize
}

func (t *terminalTable) add(sess, name string) (chan sandbox.TermSize, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.bySess == nil {
		t.bySess = map[string]map[string]chan sandbox.TermSize{}
	}
	m := t.bySess[sess]
	if m == nil {
		m = map[string]chan sandbox.TermSize{}
		t.bySess[sess] = m
	}
	if _, dup := m[name]; dup {
		return nil, sandbox.Invalidf("terminal %q is already open in this session; name another or leave ?terminal= out", name)
	}
	// The latest size wins: a resize replaces one not yet applied.
	ch := make(chan sandbox.TermSize, 1)
	m[name] = ch
	return ch, nil
}

func (t *terminalTable) remove(sess, name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.bySess[sess], name)
	if len(t.bySess[sess]) == 0 {
		delete(t.bySess, sess)
	}
}

// resize sends size to the terminal name of sess ("" for its only one).
func (t *terminalTable) resize(sess, name string, size sandbox.TermSize) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.bySess[sess]
	if name == "" {
		switch len(m) {
		case 0:
			return fmt.Errorf("%w: this session has no terminal open", api.ErrNotFound)
		case 1:
			for n := range m {
				name = n
			}
		default:
			return sandbox.Invalidf("this session has %d terminals open (%s): name one in \"terminal\"", len(m), strings.Join(slices.Sorted(maps.Keys(m)), ", "))
		}
	}
	ch, ok := m[name]
	if !ok {
		return fmt.Errorf("%w: no terminal %q open in this session", api.ErrNotFound, clipPath(name))
	}
	select {
	case <-ch:
	default:
	}
	ch <- size
	return nil
}

// termSize reads a size from the query (cols and rows; 80x24 by default).
func termSize(r *http.Request) (sandbox.TermSize, error) {
	size := sandbox.TermSize{Cols: 80, Rows: 24}
	for name, v := range map[string]*uint16{"cols": &size.Cols, "rows": &size.Rows} {
		q := r.URL.Query().Get(name)
		if q == "" {
			continue
		}
		n, err := strconv.Atoi(q)
		if err != nil || n < 1 || n > initproto.MaxTermSize {
			return size, sandbox.Invalidf("%s=%q: give a number from 1 to %d", name, q, initproto.MaxTermSize)
		}
		*v = uint16(n)
	}
	return size, nil
}

// openTerminal answers GET /v1/sessions/{id}/pty: it checks the request,
// upgrades it to a WebSocket and relays the terminal until its command
// exits, the client goes away or the session ends.
func (s *Server) openTerminal(w http.ResponseWriter, r *http.Request, sess *sandbox.Sandbox) {
	size, err := termSize(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	name := r.URL.Query().Get("terminal")
	if name == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		name = "t-" + hex.EncodeToString(b[:])
	} else if !terminalName.MatchString(name) {
		s.writeError(w, r, sandbox.Invalidf("terminal=%s: a name is 1 to 64 letters, digits, '-' or '_'", clipPath(name)))
		return
	}
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		s.writeError(w, r, sandbox.Invalidf("%s is a WebSocket: send Upgrade: websocket (a browser's new WebSocket(url), websocat, or `aster session shell`)", api.RouteSessionPTY))
		return
	}
	resize, err := s.terminals.add(sess.ID(), name)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer s.terminals.remove(sess.ID(), name)
	w.Header().Set(api.HeaderTerminal, name)
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		s.log.Debug("terminal handshake", "session", sess.ID(), "err", err)
		return
	}
	conn.SetReadLimit(maxTerminalMessage)

	// The terminal ends with the session, the client, or its command.
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(r.Context()))
	defer cancel(nil)
	go func() {
		select {
		case <-sess.Done():
			cancel(fmt.Errorf("session ended (%s)", sess.EndReason()))
		case <-ctx.Done():
		}
	}()
	in, inW := io.Pipe()
	go func() {
		for {
			// Text and binary messages alike are typed in as they are.
			_, b, err := conn.Read(ctx)
			if err != nil {
				inW.Close()
				cancel(errors.New("the client closed the terminal"))
				return
			}
			if _, err := inW.Write(b); err != nil {
				return
			}
		}
	}()
	out := func(b []byte) {
		// Binary: the output is bytes, cut anywhere, not UTF-8 text.
		if err := conn.Write(ctx, websocket.MessageBinary, b); err != nil {
			cancel(errors.New("the client stopped reading"))
		}
	}
	s.log.Debug("terminal opened", "session", sess.ID(), "terminal", name, "cols", size.Cols, "rows", size.Rows)
	res, err := sess.Terminal(ctx, sandbox.TerminalSpec{Size: size, Input: in, Output: out, Resize: resize})
	in.Close()
	reason := terminalEnd(res, err)
	if r := sess.EndReason(); r != "" {
		// The session's end destroyed the sandbox under the terminal.
		reason = "session ended (" + r + ")"
	} else if c := context.Cause(ctx); c != nil {
		reason = c.Error()
	}
	s.log.Debug("terminal closed", "session", sess.ID(), "terminal", name, "status", res.Status, "reason", reason)
	_ = conn.Close(websocket.StatusNormalClosure, clipReason(reason))
}

// terminalEnd says how a terminal's command ended, for the close message.
func terminalEnd(res sandbox.Result, err error) string {
	switch {
	case err != nil:
		return "error: " + err.Error()
	case res.Status == sandbox.StatusOK || res.Status == sandbox.StatusExitNonzero:
		return "exit " + strconv.Itoa(res.ExitCode)
	case res.Error != "":
		return string(res.Status) + ": " + res.Error
	}
	return string(res.Status)
}

// clipReason fits a close reason into a control frame (123 bytes), on a
// rune boundary.
func clipReason(s string) string {
	if len(s) <= 120 {
		return s
	}
	return strings.ToValidUTF8(s[:120], "")
}

// resizeTerminal answers POST /v1/sessions/{id}/pty/resize.
func (s *Server) resizeTerminal(w http.ResponseWriter, r *http.Request, sess *sandbox.Sandbox) {
	var req api.TerminalResize
	if err := s.readSmallJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.Cols < 1 || req.Rows < 1 || req.Cols > initproto.MaxTermSize || req.Rows > initproto.MaxTermSize {
		s.writeError(w, r, sandbox.Invalidf("cols %d, rows %d: each goes from 1 to %d", req.Cols, req.Rows, initproto.MaxTermSize))
		return
	}
	if err := s.terminals.resize(sess.ID(), req.Terminal, sandbox.TermSize{Cols: uint16(req.Cols), Rows: uint16(req.Rows)}); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
