package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
)

// Anthropic starts a fake Messages API under a non-empty base path.
// Configure the provider with s.URL (the SDK appends v1/messages) and s.Key.
func Anthropic(t testing.TB, key string, script ...Reply) *Server {
	return start(t, key, script, (*Server).validateAnthropic, respondAnthropic, "/anthropic/v1/messages", "/anthropic/")
}

type anRequest struct {
	Model        string          `json:"model"`
	MaxTokens    *int64          `json:"max_tokens"`
	Messages     []anMessage     `json:"messages"`
	System       json.RawMessage `json:"system"`
	Tools        []anTool        `json:"tools"`
	ToolChoice   *anToolChoice   `json:"tool_choice"`
	OutputConfig *struct {
		Format *struct {
			Type   string         `json:"type"`
			Schema map[string]any `json:"schema"`
		} `json:"format"`
	} `json:"output_config"`
}

type anMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type anBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   *bool           `json:"is_error"`
}

type anTool struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	InputSchema map[string]any `json:"input_schema"`
}

type anToolChoice struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

func (s *Server) validateAnthropic(r *http.Request, body []byte) (map[string]any, string) {
	if r.Header.Get("Anthropic-Version") == "" {
		return nil, "anthropic-version header missing"
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		return nil, "content-type " + ct
	}
	if s.Key != "" && r.Header.Get("X-Api-Key") != s.Key && r.Header.Get("Authorization") != "Bearer "+s.Key {
		return nil, "missing or wrong credentials"
	}
	var req anRequest
	generic, problem := decodeStrict(body, &req)
	if problem != "" {
		return generic, problem
	}
	if req.Model == "" {
		return generic, "model is required"
	}
	if req.MaxTokens == nil || *req.MaxTokens < 1 {
		return generic, "max_tokens must be a positive integer"
	}
	if len(req.System) > 0 {
		var blocks []anBlock
		if err := json.Unmarshal(req.System, &blocks); err != nil {
			var text string
			if err := json.Unmarshal(req.System, &text); err != nil {
				return generic, "system must be a string or text blocks"
			}
		}
		for _, b := range blocks {
			if b.Type != "text" || b.Text == "" {
				return generic, "system blocks must be non-empty text"
			}
		}
	}
	if len(req.Messages) == 0 || req.Messages[0].Role != "user" {
		return generic, "messages must start with a user turn"
	}
	usesTools := false
	var pending map[string]bool // tool_use ids of the previous assistant turn
	for i, m := range req.Messages {
		where := fmt.Sprintf("messages[%d]", i)
		if i > 0 && req.Messages[i-1].Role == m.Role {
			return generic, where + ": roles must alternate"
		}
		var blocks []anBlock
		var text string
		if err := json.Unmarshal(m.Content, &text); err == nil {
			if text == "" {
				return generic, where + ": empty content"
			}
			blocks = []anBlock{{Type: "text", Text: text}}
		} else if err := json.Unmarshal(m.Content, &blocks); err != nil || len(blocks) == 0 {
			return generic, where + ": content must be a string or a non-empty block list"
		}
		switch m.Role {
		case "user":
			answered := map[string]bool{}
			for _, b := range blocks {
				switch b.Type {
				case "text":
					if b.Text == "" {
						return generic, where + ": empty text block"
					}
				case "tool_result":
					usesTools = true
					if !pending[b.ToolUseID] {
						return generic, where + ": tool_result for unknown tool_use_id " + b.ToolUseID
					}
					answered[b.ToolUseID] = true
				default:
					return generic, where + ": block type " + b.Type + " not allowed in a user turn"
				}
			}
			for id := range pending {
				if !answered[id] {
					return generic, where + ": tool_use " + id + " has no tool_result"
				}
			}
			pending = nil
		case "assistant":
			pending = map[string]bool{}
			for _, b := range blocks {
				switch b.Type {
				case "text":
				case "tool_use":
					usesTools = true
					var input map[string]any
					if b.ID == "" || !isName(b.Name, 128) || json.Unmarshal(b.Input, &input) != nil {
						return generic, where + ": malformed tool_use block"
					}
					pending[b.ID] = true
				default:
					return generic, where + ": block type " + b.Type + " not allowed in an assistant turn"
				}
			}
		default:
			return generic, where + ": unknown role " + m.Role
		}
	}
	if len(pending) > 0 {
		return generic, "conversation ends with unanswered tool_use"
	}
	if usesTools && len(req.Tools) == 0 {
		return generic, "requests with tool_use or tool_result blocks must define tools"
	}
	for i, t := range req.Tools {
		if !isName(t.Name, 128) || t.InputSchema["type"] != "object" {
			return generic, fmt.Sprintf("tools[%d]: malformed", i)
		}
	}
	if c := req.ToolChoice; c != nil {
		if len(req.Tools) == 0 {
			return generic, "tool_choice without tools"
		}
		switch c.Type {
		case "auto", "any", "none":
		case "tool":
			if c.Name == "" {
				return generic, "tool_choice tool without name"
			}
		default:
			return generic, "tool_choice type " + c.Type
		}
	}
	if oc := req.OutputConfig; oc != nil && oc.Format != nil {
		if oc.Format.Type != "json_schema" {
			return generic, "output_config.format.type must be json_schema"
		}
		if p := checkSchema("schema", oc.Format.Schema); p != "" {
			return generic, p
		}
	}
	return generic, ""
}

func respondAnthropic(w http.ResponseWriter, r Reply, req map[string]any, n int) {
	status := r.status()
	w.Header().Set("Request-Id", fmt.Sprintf("req_llmtest_%d", n))
	if writeRaw(w, status, r.RawBody) {
		return
	}
	if status >= 300 {
		typ := map[int]string{400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_error",
			500: "api_error", 529: "overloaded_error"}[status]
		if typ == "" {
			typ = "api_error"
		}
		writeJSON(w, status, map[string]any{"type": "error",
			"error": map[string]any{"type": typ, "message": r.ErrorMessage}})
		return
	}
	model, _ := req["model"].(string)
	content := []any{}
	if r.Text != "" || len(r.ToolCalls) == 0 {
		content = append(content, map[string]any{"type": "text", "text": r.Text})
	}
	for i, c := range r.ToolCalls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("toolu_%d_%d", n, i)
		}
		var input any = map[string]any{}
		if c.Arguments != "" {
			input = json.RawMessage(c.Arguments)
		}
		content = append(content, map[string]any{"type": "tool_use", "id": id, "name": c.Name, "input": input})
	}
	body := map[string]any{
		"id": fmt.Sprintf("msg_llmtest_%d", n), "type": "message", "role": "assistant", "model": model,
		"content": content, "stop_reason": r.stop("end_turn", "tool_use"), "stop_sequence": nil,
	}
	if !r.NoUsage {
		in, out := r.usage()
		body["usage"] = map[string]any{"input_tokens": in, "output_tokens": out,
			"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
	}
	writeJSON(w, http.StatusOK, body)
}
