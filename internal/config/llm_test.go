package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/testkit"
	"go.yaml.in/yaml/v3"
)

const llmTestKey = "sk-config-test-3Jd8sLw0qZ"

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestLLMSectionDefaultsOff(t *testing.T) {
	c := Default()
	l, err := c.LLMSection(envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	s, err := l.Parse()
	if err != nil {
		t.Fatal(err)
	}
	if s.Enabled() || s.MaxCalls != DefaultLLMMaxCalls || s.MaxInputTokens != DefaultLLMMaxInputTokens ||
		s.CallTimeout != DefaultLLMCallTimeout || s.MaxCostUSD != DefaultLLMMaxCostUSD || s.AgenticMaxToolCalls != DefaultAgenticMaxToolCalls {
		t.Fatalf("defaults = %+v", s)
	}
}

func TestLLMSectionFileThenEnv(t *testing.T) {
	yml := `
llm:
  provider: openai
  model: llama3.1
  base_url: http://localhost:11434/v1
  call_timeout: 30s
  max_retries: 0
  max_calls: 5
  max_chunks: 2
  max_input_tokens: 8000
  max_cost_usd: 0.25
  prices:
    "gpt-4o*": {input_per_mtok: 2.5, output_per_mtok: 10}
  link_allowlist: [docs.python.org, Go.dev]
  redact_env: [MY_DB_PASSWORD]
  agentic:
    max_tool_calls: 2
    max_result_bytes: 4k
`
	p := writeConfig(t, yml)
	env := map[string]string{"ASTER_LLM_MODEL": "qwen2.5-coder", "OPENAI_API_KEY": llmTestKey, "MY_DB_PASSWORD": "hunter2-but-longer"}
	c, err := Load(p, envOf(env))
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.LLMSection(envOf(env))
	if err != nil {
		t.Fatal(err)
	}
	s, err := l.Parse()
	if err != nil {
		t.Fatal(err)
	}
	if s.Provider != "openai" || s.Model != "qwen2.5-coder" || s.BaseURL != "http://localhost:11434/v1" ||
		s.APIKey.Reveal() != llmTestKey || s.CallTimeout != 30*time.Second || s.MaxRetries != 0 || s.MaxCalls != 5 ||
		s.MaxChunks != 2 || s.MaxInputTokens != 8000 || s.MaxCostUSD != 0.25 || s.AgenticMaxToolCalls != 2 ||
		s.AgenticMaxResultBytes != 4096 || s.Prices["gpt-4o*"].OutputPerMTok != 10 {
		t.Fatalf("settings = %+v", s)
	}
	if fmt.Sprint(s.LinkAllowlist) != "[docs.python.org go.dev]" {
		t.Fatalf("allowlist = %v", s.LinkAllowlist)
	}
	secrets := s.SecretValues(envOf(env))
	if len(secrets) != 2 || secrets[0] != llmTestKey || secrets[1] != "hunter2-but-longer" {
		t.Fatalf("secret values = %d", len(secrets))
	}
}

func TestLLMKeyFallbackByProvider(t *testing.T) {
	env := map[string]string{"ASTER_LLM_PROVIDER": "Anthropic", "ASTER_LLM_MODEL": "claude-x", "ANTHROPIC_API_KEY": "ak", "OPENAI_API_KEY": "ok"}
	l, err := Default().LLMSection(envOf(env))
	if err != nil {
		t.Fatal(err)
	}
	if l.Provider != "anthropic" || l.APIKey.Reveal() != "ak" {
		t.Fatalf("provider %q key %q", l.Provider, l.APIKey.Reveal())
	}
	env["ASTER_LLM_API_KEY"] = "explicit"
	l, _ = Default().LLMSection(envOf(env))
	if l.APIKey.Reveal() != "explicit" {
		t.Fatal("ASTER_LLM_API_KEY does not win")
	}
}

func TestLLMParseErrors(t *testing.T) {
	cases := map[string]LLMConfig{
		"unknown provider":  {Provider: "bard", Model: "x"},
		"model only":        {Model: "x"},
		"no model":          {Provider: "openai"},
		"anthropic no key":  {Provider: "anthropic", Model: "c"},
		"ftp base":          {Provider: "openai", Model: "m", BaseURL: "ftp://h/v1"},
		"creds in base":     {Provider: "openai", Model: "m", BaseURL: "https://u:" + llmTestKey + "@h/v1"},
		"zero timeout":      {Provider: "openai", Model: "m", CallTimeout: "0s"},
		"calls too many":    {Provider: "openai", Model: "m", MaxCalls: 1000},
		"negative cost":     {Provider: "openai", Model: "m", MaxCostUSD: -1},
		"tiny input":        {Provider: "openai", Model: "m", MaxInputTokens: 10},
		"total under call":  {Provider: "openai", Model: "m", MaxTotalTokens: 5000},
		"bad allowlist":     {Provider: "openai", Model: "m", LinkAllowlist: []string{"https://x.com/"}},
		"negative price":    {Provider: "openai", Model: "m", Prices: map[string]LLMPrice{"m": {InputPerMTok: -1}}},
		"huge result bytes": {Provider: "openai", Model: "m", Agentic: AgenticConfig{MaxResultBytes: "1g"}},
	}
	for name, l := range cases {
		l.APIKey = Secret(llmTestKey)
		if name == "anthropic no key" {
			l.APIKey = ""
		}
		_, err := l.Parse()
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if strings.Contains(err.Error(), llmTestKey) {
			t.Errorf("%s: error shows the key: %v", name, err)
		}
	}
}

// Several bad prices are named in one order, not the map's.
func TestLLMParsePriceErrorsSorted(t *testing.T) {
	l := LLMConfig{Provider: "openai", Model: "m", APIKey: Secret(llmTestKey), Prices: map[string]LLMPrice{
		"c": {InputPerMTok: -1}, "a": {OutputPerMTok: -1}, "d": {CachedInputPerMTok: -1}, "b": {InputPerMTok: -2}, "ok": {InputPerMTok: 1}}}
	got := testkit.Same(t, func() string {
		_, err := l.Parse()
		return fmt.Sprint(err)
	})
	var want []string
	for _, m := range []string{"a", "b", "c", "d"} {
		want = append(want, fmt.Sprintf("llm prices[%q]: prices must not be negative", m))
	}
	if got != strings.Join(want, "\n") {
		t.Errorf("error:\n%s\nwant\n%s", got, strings.Join(want, "\n"))
	}
}

// intIn keeps a value in range, takes the default for 0 and for a value out
// of range, and names only the latter.
func TestIntIn(t *testing.T) {
	var said []string
	bad := func(format string, args ...any) { said = append(said, fmt.Sprintf(format, args...)) }
	for _, c := range []struct {
		v, want int64
		said    string
	}{{0, 7, ""}, {5, 5, ""}, {1, 1, ""}, {10, 10, ""}, {11, 7, "n 11: want 1 to 10"}, {-3, 7, "n -3: want 1 to 10"}} {
		said = nil
		dst := int64(-1)
		intIn(bad, "n", c.v, 7, 1, 10, &dst)
		if dst != c.want || strings.Join(said, "; ") != c.said {
			t.Errorf("intIn(%d) = %d, said %q; want %d, %q", c.v, dst, said, c.want, c.said)
		}
	}
}

func TestSecretNeverPrints(t *testing.T) {
	l := LLMConfig{Provider: "openai", Model: "m", APIKey: Secret(llmTestKey)}
	s, err := l.Parse()
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	slog.New(slog.NewTextHandler(&logs, nil)).Info("settings", "llm", s, "key", s.APIKey)
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("settings", "key", s.APIKey)
	js, _ := json.Marshal(s)
	ym, _ := yaml.Marshal(l)
	for _, out := range []string{fmt.Sprint(s), fmt.Sprintf("%+v", s), fmt.Sprintf("%#v", s), fmt.Sprintf("%q %x %s %d", s.APIKey, s.APIKey, s.APIKey, s.APIKey),
		string(js), string(ym), logs.String()} {
		if strings.Contains(out, llmTestKey) {
			t.Fatalf("key printed: %s", out)
		}
	}
	if s.APIKey.Reveal() != llmTestKey {
		t.Fatal("Reveal lost the key")
	}
}
