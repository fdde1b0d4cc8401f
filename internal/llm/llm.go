// Package llm talks to language models for Aster's review step: a small
// Provider interface with OpenAI-compatible and Anthropic implementations on
// the official SDKs, and a Client that owns everything that must behave the
// same for both — per-call timeouts, retries on 429/5xx honouring Retry-After,
// a cap on calls, token and cost accounting — plus a bounded tool-call loop.
package llm

import (
	"context"
	"encoding/json"
)

// Provider is one model API. Implementations make exactly one HTTP attempt per
// Complete call (the SDKs' own retries are off); the Client retries.
type Provider interface {
	// Name is "openai" or "anthropic".
	Name() string
	// Model is the model every request goes to.
	Model() string
	// Complete sends one request and returns the model's turn. Errors are
	// *Error values classified by Kind.
	Complete(ctx context.Context, req Request) (Response, error)
}

// Role is who speaks a message.
type Role string

// Roles of a conversation. RoleTool carries tool results back to the model.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Request is one model call.
type Request struct {
	// System holds the fixed rules; it never contains untrusted data.
	System   string
	Messages []Message
	// Tools the model may call; empty means none.
	Tools []Tool
	// ToolChoice is "auto" (default when Tools is set) or "none", which keeps
	// the tool definitions (required once the history holds tool calls) but
	// forbids further calls.
	ToolChoice ToolChoice
	// Schema, when set, asks for structured JSON output matching it.
	Schema *Schema
	// MaxOutputTokens caps the answer; zero means the provider's configured cap.
	MaxOutputTokens int64
}

// ToolChoice says whether the model may call tools in this turn.
type ToolChoice string

// Tool choices.
const (
	ToolChoiceAuto ToolChoice = "auto"
	ToolChoiceNone ToolChoice = "none"
)

// Message is one turn of the conversation.
type Message struct {
	Role Role
	Text string
	// ToolCalls are the calls an assistant turn made.
	ToolCalls []ToolCall
	// ToolResults answer the previous assistant turn's calls (RoleTool).
	ToolResults []ToolResult
}

// Tool describes a function the model may call.
type Tool struct {
	Name        string
	Description string
	// Parameters is a JSON Schema object for the arguments.
	Parameters map[string]any
}

// ToolCall is the model asking to run a tool.
type ToolCall struct {
	ID        string
	Name      string
	Arguments json.RawMessage
}

// ToolResult is what a tool call produced, as text.
type ToolResult struct {
	CallID  string
	Content string
	IsError bool
}

// Schema is a JSON Schema for structured output. Providers with a strict mode
// need every property required and additionalProperties false.
type Schema struct {
	Name   string
	Schema map[string]any
}

// StopReason says why the model stopped.
type StopReason string

// Stop reasons, normalised across providers.
const (
	StopEnd      StopReason = "end"      // finished its answer
	StopLength   StopReason = "length"   // hit the output token cap: the answer is truncated
	StopToolUse  StopReason = "tool_use" // wants tool results
	StopRefusal  StopReason = "refusal"  // declined
	StopFiltered StopReason = "filtered" // provider content filter
	StopOther    StopReason = "other"    // anything else the provider said
	StopUnknown  StopReason = ""         // provider said nothing
)

// Response is the model's turn.
type Response struct {
	Text      string
	ToolCalls []ToolCall
	Stop      StopReason
	Usage     Usage
	// Model is the model the provider says answered.
	Model string
}

// Usage counts tokens as the provider reported them.
type Usage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	// CachedInputTokens is the part of InputTokens served from a prompt cache.
	CachedInputTokens int64 `json:"cached_input_tokens,omitempty"`
}

// Add returns u plus v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:       u.InputTokens + v.InputTokens,
		OutputTokens:      u.OutputTokens + v.OutputTokens,
		CachedInputTokens: u.CachedInputTokens + v.CachedInputTokens,
	}
}

// EstimateTokens is a conservative token count for text: about three bytes a
// token, which over-counts English and most code, so budgets hold.
func EstimateTokens(s string) int64 {
	return EstimateTokensBytes(int64(len(s)))
}

// EstimateTokensBytes is EstimateTokens for a length in bytes.
func EstimateTokensBytes(n int64) int64 {
	if n <= 0 {
		return 0
	}
	return (n + 2) / 3
}

// EstimateRequestTokens estimates the input tokens of a request: its text,
// tool definitions and schema, plus a small overhead per message.
func EstimateRequestTokens(req Request) int64 {
	n := EstimateTokens(req.System) + 8
	for _, m := range req.Messages {
		n += EstimateTokens(m.Text) + 8
		for _, c := range m.ToolCalls {
			n += EstimateTokens(c.Name) + EstimateTokensBytes(int64(len(c.Arguments))) + 8
		}
		for _, r := range m.ToolResults {
			n += EstimateTokens(r.Content) + 8
		}
	}
	for _, t := range req.Tools {
		b, _ := json.Marshal(t.Parameters)
		n += EstimateTokens(t.Name) + EstimateTokens(t.Description) + EstimateTokensBytes(int64(len(b))) + 8
	}
	if req.Schema != nil {
		b, _ := json.Marshal(req.Schema.Schema)
		n += EstimateTokensBytes(int64(len(b))) + 8
	}
	return n
}
