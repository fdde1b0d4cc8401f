package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/asterhq/aster/internal/safetext"
)

// ToolRunner executes one tool call for the model. The returned text goes
// back to the model (truncated by Converse); an error becomes an error result
// the model can read, never a failed review.
type ToolRunner interface {
	RunTool(ctx context.Context, call ToolCall) (string, error)
}

// ToolRunnerFunc adapts a function to ToolRunner.
type ToolRunnerFunc func(ctx context.Context, call ToolCall) (string, error)

// RunTool implements ToolRunner.
func (f ToolRunnerFunc) RunTool(ctx context.Context, call ToolCall) (string, error) {
	return f(ctx, call)
}

// ConverseOptions bound a tool-using conversation.
type ConverseOptions struct {
	// MaxToolCalls is K: tool calls executed over the whole conversation.
	// Calls past it are answered with an error result, and the next turn
	// forbids tools.
	MaxToolCalls int
	// MaxResultBytes truncates each tool result before it goes to the model.
	MaxResultBytes int
	// MaxTurns caps model turns (defaults to MaxToolCalls+2).
	MaxTurns int
}

// ConverseResult is the final answer and what the tools did on the way.
type ConverseResult struct {
	Response
	// ToolCalls executed; Refused were answered "limit reached" or
	// "unknown tool" without running anything.
	ToolCalls int
	Refused   int
	Turns     int
	// CapHit is set when the model asked for more tool calls than allowed.
	CapHit bool
	// Log records each executed call and the (truncated) result length.
	Log []ToolLogEntry
	// Messages is the conversation before the final answer (the request's
	// messages plus every tool round), for a caller that must follow up.
	Messages []Message
}

// ToolLogEntry is one tool call as the report shows it.
type ToolLogEntry struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Error     bool   `json:"error,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
	Bytes     int    `json:"bytes"`
}

// Converse runs req to a final answer, executing tool calls through run. With
// no tools in req it is one Complete call.
func (c *Client) Converse(ctx context.Context, req Request, run ToolRunner, o ConverseOptions) (ConverseResult, error) {
	var out ConverseResult
	maxTurns := o.MaxTurns
	if maxTurns <= 0 {
		maxTurns = o.MaxToolCalls + 2
	}
	known := map[string]bool{}
	for _, t := range req.Tools {
		known[t.Name] = true
	}
	msgs := append([]Message(nil), req.Messages...)
	for {
		turn := req
		turn.Messages = msgs
		if out.ToolCalls >= o.MaxToolCalls || out.Turns+1 >= maxTurns || run == nil {
			turn.ToolChoice = ToolChoiceNone
		}
		out.Messages = msgs
		resp, err := c.Complete(ctx, turn)
		out.Turns++
		if err != nil {
			return out, err
		}
		out.Response = resp
		if len(resp.ToolCalls) == 0 || resp.Stop == StopLength {
			return out, nil
		}
		if turn.ToolChoice == ToolChoiceNone || out.Turns >= maxTurns {
			// The model ignored "no more tools"; stop here rather than loop.
			out.CapHit = true
			out.Response.ToolCalls = nil
			return out, nil
		}
		msgs = append(msgs, Message{Role: RoleAssistant, Text: resp.Text, ToolCalls: resp.ToolCalls})
		results := Message{Role: RoleTool}
		for _, call := range resp.ToolCalls {
			var content string
			isErr := true
			switch {
			case !known[call.Name]:
				content = fmt.Sprintf("unknown tool %q", call.Name)
				out.Refused++
			case out.ToolCalls >= o.MaxToolCalls:
				content = fmt.Sprintf("tool-call limit of %d reached; answer now with what you have", o.MaxToolCalls)
				out.Refused++
				out.CapHit = true
			case !json.Valid(call.Arguments):
				content = "arguments are not valid JSON"
				out.Refused++
			default:
				out.ToolCalls++
				text, err := run.RunTool(ctx, call)
				if ctx.Err() != nil {
					return out, &Error{Kind: KindCanceled, Provider: c.p.Name(), msg: ctx.Err().Error(), cause: ctx.Err()}
				}
				isErr = err != nil
				if err != nil {
					text = "error: " + err.Error()
				}
				var truncated bool
				content, truncated = TruncateMiddle(text, o.MaxResultBytes)
				out.Log = append(out.Log, ToolLogEntry{Name: call.Name, Arguments: excerpt(string(call.Arguments), 200),
					Error: isErr, Truncated: truncated, Bytes: len(text)})
			}
			results.ToolResults = append(results.ToolResults, ToolResult{CallID: call.ID, Content: content, IsError: isErr})
		}
		msgs = append(msgs, results)
	}
}

// TruncateMiddle keeps at most n bytes of s: its head and its tail (where test
// failures and exit messages usually are), with a marker saying how much was
// cut. It never splits a UTF-8 sequence. n <= 0 means no limit.
func TruncateMiddle(s string, n int) (string, bool) {
	if n <= 0 || len(s) <= n {
		return s, false
	}
	marker := fmt.Sprintf("\n[… %d bytes cut …]\n", len(s)-n)
	keep := n - len(marker)
	if keep < 2 {
		return safetext.Cut(s, n), true
	}
	head := safetext.Cut(s, keep/2)
	tail := strings.Clone(safetext.Tail(s, keep-len(head)))
	return head + marker + tail, true
}
