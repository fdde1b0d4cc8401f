package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/asterhq/aster/internal/textclip"
	"github.com/asterhq/aster/internal/units"
)

// Sessions of the streamable HTTP transport. The SDK keeps a session from its
// initialize until the client deletes it or it has been idle for the session
// timeout, and sets no bound on how many: each initialize left about 9 KiB
// (a goroutine and the session's state), plus the headers of the request that
// opened it and every byte of its initialize parameters, for half an hour.
// sessionGate stands in front of the SDK: it counts sessions per token and in
// all, refuses one past either cap with a JSON-RPC error that names the cap,
// and passes the SDK an opening request cut down to what a session needs.

const (
	// maxOpeningBytes bounds the body of a request that opens a session (an
	// initialize: a few hundred bytes from every client seen).
	maxOpeningBytes = 64 << 10
	// maxClientInfoBytes bounds each clientInfo string a session keeps.
	maxClientInfoBytes = 256
	// maxCapabilityBytes bounds each client capability a session keeps.
	maxCapabilityBytes = 1 << 10
	// maxKeptHeaderBytes bounds each header value the opening request keeps,
	// and maxParamHeaders the Mcp-Param-* values.
	maxKeptHeaderBytes = 1 << 10
	maxParamHeaders    = 16
	// sessionRetryAfter is the Retry-After of a refusal, in seconds.
	sessionRetryAfter = 30
	// codeSessionLimit is the JSON-RPC error code of a refused session (the
	// range -32000 to -32099 is the implementation's own).
	codeSessionLimit = -32000
	// methodInitialize opens a session.
	methodInitialize = "initialize"
	// sessionIDHeader names a request's session.
	sessionIDHeader = "Mcp-Session-Id"
)

// keptHeaders are the headers the SDK reads from a request that opens a
// session; the session keeps the request's header map for its whole life, so
// it gets these only.
var keptHeaders = []string{"Content-Type", "Accept", "Mcp-Protocol-Version", "Last-Event-Id", "Mcp-Method", "Mcp-Name"}

// sessionGate counts the sessions of the SDK handler next by owner (the token
// that opened them) and caps them.
type sessionGate struct {
	next     http.Handler
	live     func() iter.Seq[*mcp.ServerSession]
	max      int
	perOwner int
	timeout  time.Duration
	log      *slog.Logger

	mu       sync.Mutex
	owner    map[string]string // open session id → owner
	held     map[string]int    // owner → sessions open or being opened
	total    int
	lastWarn time.Time
}

func newSessionGate(next http.Handler, live func() iter.Seq[*mcp.ServerSession], o HTTPOptions, log *slog.Logger) *sessionGate {
	return &sessionGate{next: next, live: live, max: o.MaxSessions, perOwner: min(o.MaxSessionsPerToken, o.MaxSessions),
		timeout: o.SessionTimeout, log: log, owner: map[string]string{}, held: map[string]int{}}
}

func (g *sessionGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sid := r.Header.Get(sessionIDHeader)
	switch {
	case r.Method == http.MethodPost && sid == "":
		g.open(w, r)
	case r.Method == http.MethodDelete && sid != "":
		rec := &statusRecorder{ResponseWriter: w}
		g.next.ServeHTTP(rec, r)
		if rec.status == http.StatusNoContent {
			g.forget(sid)
		}
	default:
		g.next.ServeHTTP(w, r)
	}
}

// open serves a POST without a session: an initialize opens a session if
// the caps allow it; anything else the SDK answers with a session that ends
// with the request. Either way the SDK gets the message as this gate read
// it, re-encoded, so that the two cannot disagree on what it is.
func (g *sessionGate) open(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxOpeningBytes+1))
	if err != nil {
		writeRPCError(w, http.StatusBadRequest, nil, jsonrpcInvalidRequest, fmt.Sprintf("reading the request body: %v", err), nil)
		return
	}
	if len(body) > maxOpeningBytes {
		writeRPCError(w, http.StatusRequestEntityTooLarge, nil, jsonrpcInvalidRequest,
			fmt.Sprintf("a request that opens a session (initialize) may be at most %s", units.FormatBytes(maxOpeningBytes)), nil)
		return
	}
	msg, err := readOpening(body)
	if err != nil {
		writeRPCError(w, http.StatusBadRequest, msg.ID, jsonrpcInvalidRequest, err.Error(), nil)
		return
	}
	body, err = json.Marshal(msg)
	if err != nil {
		writeRPCError(w, http.StatusInternalServerError, msg.ID, jsonrpcInternalError, err.Error(), nil)
		return
	}
	r2 := new(http.Request)
	*r2 = *r
	r2.Header = openingHeader(r.Header)
	r2.Body = io.NopCloser(bytes.NewReader(body))
	r2.ContentLength = int64(len(body))
	if msg.Method != methodInitialize {
		g.next.ServeHTTP(w, r2)
		return
	}
	owner := ownerOf(r)
	if refusal := g.reserve(owner); refusal != nil {
		w.Header().Set("Retry-After", strconv.Itoa(sessionRetryAfter))
		writeRPCError(w, refusal.status, msg.ID, codeSessionLimit, refusal.message, refusal.data)
		return
	}
	rec := &statusRecorder{ResponseWriter: w}
	g.next.ServeHTTP(rec, r2)
	if id := rec.Header().Get(sessionIDHeader); rec.status == http.StatusOK && id != "" {
		g.opened(id, owner)
	} else {
		g.release(owner)
	}
}

// ownerOf is whom a request's sessions count against: its token (the
// verifier's user id), or "" for a server without tokens.
func ownerOf(r *http.Request) string {
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		return ti.UserID
	}
	return ""
}

// refusal is a session the caps do not allow.
type refusal struct {
	status  int
	message string
	data    map[string]any
}

// reserve counts a session being opened by owner, or says which cap
// refuses it. Sessions the SDK has closed (idle, deleted) are found and
// uncounted only when a cap is reached: until then nothing needs them gone.
func (g *sessionGate) reserve(owner string) *refusal {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.total >= g.max || g.held[owner] >= g.perOwner {
		g.reconcileLocked()
	}
	var r *refusal
	switch idle := units.FormatDuration(g.timeout); {
	case g.held[owner] >= g.perOwner:
		who := "this token holds"
		if owner == "" {
			who = "the clients of this server (which has no tokens) hold"
		}
		r = &refusal{http.StatusTooManyRequests, fmt.Sprintf("too many open MCP sessions: %s %d, the most one token may (--max-sessions-per-token, mcp.max_sessions_per_token); "+
			"end the sessions you no longer use (HTTP DELETE on the MCP endpoint with their %s header) or wait for idle ones to close (after %s without a request)",
			who, g.held[owner], sessionIDHeader, idle), nil}
		r.data = map[string]any{"reason": "too_many_sessions", "cap": "per_token", "max": g.perOwner}
	case g.total >= g.max:
		r = &refusal{http.StatusServiceUnavailable, fmt.Sprintf("this server holds %d open MCP sessions, the most it allows (--max-sessions, mcp.max_sessions); "+
			"try again later: idle sessions close after %s without a request", g.total, idle), nil}
		r.data = map[string]any{"reason": "too_many_sessions", "cap": "total", "max": g.max}
	default:
		g.total++
		g.held[owner]++
		return nil
	}
	r.data["retry_after_seconds"] = sessionRetryAfter
	if now := time.Now(); now.Sub(g.lastWarn) > time.Minute {
		g.lastWarn = now
		g.log.Warn("refusing MCP sessions past a cap", "cap", r.data["cap"], "max", r.data["max"], "open", g.total)
	}
	return r
}

// reconcileLocked uncounts the sessions the SDK no longer has.
func (g *sessionGate) reconcileLocked() {
	live := make(map[string]bool, len(g.owner))
	for ss := range g.live() {
		live[ss.ID()] = true
	}
	for id := range g.owner {
		if !live[id] {
			g.forgetLocked(id)
		}
	}
}

// opened records the session a reservation became.
func (g *sessionGate) opened(id, owner string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.owner[id] = owner
}

// release gives back a reservation that opened no session.
func (g *sessionGate) release(owner string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.uncountLocked(owner)
}

// forget uncounts a session that was deleted.
func (g *sessionGate) forget(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.forgetLocked(id)
}

func (g *sessionGate) forgetLocked(id string) {
	owner, ok := g.owner[id]
	if !ok {
		return
	}
	delete(g.owner, id)
	g.uncountLocked(owner)
}

func (g *sessionGate) uncountLocked(owner string) {
	g.total--
	if g.held[owner]--; g.held[owner] <= 0 {
		delete(g.held, owner)
	}
}

// counts returns the sessions counted in all and per owner (tests).
func (g *sessionGate) counts() (int, map[string]int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	held := make(map[string]int, len(g.held))
	for k, v := range g.held {
		held[k] = v
	}
	return g.total, held
}

// rpcMessage is a JSON-RPC request or notification as the gate reads it.
type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

// readOpening reads the one message of a request without a session. A
// batch is refused: an initialize must not be part of one (MCP 2025-03-26),
// and the SDK would otherwise open a session the gate never saw. An
// initialize's parameters are cut down to what a session keeps.
func readOpening(body []byte) (rpcMessage, error) {
	var msg rpcMessage
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		return msg, errors.New("a request without a session must be one JSON-RPC message (initialize), not a batch")
	}
	if err := json.Unmarshal(trimmed, &msg); err != nil {
		return rpcMessage{}, fmt.Errorf("malformed JSON-RPC message: %v", err)
	}
	if msg.Method == "" {
		return msg, errors.New("a request without a session must be a JSON-RPC request (initialize)")
	}
	if msg.Method == methodInitialize {
		p, err := trimInitialize(msg.Params)
		if err != nil {
			return msg, fmt.Errorf("initialize params: %v", err)
		}
		msg.Params = p
	}
	return msg, nil
}

// initializeParams are the initialize parameters a session keeps: the
// protocol version, the capabilities the SDK acts on, and the client's name
// and version, clipped. Experimental capabilities, extensions, icons and
// _meta are dropped: this server uses none of them.
type initializeParams struct {
	ProtocolVersion string                     `json:"protocolVersion"`
	Capabilities    map[string]json.RawMessage `json:"capabilities"`
	ClientInfo      *clientInfo                `json:"clientInfo,omitempty"`
}

type clientInfo struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version"`
}

// keptCapabilities are the client capabilities the SDK reads.
var keptCapabilities = []string{"roots", "sampling", "elicitation"}

func trimInitialize(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return raw, nil
	}
	var p initializeParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	caps := map[string]json.RawMessage{}
	for _, k := range keptCapabilities {
		if v, ok := p.Capabilities[k]; ok && len(v) <= maxCapabilityBytes {
			caps[k] = v
		}
	}
	p.Capabilities = caps
	p.ProtocolVersion = textclip.Head(p.ProtocolVersion, 64, "")
	if ci := p.ClientInfo; ci != nil {
		ci.Name = textclip.Head(ci.Name, maxClientInfoBytes, "...")
		ci.Title = textclip.Head(ci.Title, maxClientInfoBytes, "...")
		ci.Version = textclip.Head(ci.Version, maxClientInfoBytes, "...")
	}
	return json.Marshal(p)
}

// openingHeader is the part of h the SDK reads, each value bounded.
func openingHeader(h http.Header) http.Header {
	out := make(http.Header, len(keptHeaders))
	for _, k := range keptHeaders {
		for _, v := range h.Values(k) {
			if len(v) <= maxKeptHeaderBytes {
				out.Add(k, v)
			}
		}
	}
	// The SDK checks the standard Mcp-Param-* headers against the body:
	// a few are kept, bounded like the rest.
	params := 0
	for k, vs := range h {
		if !strings.HasPrefix(k, "Mcp-Param-") {
			continue
		}
		for _, v := range vs {
			if len(v) <= maxKeptHeaderBytes && params < maxParamHeaders {
				out.Add(k, v)
				params++
			}
		}
	}
	return out
}

// JSON-RPC error codes of the specification.
const (
	jsonrpcInvalidRequest = -32600
	jsonrpcInternalError  = -32603
)

// writeRPCError answers with a JSON-RPC error object (id null when the
// request's is unknown), which MCP clients show as the reason.
func writeRPCError(w http.ResponseWriter, status int, id json.RawMessage, code int, message string, data any) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	type rpcError struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    any    `json:"data,omitempty"`
	}
	body, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   rpcError        `json:"error"`
	}{"2.0", id, rpcError{code, message, data}})
	if err != nil {
		http.Error(w, message, status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// statusRecorder remembers the status of an answer; Unwrap lets the SDK's
// http.ResponseController flush the event stream through it.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(p)
}

func (s *statusRecorder) Flush() {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	_ = http.NewResponseController(s.ResponseWriter).Flush()
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
