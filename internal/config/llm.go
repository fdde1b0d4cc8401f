package config

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/asterhq/aster/internal/llm"
	"github.com/asterhq/aster/internal/units"
)

// Defaults of the model review (the `llm:` section). Every cap has a unit in
// its name; tokens are the provider's tokens, costs are US dollars.
const (
	DefaultLLMCallTimeout      = 2 * time.Minute
	DefaultLLMMaxRetries       = 3
	DefaultLLMBackoffBase      = time.Second
	DefaultLLMBackoffMax       = 30 * time.Second
	DefaultLLMMaxRetryWait     = time.Minute
	DefaultLLMMaxCalls         = 8
	DefaultLLMMaxChunks        = 3
	DefaultLLMMaxInputTokens   = 48_000                     // per call, prompt included
	DefaultLLMMaxOutputTokens  = llm.DefaultMaxOutputTokens // per call
	DefaultLLMMaxTotalTokens   = 200_000                    // per review, input plus output
	DefaultLLMMaxCostUSD       = 1.00                       // per review, when the model is priced
	DefaultLLMMaxResponseBytes = llm.DefaultMaxResponseBytes
	DefaultLLMMaxComments      = 25
	DefaultLLMMaxCommentBytes  = 4_000
	DefaultLLMMaxSummaryBytes  = 8_000

	// The providers' API roots and Anthropic's SDK request timeout: the llm
	// package's own.
	DefaultLLMOpenAIBaseURL           = llm.DefaultOpenAIBaseURL
	DefaultLLMAnthropicBaseURL        = llm.DefaultAnthropicBaseURL
	DefaultLLMAnthropicRequestTimeout = llm.DefaultAnthropicRequestTimeout

	DefaultAgenticMaxToolCalls   = 4
	DefaultAgenticMaxResultBytes = 8 << 10
	DefaultAgenticCommandTimeout = 2 * time.Minute
	// DefaultEvidenceMaxRuns is the operator's ceiling on the evidence runs
	// of one review (a repository's model.max_evidence_runs is bounded by it);
	// DefaultEvidenceTimeout bounds each run.
	DefaultEvidenceMaxRuns = 10
	DefaultEvidenceTimeout = 2 * time.Minute
	MaxEvidenceRuns        = 50

	// Ceilings: values past these are refused, not clamped.
	MaxLLMCalls        = 100
	MaxLLMChunks       = 50
	MaxAgenticCalls    = 50
	MaxLLMOutputTokens = 128_000
)

// LLM providers.
const (
	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"
)

// DefaultRedactEnv names variables whose values are always redacted from
// prompts and comments, when set.
var DefaultRedactEnv = []string{"GITHUB_TOKEN", "GH_TOKEN", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ASTER_LLM_API_KEY"}

// LLMConfig is the `llm:` section of aster.yaml, as a person writes it.
type LLMConfig struct {
	// Provider is openai (any OpenAI-compatible server) or anthropic; empty
	// turns the model review off.
	Provider string `yaml:"provider"`
	Model    string `yaml:"model"`
	// BaseURL points an OpenAI-compatible provider at Azure OpenAI, vLLM,
	// Ollama or llama.cpp (e.g. http://localhost:11434/v1).
	BaseURL string `yaml:"base_url"`
	// APIKey is better left to ASTER_LLM_API_KEY (or the provider's usual
	// variable) than written in a file.
	APIKey           Secret  `yaml:"api_key"`
	CallTimeout      string  `yaml:"call_timeout"`
	MaxRetries       *int    `yaml:"max_retries"`
	MaxRetryWait     string  `yaml:"max_retry_wait"`
	MaxCalls         int     `yaml:"max_calls"`
	MaxChunks        int     `yaml:"max_chunks"`
	MaxInputTokens   int64   `yaml:"max_input_tokens"`
	MaxOutputTokens  int64   `yaml:"max_output_tokens"`
	MaxTotalTokens   int64   `yaml:"max_total_tokens"`
	MaxCostUSD       float64 `yaml:"max_cost_usd"`
	MaxResponseBytes string  `yaml:"max_response_bytes"`
	// LegacyMaxTokens sends max_tokens instead of max_completion_tokens.
	LegacyMaxTokens bool `yaml:"legacy_max_tokens"`
	// Prices maps a model name (or a prefix ending in *) to its price.
	Prices map[string]LLMPrice `yaml:"prices"`
	// RedactEnv names variables whose values never reach the model.
	RedactEnv []string `yaml:"redact_env"`
	// LinkAllowlist names the hosts comments may link to (subdomains
	// included); every other link is removed.
	LinkAllowlist   []string       `yaml:"link_allowlist"`
	MaxComments     int            `yaml:"max_comments"`
	MaxCommentBytes int            `yaml:"max_comment_bytes"`
	MaxSummaryBytes int            `yaml:"max_summary_bytes"`
	Agentic         AgenticConfig  `yaml:"agentic"`
	Evidence        EvidenceConfig `yaml:"evidence"`
}

// LLMPrice is a model's price in US dollars per million tokens.
type LLMPrice struct {
	InputPerMTok       float64 `yaml:"input_per_mtok"`
	OutputPerMTok      float64 `yaml:"output_per_mtok"`
	CachedInputPerMTok float64 `yaml:"cached_input_per_mtok"`
}

// AgenticConfig bounds `aster review --agentic`: the model may run the tests
// or a command in a sandbox, at most MaxToolCalls times per review.
type AgenticConfig struct {
	MaxToolCalls   int    `yaml:"max_tool_calls"`
	MaxResultBytes string `yaml:"max_result_bytes"`
	CommandTimeout string `yaml:"command_timeout"`
}

// EvidenceConfig bounds the runs of model comments' evidence: at most
// MaxRuns per review (the ceiling of a repository's model.max_evidence_runs),
// each within Timeout.
type EvidenceConfig struct {
	MaxRuns int    `yaml:"max_runs"`
	Timeout string `yaml:"timeout"`
}

// Secret is a string that never prints: fmt, slog and YAML/JSON encoders see
// "[redacted]". Use Reveal to hand it to the one place that needs it.
type Secret string

// Reveal returns the secret itself.
func (s Secret) Reveal() string { return string(s) }

// String implements fmt.Stringer.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return "[redacted]"
}

// GoString implements fmt.GoStringer.
func (s Secret) GoString() string { return strconv.Quote(s.String()) }

// Format keeps %v, %s, %q and %x on the redacted form.
func (s Secret) Format(f fmt.State, verb rune) {
	switch verb {
	case 'q':
		fmt.Fprint(f, strconv.Quote(s.String()))
	default:
		fmt.Fprint(f, s.String())
	}
}

// LogValue implements slog.LogValuer.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalJSON keeps the secret out of JSON.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(strconv.Quote(s.String())), nil }

// MarshalYAML keeps the secret out of YAML.
func (s Secret) MarshalYAML() (any, error) { return s.String(), nil }

// envVars binds the ASTER_* variables of the `llm:` section to the fields of l.
func (l *LLMConfig) envVars() []envVar {
	return []envVar{
		str("ASTER_LLM_PROVIDER", &l.Provider, "model provider: openai (any OpenAI-compatible server) or anthropic; unset: no model review"),
		str("ASTER_LLM_MODEL", &l.Model, "model name"),
		str("ASTER_LLM_BASE_URL", &l.BaseURL, "API base URL (e.g. http://localhost:11434/v1 for Ollama)"),
		parsed("ASTER_LLM_API_KEY", func(v string) error { l.APIKey = Secret(v); return nil },
			"API key (else OPENAI_API_KEY or ANTHROPIC_API_KEY, by provider)"),
		parsed("ASTER_LLM_MAX_COST_USD", func(v string) error {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return fmt.Errorf("ASTER_LLM_MAX_COST_USD: %q is not a number", v)
			}
			l.MaxCostUSD = f
			return nil
		}, "cost cap per review in US dollars (priced models only)"),
	}
}

// LLMSection decodes the `llm:` section of c (absent: all defaults) and
// applies the ASTER_LLM_* variables over it. The API key falls back to the
// provider's usual variable.
//
// A key from the environment (ASTER_LLM_API_KEY, OPENAI_API_KEY,
// ANTHROPIC_API_KEY) goes only to an endpoint the operator chose (SECURITY.md
// O2): the provider's own, ASTER_LLM_BASE_URL, or base_url from a file that
// passed the ownership rule. A base_url from any other file with a key from the
// environment is refused, never sent the key.
func (c Config) LLMSection(getenv func(string) string) (LLMConfig, error) {
	var l LLMConfig
	if err := c.loadSection("llm", &l, getenv); err != nil {
		return l, err
	}
	l.Provider = strings.ToLower(strings.TrimSpace(l.Provider))
	keyVar := ""
	if v := strings.TrimSpace(getenv("ASTER_LLM_API_KEY")); v != "" {
		keyVar = "ASTER_LLM_API_KEY"
	}
	if l.APIKey == "" {
		name := map[string]string{ProviderOpenAI: "OPENAI_API_KEY", ProviderAnthropic: "ANTHROPIC_API_KEY"}[l.Provider]
		if v := strings.TrimSpace(getenv(name)); name != "" && v != "" {
			l.APIKey, keyVar = Secret(v), name
		}
	}
	fileURL := strings.TrimSpace(l.BaseURL) != "" && strings.TrimSpace(getenv("ASTER_LLM_BASE_URL")) == ""
	if keyVar != "" && fileURL && !c.Source.Trusted {
		file := c.Source.File
		if file == "" {
			file = "a configuration file that was not checked"
		}
		return l, fmt.Errorf("llm.base_url comes from %s, which is not known to be the operator's: the key in %s is sent only to the provider's endpoint, ASTER_LLM_BASE_URL, or base_url from a file that you or root own and no one else can write", file, keyVar)
	}
	return l, nil
}

// LLMSettings are the parsed, validated values of an LLMConfig, defaults
// filled in.
type LLMSettings struct {
	Provider         string
	Model            string
	BaseURL          string
	APIKey           Secret
	CallTimeout      time.Duration
	MaxRetries       int
	BackoffBase      time.Duration
	BackoffMax       time.Duration
	MaxRetryWait     time.Duration
	MaxCalls         int
	MaxChunks        int
	MaxInputTokens   int64
	MaxOutputTokens  int64
	MaxTotalTokens   int64
	MaxCostUSD       float64
	MaxResponseBytes int64
	LegacyMaxTokens  bool
	Prices           map[string]LLMPrice
	RedactEnv        []string
	LinkAllowlist    []string
	MaxComments      int
	MaxCommentBytes  int
	MaxSummaryBytes  int

	AgenticMaxToolCalls   int
	AgenticMaxResultBytes int
	AgenticCommandTimeout time.Duration

	EvidenceMaxRuns int
	EvidenceTimeout time.Duration
}

// Enabled reports whether a provider is configured.
func (s LLMSettings) Enabled() bool { return s.Provider != "" }

// SecretValues returns the values that must never reach a model or a comment:
// the API key and every set variable named by RedactEnv.
func (s LLMSettings) SecretValues(getenv func(string) string) []string {
	var out []string
	if k := s.APIKey.Reveal(); k != "" {
		out = append(out, k)
	}
	for _, name := range s.RedactEnv {
		if v := strings.TrimSpace(getenv(name)); v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// Parse fills defaults and validates. Messages name the field and what is
// allowed; none contains the API key.
func (l LLMConfig) Parse() (LLMSettings, error) {
	s := LLMSettings{
		Provider:        l.Provider,
		Model:           strings.TrimSpace(l.Model),
		BaseURL:         strings.TrimSpace(l.BaseURL),
		APIKey:          Secret(strings.TrimSpace(l.APIKey.Reveal())),
		MaxRetries:      DefaultLLMMaxRetries,
		BackoffBase:     DefaultLLMBackoffBase,
		BackoffMax:      DefaultLLMBackoffMax,
		LegacyMaxTokens: l.LegacyMaxTokens,
		Prices:          l.Prices,
		RedactEnv:       DefaultRedactEnv,
		LinkAllowlist:   nil,
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("llm "+format, args...)) }
	switch s.Provider {
	case "":
		if s.Model != "" {
			bad("model %q is set but no provider: set ASTER_LLM_PROVIDER to openai or anthropic", s.Model)
		}
	case ProviderOpenAI, ProviderAnthropic:
		if s.Model == "" {
			bad("provider %s needs a model (ASTER_LLM_MODEL)", s.Provider)
		}
		if s.Provider == ProviderAnthropic && s.APIKey == "" {
			bad("provider anthropic needs an API key (ASTER_LLM_API_KEY or ANTHROPIC_API_KEY)")
		}
	default:
		bad("provider %q: want openai or anthropic", s.Provider)
	}
	if s.BaseURL != "" {
		u, err := url.Parse(s.BaseURL)
		switch {
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			bad("base_url must be an http or https URL with a host")
		case u.User != nil:
			bad("base_url must not carry credentials; use ASTER_LLM_API_KEY")
		}
	}
	dur := func(name, v string, def time.Duration, dst *time.Duration) {
		*dst = def
		if strings.TrimSpace(v) == "" {
			return
		}
		d, err := units.ParseDuration(v)
		if err != nil || d <= 0 {
			bad("%s: %q is not a positive duration", name, v)
			return
		}
		*dst = d
	}
	dur("call_timeout", l.CallTimeout, DefaultLLMCallTimeout, &s.CallTimeout)
	dur("max_retry_wait", l.MaxRetryWait, DefaultLLMMaxRetryWait, &s.MaxRetryWait)
	dur("agentic.command_timeout", l.Agentic.CommandTimeout, DefaultAgenticCommandTimeout, &s.AgenticCommandTimeout)
	dur("evidence.timeout", l.Evidence.Timeout, DefaultEvidenceTimeout, &s.EvidenceTimeout)
	if l.MaxRetries != nil {
		if *l.MaxRetries < 0 || *l.MaxRetries > 10 {
			bad("max_retries %d: want 0 to 10", *l.MaxRetries)
		}
		s.MaxRetries = *l.MaxRetries
	}
	intIn(bad, "max_calls", l.MaxCalls, DefaultLLMMaxCalls, 1, MaxLLMCalls, &s.MaxCalls)
	intIn(bad, "max_chunks", l.MaxChunks, DefaultLLMMaxChunks, 1, MaxLLMChunks, &s.MaxChunks)
	intIn(bad, "max_comments", l.MaxComments, DefaultLLMMaxComments, 1, 200, &s.MaxComments)
	intIn(bad, "max_comment_bytes", l.MaxCommentBytes, DefaultLLMMaxCommentBytes, 200, 60_000, &s.MaxCommentBytes)
	intIn(bad, "max_summary_bytes", l.MaxSummaryBytes, DefaultLLMMaxSummaryBytes, 200, 60_000, &s.MaxSummaryBytes)
	intIn(bad, "agentic.max_tool_calls", l.Agentic.MaxToolCalls, DefaultAgenticMaxToolCalls, 1, MaxAgenticCalls, &s.AgenticMaxToolCalls)
	intIn(bad, "evidence.max_runs", l.Evidence.MaxRuns, DefaultEvidenceMaxRuns, 1, MaxEvidenceRuns, &s.EvidenceMaxRuns)
	intIn(bad, "max_input_tokens", l.MaxInputTokens, DefaultLLMMaxInputTokens, 2_000, 2_000_000, &s.MaxInputTokens)
	intIn(bad, "max_output_tokens", l.MaxOutputTokens, DefaultLLMMaxOutputTokens, 256, MaxLLMOutputTokens, &s.MaxOutputTokens)
	intIn(bad, "max_total_tokens", l.MaxTotalTokens, DefaultLLMMaxTotalTokens, 2_000, 100_000_000, &s.MaxTotalTokens)
	if s.MaxTotalTokens < s.MaxInputTokens+s.MaxOutputTokens && l.MaxTotalTokens != 0 {
		bad("max_total_tokens %d is less than one call (max_input_tokens + max_output_tokens = %d)", s.MaxTotalTokens, s.MaxInputTokens+s.MaxOutputTokens)
	}
	s.MaxCostUSD = DefaultLLMMaxCostUSD
	if l.MaxCostUSD != 0 {
		if l.MaxCostUSD < 0 || l.MaxCostUSD > 10_000 {
			bad("max_cost_usd %v: want more than 0 and at most 10000", l.MaxCostUSD)
		}
		s.MaxCostUSD = l.MaxCostUSD
	}
	size := func(name, v string, def, lo, hi int64) int64 {
		if strings.TrimSpace(v) == "" {
			return def
		}
		n, err := units.ParseBytes(v)
		if err != nil || n < lo || n > hi {
			bad("%s %q: want %s to %s", name, v, units.FormatBytes(lo), units.FormatBytes(hi))
			return def
		}
		return n
	}
	s.MaxResponseBytes = size("max_response_bytes", l.MaxResponseBytes, DefaultLLMMaxResponseBytes, 64<<10, 256<<20)
	s.AgenticMaxResultBytes = int(size("agentic.max_result_bytes", l.Agentic.MaxResultBytes, DefaultAgenticMaxResultBytes, 512, 1<<20))
	for _, model := range slices.Sorted(maps.Keys(l.Prices)) {
		if p := l.Prices[model]; p.InputPerMTok < 0 || p.OutputPerMTok < 0 || p.CachedInputPerMTok < 0 {
			bad("prices[%q]: prices must not be negative", model)
		}
	}
	if len(l.RedactEnv) > 0 {
		s.RedactEnv = append(slices.Clone(DefaultRedactEnv), l.RedactEnv...)
	}
	for _, h := range l.LinkAllowlist {
		h = strings.ToLower(strings.TrimSpace(h))
		if h == "" || strings.ContainsAny(h, "/:@ *") {
			bad("link_allowlist entry %q: want a host name such as docs.python.org", h)
			continue
		}
		s.LinkAllowlist = append(s.LinkAllowlist, h)
	}
	if len(errs) > 0 {
		return s, errors.Join(errs...)
	}
	return s, nil
}

// intIn sets *dst to v, or to def where v is 0 (not set) or outside lo to
// hi, which it reports to bad as "NAME V: want LO to HI".
func intIn[T int | int64](bad func(format string, args ...any), name string, v, def, lo, hi T, dst *T) {
	*dst = def
	if v == 0 {
		return
	}
	if v < lo || v > hi {
		bad("%s %d: want %d to %d", name, v, lo, hi)
		return
	}
	*dst = v
}
