package llm

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/asterhq/aster/internal/safetext"
)

// AnthropicOptions configure the Anthropic provider.
type AnthropicOptions struct {
	Model           string
	BaseURL         string
	APIKey          string
	MaxOutputTokens int64
	// RequestTimeout is handed to the SDK so it does not refuse large
	// max_tokens for non-streaming calls; the Client's per-call context
	// deadline is what actually bounds each attempt.
	RequestTimeout time.Duration
	HTTP           HTTPOptions
}

// Anthropic is the Messages API provider.
type Anthropic struct {
	o      AnthropicOptions
	client anthropic.Client
	scrub  *safetext.Redactor
}

var _ Provider = (*Anthropic)(nil)

// NewAnthropic returns an Anthropic provider. The SDK's environment defaults
// (ANTHROPIC_* variables, profiles) and its retries are off: configuration
// comes from Aster's config only, and the Client retries.
func NewAnthropic(o AnthropicOptions) (*Anthropic, error) {
	if strings.TrimSpace(o.Model) == "" {
		return nil, &Error{Kind: KindConfig, Provider: "anthropic", msg: "no model configured (ASTER_LLM_MODEL)"}
	}
	if o.APIKey == "" {
		return nil, &Error{Kind: KindConfig, Provider: "anthropic", msg: "no API key (ASTER_LLM_API_KEY or ANTHROPIC_API_KEY)"}
	}
	if err := fillDefaults("anthropic", &o.BaseURL, DefaultAnthropicBaseURL, &o.MaxOutputTokens); err != nil {
		return nil, err
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultAnthropicRequestTimeout
	}
	client := anthropic.NewClient(
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(o.BaseURL),
		option.WithAPIKey(o.APIKey),
		option.WithMaxRetries(0),
		option.WithRequestTimeout(o.RequestTimeout),
		option.WithHTTPClient(o.HTTP.httpClient()),
	)
	return &Anthropic{o: o, client: client, scrub: safetext.NewRedactor([]string{o.APIKey})}, nil
}

// Name implements Provider.
func (p *Anthropic) Name() string { return "anthropic" }

// Model implements Provider.
func (p *Anthropic) Model() string { return p.o.Model }

// Complete implements Provider with one POST /v1/messages.
func (p *Anthropic) Complete(ctx context.Context, req Request) (Response, error) {
	params, err := p.params(req)
	if err != nil {
		return Response{}, err
	}
	res, err := p.client.Messages.New(ctx, params)
	if err != nil {
		return Response{}, p.classify(ctx, err)
	}
	return p.response(res)
}

func (p *Anthropic) params(req Request) (anthropic.MessageNewParams, error) {
	maxOut := req.MaxOutputTokens
	if maxOut <= 0 {
		maxOut = p.o.MaxOutputTokens
	}
	params := anthropic.MessageNewParams{Model: p.o.Model, MaxTokens: maxOut}
	if req.System != "" {
		params.System = []anthropic.TextBlockParam{{Text: req.System}}
	}
	// The Messages API alternates user and assistant turns; tool results are
	// user content. Consecutive user-side turns merge into one.
	var blocks []anthropic.ContentBlockParamUnion
	var role Role
	flush := func() {
		if len(blocks) == 0 {
			return
		}
		if role == RoleAssistant {
			params.Messages = append(params.Messages, anthropic.NewAssistantMessage(blocks...))
		} else {
			params.Messages = append(params.Messages, anthropic.NewUserMessage(blocks...))
		}
		blocks = nil
	}
	for _, m := range req.Messages {
		if m.Text == "" && len(m.ToolCalls) == 0 && len(m.ToolResults) == 0 {
			continue // an empty turn is not a turn
		}
		side := RoleUser
		if m.Role == RoleAssistant {
			side = RoleAssistant
		}
		if side != role {
			flush()
			role = side
		}
		switch m.Role {
		case RoleUser:
			if m.Text != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Text))
			}
		case RoleAssistant:
			if m.Text != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Text))
			}
			for _, c := range m.ToolCalls {
				var input any = map[string]any{}
				if len(c.Arguments) > 0 && json.Valid(c.Arguments) {
					input = json.RawMessage(c.Arguments)
				}
				blocks = append(blocks, anthropic.NewToolUseBlock(c.ID, input, c.Name))
			}
		case RoleTool:
			for _, r := range m.ToolResults {
				blocks = append(blocks, anthropic.NewToolResultBlock(r.CallID, r.Content, r.IsError))
			}
		default:
			return params, &Error{Kind: KindBadRequest, Provider: p.Name(), msg: "unknown message role " + string(m.Role)}
		}
	}
	flush()
	for _, t := range req.Tools {
		schema := anthropic.ToolInputSchemaParam{ExtraFields: map[string]any{}}
		for k, v := range t.Parameters {
			switch k {
			case "type":
			case "properties":
				schema.Properties = v
			case "required":
				schema.Required = toStrings(v)
			default:
				schema.ExtraFields[k] = v
			}
		}
		tp := anthropic.ToolParam{Name: t.Name, InputSchema: schema}
		if t.Description != "" {
			tp.Description = anthropic.String(t.Description)
		}
		params.Tools = append(params.Tools, anthropic.ToolUnionParam{OfTool: &tp})
	}
	if len(req.Tools) > 0 {
		if req.ToolChoice == ToolChoiceNone {
			params.ToolChoice = anthropic.ToolChoiceUnionParam{OfNone: &anthropic.ToolChoiceNoneParam{}}
		} else {
			params.ToolChoice = anthropic.ToolChoiceUnionParam{OfAuto: &anthropic.ToolChoiceAutoParam{}}
		}
	}
	if req.Schema != nil {
		params.OutputConfig.Format = anthropic.JSONOutputFormatParam{Schema: req.Schema.Schema}
	}
	return params, nil
}

func toStrings(v any) []string {
	switch x := v.(type) {
	case []string:
		return x
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func (p *Anthropic) response(res *anthropic.Message) (Response, error) {
	if res == nil {
		return Response{}, &Error{Kind: KindBadResponse, Provider: p.Name(), msg: "empty response"}
	}
	out := Response{
		Model: res.Model,
		Usage: Usage{
			InputTokens:       res.Usage.InputTokens + res.Usage.CacheCreationInputTokens + res.Usage.CacheReadInputTokens,
			OutputTokens:      res.Usage.OutputTokens,
			CachedInputTokens: res.Usage.CacheReadInputTokens,
		},
	}
	var text strings.Builder
	for _, b := range res.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			args := []byte(b.Input)
			if len(args) == 0 {
				args = []byte("{}")
			}
			out.ToolCalls = append(out.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Arguments: args})
		}
	}
	out.Text = text.String()
	switch res.StopReason {
	case anthropic.StopReasonEndTurn, anthropic.StopReasonStopSequence:
		out.Stop = StopEnd
	case anthropic.StopReasonMaxTokens, anthropic.StopReasonModelContextWindowExceeded:
		out.Stop = StopLength
	case anthropic.StopReasonToolUse:
		out.Stop = StopToolUse
	case anthropic.StopReasonRefusal:
		out.Stop = StopRefusal
	case "":
		out.Stop = StopUnknown
	default:
		out.Stop = StopOther
	}
	if res.Type != "" && res.Type != "message" {
		return Response{}, &Error{Kind: KindBadResponse, Provider: p.Name(), msg: "response is not a message"}
	}
	return out, nil
}

func (p *Anthropic) classify(ctx context.Context, err error) *Error {
	var ae *anthropic.Error
	if errors.As(err, &ae) {
		// 529 (overloaded) is a 5xx: unavailable, retried.
		return statusError(p.Name(), p.scrub, ae.StatusCode, ae.Response, ae.Message)
	}
	return transportError(p.Name(), p.scrub, ctx, err)
}
