package llm

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/asterhq/aster/internal/safetext"
)

// OpenAIOptions configure an OpenAI-compatible provider.
type OpenAIOptions struct {
	Model string
	// BaseURL ends in the API version, e.g. http://localhost:11434/v1.
	BaseURL string
	// APIKey may be empty for local servers that need none.
	APIKey          string
	MaxOutputTokens int64
	// LegacyMaxTokens sends max_tokens instead of max_completion_tokens, for
	// servers that know only the older field.
	LegacyMaxTokens bool
	HTTP            HTTPOptions
}

// OpenAI is the OpenAI-compatible chat-completions provider.
type OpenAI struct {
	o      OpenAIOptions
	client openai.Client
	scrub  *safetext.Redactor
}

var _ Provider = (*OpenAI)(nil)

// NewOpenAI returns an OpenAI-compatible provider. The SDK's own retries are
// off: the Client retries, so the policy is one and tested.
func NewOpenAI(o OpenAIOptions) (*OpenAI, error) {
	if strings.TrimSpace(o.Model) == "" {
		return nil, &Error{Kind: KindConfig, Provider: "openai", msg: "no model configured (ASTER_LLM_MODEL)"}
	}
	if err := fillDefaults("openai", &o.BaseURL, DefaultOpenAIBaseURL, &o.MaxOutputTokens); err != nil {
		return nil, err
	}
	// The SDK reads OPENAI_* variables by default; every option that matters
	// is set explicitly after them, an empty key included, so the process
	// environment never silently picks the server or the credential.
	client := openai.NewClient(
		option.WithBaseURL(o.BaseURL),
		option.WithAPIKey(o.APIKey),
		option.WithMaxRetries(0),
		option.WithHTTPClient(o.HTTP.httpClient()),
	)
	return &OpenAI{o: o, client: client, scrub: safetext.NewRedactor([]string{o.APIKey})}, nil
}

// Name implements Provider.
func (p *OpenAI) Name() string { return "openai" }

// Model implements Provider.
func (p *OpenAI) Model() string { return p.o.Model }

// Complete implements Provider with one POST /chat/completions.
func (p *OpenAI) Complete(ctx context.Context, req Request) (Response, error) {
	params, err := p.params(req)
	if err != nil {
		return Response{}, err
	}
	res, err := p.client.Chat.Completions.New(ctx, params)
	if err != nil {
		return Response{}, p.classify(ctx, err)
	}
	return p.response(res)
}

func (p *OpenAI) params(req Request) (openai.ChatCompletionNewParams, error) {
	params := openai.ChatCompletionNewParams{Model: shared.ChatModel(p.o.Model)}
	if req.System != "" {
		params.Messages = append(params.Messages, openai.SystemMessage(req.System))
	}
	for _, m := range req.Messages {
		if m.Text == "" && len(m.ToolCalls) == 0 && len(m.ToolResults) == 0 {
			continue // an empty turn is not a turn
		}
		switch m.Role {
		case RoleUser:
			params.Messages = append(params.Messages, openai.UserMessage(m.Text))
		case RoleAssistant:
			a := openai.ChatCompletionAssistantMessageParam{}
			if m.Text != "" {
				a.Content.OfString = openai.String(m.Text)
			}
			for _, c := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID:       c.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: string(c.Arguments)},
					},
				})
			}
			params.Messages = append(params.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case RoleTool:
			for _, r := range m.ToolResults {
				params.Messages = append(params.Messages, openai.ToolMessage(r.Content, r.CallID))
			}
		default:
			return params, &Error{Kind: KindBadRequest, Provider: p.Name(), msg: "unknown message role " + string(m.Role)}
		}
	}
	for _, t := range req.Tools {
		params.Tools = append(params.Tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name:        t.Name,
			Description: openai.String(t.Description),
			Parameters:  shared.FunctionParameters(t.Parameters),
		}))
	}
	if len(req.Tools) > 0 {
		choice := req.ToolChoice
		if choice == "" {
			choice = ToolChoiceAuto
		}
		params.ToolChoice.OfAuto = openai.String(string(choice))
	}
	if req.Schema != nil {
		params.ResponseFormat.OfJSONSchema = &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
				Name:   req.Schema.Name,
				Strict: openai.Bool(true),
				Schema: req.Schema.Schema,
			},
		}
	}
	maxOut := req.MaxOutputTokens
	if maxOut <= 0 {
		maxOut = p.o.MaxOutputTokens
	}
	if p.o.LegacyMaxTokens {
		params.MaxTokens = openai.Int(maxOut)
	} else {
		params.MaxCompletionTokens = openai.Int(maxOut)
	}
	return params, nil
}

func (p *OpenAI) response(res *openai.ChatCompletion) (Response, error) {
	if res == nil || len(res.Choices) == 0 {
		return Response{}, &Error{Kind: KindBadResponse, Provider: p.Name(), msg: "response has no choices"}
	}
	ch := res.Choices[0]
	out := Response{
		Text:  ch.Message.Content,
		Model: res.Model,
		Usage: Usage{
			InputTokens:       res.Usage.PromptTokens,
			OutputTokens:      res.Usage.CompletionTokens,
			CachedInputTokens: res.Usage.PromptTokensDetails.CachedTokens,
		},
	}
	for _, c := range ch.Message.ToolCalls {
		if c.Type != "function" {
			continue
		}
		out.ToolCalls = append(out.ToolCalls, ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: []byte(c.Function.Arguments)})
	}
	switch ch.FinishReason {
	case "stop":
		out.Stop = StopEnd
	case "length":
		out.Stop = StopLength
	case "tool_calls", "function_call":
		out.Stop = StopToolUse
	case "content_filter":
		out.Stop = StopFiltered
	case "":
		out.Stop = StopUnknown
	default:
		out.Stop = StopOther
	}
	if ch.Message.Refusal != "" {
		out.Stop = StopRefusal
	}
	if len(out.ToolCalls) > 0 && out.Stop != StopLength {
		out.Stop = StopToolUse
	}
	return out, nil
}

func (p *OpenAI) classify(ctx context.Context, err error) *Error {
	var ae *openai.Error
	if errors.As(err, &ae) {
		return statusError(p.Name(), p.scrub, ae.StatusCode, ae.Response, ae.Message)
	}
	return transportError(p.Name(), p.scrub, ctx, err)
}

// transportError classifies an error that carried no HTTP status.
func transportError(provider string, scrub *safetext.Redactor, ctx context.Context, err error) *Error {
	switch {
	case ctx.Err() != nil:
		return &Error{Kind: KindTimeout, Provider: provider, msg: "per-call timeout passed", cause: ctx.Err()}
	case errors.Is(err, errBodyTooLarge):
		return &Error{Kind: KindBadResponse, Provider: provider, msg: "response body larger than the cap"}
	}
	var ne net.Error
	var re *bodyReadError
	if errors.As(err, &ne) || errors.As(err, &re) {
		return &Error{Kind: KindUnavailable, Provider: provider, msg: excerpt(scrub.RedactString(err.Error()), 300)}
	}
	return &Error{Kind: KindBadResponse, Provider: provider, msg: excerpt(scrub.RedactString(err.Error()), 300)}
}

// fillDefaults fills the options every provider has: an empty base URL is
// defBase, a non-positive output cap is config's. A base URL checkBaseURL
// refuses is a KindConfig error of provider.
func fillDefaults(provider string, baseURL *string, defBase string, maxOutputTokens *int64) error {
	if *baseURL == "" {
		*baseURL = defBase
	}
	if err := checkBaseURL(*baseURL); err != nil {
		return &Error{Kind: KindConfig, Provider: provider, msg: err.Error()}
	}
	if *maxOutputTokens <= 0 {
		*maxOutputTokens = DefaultMaxOutputTokens
	}
	return nil
}

// checkBaseURL accepts http and https URLs with a host.
func checkBaseURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return errors.New("base URL does not parse")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return errors.New("base URL must be http or https")
	}
	if u.Host == "" {
		return errors.New("base URL has no host")
	}
	if u.User != nil {
		return errors.New("base URL must not carry credentials; use ASTER_LLM_API_KEY")
	}
	return nil
}
