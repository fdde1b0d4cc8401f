package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
)

// OpenAI starts a fake chat-completions API under a non-empty base path, so
// a client that drops the path fails loudly. Configure the provider with
// s.URL (which ends in /v1) and s.Key.
func OpenAI(t testing.TB, key string, script ...Reply) *Server {
	return start(t, key, script, (*Server).validateOpenAI, respondOpenAI, "/openai/v1/chat/completions", "/openai/v1")
}

type oaRequest struct {
	Model               string            `json:"model"`
	Messages            []oaMessage       `json:"messages"`
	MaxCompletionTokens *int64            `json:"max_completion_tokens"`
	MaxTokens           *int64            `json:"max_tokens"`
	ResponseFormat      *oaResponseFormat `json:"response_format"`
	Tools               []oaTool          `json:"tools"`
	ToolChoice          json.RawMessage   `json:"tool_choice"`
}

type oaMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []oaToolCall    `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
	Name       string          `json:"name"`
}

type oaToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type oaResponseFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		Strict      *bool          `json:"strict"`
		Schema      map[string]any `json:"schema"`
	} `json:"json_schema"`
}

type oaTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		Parameters  map[string]any `json:"parameters"`
		Strict      *bool          `json:"strict"`
	} `json:"function"`
}

func (s *Server) validateOpenAI(r *http.Request, body []byte) (map[string]any, string) {
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		return nil, "content-type " + ct
	}
	if s.Key != "" && r.Header.Get("Authorization") != "Bearer "+s.Key {
		return nil, "missing or wrong bearer token"
	}
	var req oaRequest
	generic, problem := decodeStrict(body, &req)
	if problem != "" {
		return generic, problem
	}
	if req.Model == "" {
		return generic, "model is required"
	}
	if len(req.Messages) == 0 {
		return generic, "messages must not be empty"
	}
	if req.MaxCompletionTokens != nil && req.MaxTokens != nil {
		return generic, "max_tokens and max_completion_tokens are exclusive"
	}
	for _, n := range []*int64{req.MaxCompletionTokens, req.MaxTokens} {
		if n != nil && *n < 1 {
			return generic, "token cap must be positive"
		}
	}
	pending := map[string]bool{} // tool calls awaiting a tool message
	for i, m := range req.Messages {
		where := fmt.Sprintf("messages[%d]", i)
		if m.Role != "tool" && len(pending) > 0 {
			return generic, where + ": tool calls of the previous assistant message were not all answered"
		}
		switch m.Role {
		case "system", "developer", "user":
			var text string
			if err := json.Unmarshal(m.Content, &text); err != nil || text == "" {
				return generic, where + ": content must be a non-empty string"
			}
		case "assistant":
			if len(m.ToolCalls) == 0 && (len(m.Content) == 0 || string(m.Content) == "null") {
				return generic, where + ": assistant message needs content or tool_calls"
			}
			for _, c := range m.ToolCalls {
				if c.ID == "" || c.Type != "function" || !isName(c.Function.Name, 64) {
					return generic, where + ": malformed tool call"
				}
				if !json.Valid([]byte(c.Function.Arguments)) {
					return generic, where + ": tool call arguments are not JSON"
				}
				pending[c.ID] = true
			}
		case "tool":
			if !pending[m.ToolCallID] {
				return generic, where + ": tool_call_id " + m.ToolCallID + " answers no pending tool call"
			}
			delete(pending, m.ToolCallID)
			var text string
			if err := json.Unmarshal(m.Content, &text); err != nil {
				return generic, where + ": tool content must be a string"
			}
		default:
			return generic, where + ": unknown role " + m.Role
		}
	}
	if len(pending) > 0 {
		return generic, "conversation ends with unanswered tool calls"
	}
	if rf := req.ResponseFormat; rf != nil {
		if rf.Type != "json_schema" || rf.JSONSchema == nil {
			return generic, "response_format must be json_schema here"
		}
		if !isName(rf.JSONSchema.Name, 64) {
			return generic, "response_format.json_schema.name is invalid"
		}
		if rf.JSONSchema.Strict == nil || !*rf.JSONSchema.Strict {
			return generic, "response_format.json_schema.strict must be true"
		}
		if p := checkSchema("schema", rf.JSONSchema.Schema); p != "" {
			return generic, p
		}
	}
	for i, t := range req.Tools {
		if t.Type != "function" || !isName(t.Function.Name, 64) {
			return generic, fmt.Sprintf("tools[%d]: malformed", i)
		}
		if t.Function.Parameters["type"] != "object" {
			return generic, fmt.Sprintf("tools[%d]: parameters must be an object schema", i)
		}
	}
	if len(req.ToolChoice) > 0 {
		if len(req.Tools) == 0 {
			return generic, "tool_choice without tools"
		}
		var c string
		if err := json.Unmarshal(req.ToolChoice, &c); err == nil && c != "none" && c != "auto" && c != "required" {
			return generic, "tool_choice " + c
		}
	}
	return generic, ""
}

func respondOpenAI(w http.ResponseWriter, r Reply, req map[string]any, n int) {
	status := r.status()
	if writeRaw(w, status, r.RawBody) {
		return
	}
	if status >= 300 {
		code := map[int]string{400: "invalid_request_error", 401: "invalid_api_key", 429: "rate_limit_exceeded"}[status]
		writeJSON(w, status, map[string]any{"error": map[string]any{
			"message": r.ErrorMessage, "type": "api_error", "param": nil, "code": code}})
		return
	}
	model, _ := req["model"].(string)
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	if r.Text != "" || len(r.ToolCalls) == 0 {
		msg["content"] = r.Text
	}
	if len(r.ToolCalls) > 0 {
		calls := []any{}
		for i, c := range r.ToolCalls {
			id := c.ID
			if id == "" {
				id = fmt.Sprintf("call_%d_%d", n, i)
			}
			calls = append(calls, map[string]any{"id": id, "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": c.Arguments}})
		}
		msg["tool_calls"] = calls
	}
	finish := r.stop("stop", "tool_calls")
	body := map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "created": 1700000000 + n, "model": model,
		"system_fingerprint": "fp_llmtest",
		"choices":            []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finish}},
	}
	if !r.NoUsage {
		in, out := r.usage()
		body["usage"] = map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out,
			"prompt_tokens_details": map[string]any{"cached_tokens": 0}}
	}
	writeJSON(w, http.StatusOK, body)
}
