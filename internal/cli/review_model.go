package cli

import (
	"log/slog"

	"github.com/spf13/pflag"

	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/llm"
	"github.com/asterhq/aster/internal/review"
	"github.com/asterhq/aster/internal/review/modelstep"
	"github.com/asterhq/aster/internal/safetext"
	"github.com/asterhq/aster/internal/sandbox"
)

// modelFlags are the model review's flags of `aster review`.
type modelFlags struct {
	agentic bool
	noModel bool
}

func addModelFlags(fl *pflag.FlagSet, f *modelFlags) {
	fl.BoolVar(&f.agentic, "agentic", false, "let the model run the tests or a command in a sandbox to check its claims (at most llm.agentic.max_tool_calls per review)")
	fl.BoolVar(&f.noModel, "no-model", false, "skip the model review even when a provider is configured")
}

// checkModelFlags refuses a bad llm configuration, or --agentic without a
// model, before anything is started.
func checkModelFlags(c config.Config, getenv func(string) string, f modelFlags) error {
	lc, err := c.LLMSection(getenv)
	if err != nil {
		return usageErr("%v", err)
	}
	s, err := lc.Parse()
	if err != nil {
		return usageErr("%v", err)
	}
	if f.agentic && (f.noModel || !s.Enabled()) {
		return usageErr("--agentic needs a model: set ASTER_LLM_PROVIDER and ASTER_LLM_MODEL (or the llm: section of aster.yaml), without --no-model")
	}
	return nil
}

// reviewSandbox is what agentic mode needs from `aster review`: the sandbox
// Manager, the image and limits, and the change itself.
type reviewSandbox struct {
	sandbox gate.Sandbox
	image   string
	limits  sandbox.Limits
	change  *review.Change
}

// newReviewer builds the model step from the `llm:` section and ASTER_LLM_*.
// It returns nil (the report says the model was skipped) when no provider is
// configured or --no-model is given.
func newReviewer(c config.Config, log *slog.Logger, getenv func(string) string, f modelFlags, sb reviewSandbox) (review.Reviewer, error) {
	lc, err := c.LLMSection(getenv)
	if err != nil {
		return nil, err
	}
	s, err := lc.Parse()
	if err != nil {
		return nil, err
	}
	if f.noModel || !s.Enabled() {
		return nil, nil
	}
	provider, err := newProvider(s)
	if err != nil {
		return nil, err
	}
	prices := llm.PriceTable{}
	for model, p := range s.Prices {
		prices[model] = llm.Price{InputPerMTok: p.InputPerMTok, OutputPerMTok: p.OutputPerMTok, CachedInputPerMTok: p.CachedInputPerMTok}
	}
	client := llm.NewClient(provider, llm.ClientOptions{
		CallTimeout: s.CallTimeout, MaxRetries: s.MaxRetries, BackoffBase: s.BackoffBase, BackoffMax: s.BackoffMax,
		MaxRetryAfter: s.MaxRetryWait, MaxCalls: s.MaxCalls, MaxOutputTokens: s.MaxOutputTokens,
		MaxTotalTokens: s.MaxTotalTokens, MaxCostUSD: s.MaxCostUSD, Prices: prices, Logger: log,
	})
	opts := modelstep.ModelOptions{
		Client: client, MaxInputTokens: s.MaxInputTokens, MaxOutputTokens: s.MaxOutputTokens, MaxChunks: s.MaxChunks,
		MaxComments: s.MaxComments, MaxSummaryBytes: s.MaxSummaryBytes,
		Sanitize: safetext.SanitizeOptions{AllowedHosts: s.LinkAllowlist, MaxBytes: s.MaxCommentBytes},
		Secrets:  s.SecretValues(getenv), Logger: log,
	}
	if f.agentic {
		if sb.sandbox == nil || sb.change == nil {
			return nil, usageErr("--agentic needs a sandbox")
		}
		opts.Agent = &modelstep.Agent{Sandbox: sb.sandbox, Image: sb.image, Limits: sb.limits,
			Timeout: s.AgenticCommandTimeout, Change: sb.change, Config: sb.change.Config}
		opts.MaxToolCalls, opts.MaxResultBytes = s.AgenticMaxToolCalls, s.AgenticMaxResultBytes
	}
	return modelstep.NewModelReviewer(opts)
}

// newProvider builds the configured provider; the key goes to the SDK and
// nowhere else.
func newProvider(s config.LLMSettings) (llm.Provider, error) {
	httpOpts := llm.HTTPOptions{MaxResponseBytes: s.MaxResponseBytes}
	switch s.Provider {
	case config.ProviderAnthropic:
		return llm.NewAnthropic(llm.AnthropicOptions{Model: s.Model, BaseURL: s.BaseURL, APIKey: s.APIKey.Reveal(),
			MaxOutputTokens: s.MaxOutputTokens, RequestTimeout: s.CallTimeout, HTTP: httpOpts})
	default:
		return llm.NewOpenAI(llm.OpenAIOptions{Model: s.Model, BaseURL: s.BaseURL, APIKey: s.APIKey.Reveal(),
			MaxOutputTokens: s.MaxOutputTokens, LegacyMaxTokens: s.LegacyMaxTokens, HTTP: httpOpts})
	}
}
