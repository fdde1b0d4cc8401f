// Package llmtest serves fake OpenAI chat-completions and Anthropic Messages
// APIs over httptest, strict about the request wire format the way the real
// services are, and answering from a script. Tests reach them through the
// real SDKs, so a request the SDK or Aster builds wrongly fails here.
package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Reply is one scripted answer.
type Reply struct {
	// Status defaults to 200. A non-2xx status sends an error body in the
	// provider's format with ErrorMessage.
	Status       int
	ErrorMessage string
	Header       map[string]string
	// RawBody, when set, is sent verbatim (malformed responses).
	RawBody string
	// Text is the assistant's text; ToolCalls its tool calls (Arguments as
	// JSON text).
	Text      string
	ToolCalls []ToolCall
	// Stop is the provider-native finish reason ("stop", "length",
	// "tool_calls"; "end_turn", "max_tokens", "tool_use"); empty derives it.
	Stop string
	// InputTokens and OutputTokens are reported as usage (defaults 100, 50).
	InputTokens, OutputTokens int64
	// NoUsage omits usage from the response, as some local servers do.
	NoUsage bool
	// Delay holds the answer back (or until the client gives up).
	Delay time.Duration
	// HangUp sends headers and half a body, then drops the connection.
	HangUp bool
}

// ToolCall is a scripted tool call.
type ToolCall struct {
	ID, Name, Arguments string
}

// Request is one request the server received.
type Request struct {
	Path   string
	Header http.Header
	Body   []byte
	// JSON is Body decoded generically.
	JSON map[string]any
	// Problem is the validation failure, if any (the server answered 400).
	Problem string
}

// ToolResults returns the texts of the tool results the request sends back
// in its last turn, in the order of the calls, in either wire format: the
// trailing "tool" messages of OpenAI's, or the tool_result blocks of
// Anthropic's last user message.
func (r Request) ToolResults() []string {
	msgs, _ := r.JSON["messages"].([]any)
	var out []string
	for i := len(msgs) - 1; i >= 0; i-- {
		m, _ := msgs[i].(map[string]any)
		switch m["role"] {
		case "tool":
			text, _ := m["content"].(string)
			out = append([]string{text}, out...)
			continue
		case "user":
			blocks, _ := m["content"].([]any)
			for _, b := range blocks {
				b, _ := b.(map[string]any)
				if b["type"] != "tool_result" {
					continue
				}
				parts, _ := b["content"].([]any)
				for _, c := range parts {
					c, _ := c.(map[string]any)
					text, _ := c["text"].(string)
					out = append(out, text)
				}
			}
		}
		return out
	}
	return out
}

// Server is a scripted fake model API.
type Server struct {
	// URL is the base URL to configure the provider with.
	URL string
	// Key is the API key the server demands.
	Key string

	t        testing.TB
	srv      *httptest.Server
	validate validateFunc
	respond  respondFunc

	mu       sync.Mutex
	script   []Reply
	fallback func(req Request, n int) Reply
	requests []Request
}

// validateFunc checks one request of a provider's API: it returns the body
// decoded generically and what is wrong with the request ("" if nothing).
type validateFunc func(s *Server, r *http.Request, body []byte) (map[string]any, string)

// respondFunc writes the provider's answer to request n (decoded as req).
type respondFunc func(w http.ResponseWriter, reply Reply, req map[string]any, n int)

// Push appends replies to the script.
func (s *Server) Push(r ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, r...)
}

// Fallback answers every request the script does not cover; n counts from 0.
func (s *Server) Fallback(f func(req Request, n int) Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fallback = f
}

// Requests returns what the server received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// start returns a Server demanding key and answering from script, served by
// a test server that takes POST path only (each body checked by validate,
// each reply written by respond); its URL is the server's address followed by
// base. The test server stops at the test's end.
func start(t testing.TB, key string, script []Reply, validate validateFunc, respond respondFunc, path, base string) *Server {
	s := &Server{Key: key, t: t, script: script, validate: validate, respond: respond}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.handle(w, r, path)
	})
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL + base
	t.Cleanup(s.srv.Close)
	return s
}

// status is the reply's HTTP status: 200 when unset.
func (r Reply) status() int {
	if r.Status == 0 {
		return http.StatusOK
	}
	return r.Status
}

// stop is the reply's finish reason: Stop when set, else done for a text
// answer and tool for one with tool calls.
func (r Reply) stop(done, tool string) string {
	switch {
	case r.Stop != "":
		return r.Stop
	case len(r.ToolCalls) > 0:
		return tool
	}
	return done
}

// usage is the token counts to report: 100 and 50 when neither is set.
func (r Reply) usage() (in, out int64) {
	if r.InputTokens == 0 && r.OutputTokens == 0 {
		return 100, 50
	}
	return r.InputTokens, r.OutputTokens
}

// writeRaw sends raw verbatim as the body, when it is set, and reports
// whether it did.
func writeRaw(w http.ResponseWriter, status int, raw string) bool {
	if raw == "" {
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(raw))
	return true
}

// Close stops the server (also done by t.Cleanup).
func (s *Server) Close() { s.srv.Close() }

func (s *Server) handle(w http.ResponseWriter, r *http.Request, path string) {
	if r.Method != http.MethodPost || r.URL.Path != path {
		http.Error(w, "not found", http.StatusNotFound)
		s.t.Errorf("llmtest: unexpected %s %s (want POST %s)", r.Method, r.URL.Path, path)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		http.Error(w, "read", http.StatusBadRequest)
		return
	}
	parsed, problem := s.validate(s, r, body)
	rec := Request{Path: r.URL.Path, Header: r.Header.Clone(), Body: body, JSON: parsed, Problem: problem}
	s.mu.Lock()
	n := len(s.requests)
	s.requests = append(s.requests, rec)
	var reply Reply
	switch {
	case problem != "":
		reply = Reply{Status: http.StatusBadRequest, ErrorMessage: problem}
	case len(s.script) > 0:
		reply, s.script = s.script[0], s.script[1:]
	case s.fallback != nil:
		reply = s.fallback(rec, n)
	default:
		reply = Reply{Status: http.StatusInternalServerError, ErrorMessage: "llmtest: script exhausted"}
		s.t.Errorf("llmtest: request %d has no scripted reply", n)
	}
	s.mu.Unlock()
	if problem != "" {
		s.t.Errorf("llmtest: invalid request: %s", problem)
	}
	if reply.Delay > 0 {
		timer := time.NewTimer(reply.Delay)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-r.Context().Done():
			return
		}
	}
	for k, v := range reply.Header {
		w.Header().Set(k, v)
	}
	if reply.HangUp {
		hangUp(w)
		return
	}
	s.respond(w, reply, parsed, n)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// decodeStrict decodes body into dst refusing unknown fields, and into a
// generic map for the record.
func decodeStrict(body []byte, dst any) (map[string]any, string) {
	var generic map[string]any
	if err := json.Unmarshal(body, &generic); err != nil {
		return nil, "body is not a JSON object: " + err.Error()
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return generic, "body does not match the wire format: " + err.Error()
	}
	return generic, ""
}

// checkSchema enforces the subset of JSON Schema strict structured output
// accepts: every object closes additionalProperties and requires every one of
// its properties; optional values are expressed as a union with null.
func checkSchema(path string, v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		return path + ": schema is not an object"
	}
	types := map[string]bool{}
	switch t := m["type"].(type) {
	case string:
		types[t] = true
	case []any:
		for _, e := range t {
			if s, ok := e.(string); ok {
				types[s] = true
			}
		}
	case nil:
		if _, ok := m["anyOf"]; !ok {
			if _, ok := m["enum"]; !ok {
				return path + ": no type"
			}
		}
	}
	if types["object"] {
		if m["additionalProperties"] != false {
			return path + ": object without additionalProperties:false"
		}
		props, _ := m["properties"].(map[string]any)
		req := map[string]bool{}
		if r, ok := m["required"].([]any); ok {
			for _, e := range r {
				if s, ok := e.(string); ok {
					req[s] = true
				}
			}
		}
		for k, pv := range props {
			if !req[k] {
				return fmt.Sprintf("%s: property %q not required (strict mode needs all)", path, k)
			}
			if p := checkSchema(path+"."+k, pv); p != "" {
				return p
			}
		}
		if len(req) != len(props) {
			return path + ": required names a property that does not exist"
		}
	}
	if types["array"] {
		items, ok := m["items"]
		if !ok {
			return path + ": array without items"
		}
		if p := checkSchema(path+"[]", items); p != "" {
			return p
		}
	}
	if any, ok := m["anyOf"].([]any); ok {
		for i, e := range any {
			if p := checkSchema(fmt.Sprintf("%s.anyOf[%d]", path, i), e); p != "" {
				return p
			}
		}
	}
	return ""
}

func isName(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// hangUp promises a body it never finishes, then closes the connection.
func hangUp(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", "4096")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(`{"id":"cut`))
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
		}
	}
}
