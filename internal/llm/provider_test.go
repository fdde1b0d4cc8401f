package llm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/llm"
	"github.com/asterhq/aster/internal/llm/llmtest"
)

const testKey = "sk-test-Zq81hVbX0pLm3Ki9"

// fake is one provider wired to its fake server.
type fake struct {
	name string
	// native stop reasons
	stopLength, stopTool string
	start                func(t testing.TB, script ...llmtest.Reply) *llmtest.Server
	// build makes the provider pointed at srv.
	build func(srv *llmtest.Server, h llm.HTTPOptions) (llm.Provider, error)
}

// provider is f's provider pointed at srv, its HTTP options changed by mut.
func (f fake) provider(t testing.TB, srv *llmtest.Server, mut ...func(*llm.HTTPOptions)) llm.Provider {
	var h llm.HTTPOptions
	for _, m := range mut {
		m(&h)
	}
	p, err := f.build(srv, h)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// eachFake runs body as a parallel subtest for every fake provider.
func eachFake(t *testing.T, body func(t *testing.T, f fake)) {
	for _, f := range fakes {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			body(t, f)
		})
	}
}

var fakes = []fake{
	{
		name: "openai", stopLength: "length", stopTool: "tool_calls",
		start: func(t testing.TB, script ...llmtest.Reply) *llmtest.Server {
			return llmtest.OpenAI(t, testKey, script...)
		},
		build: func(srv *llmtest.Server, h llm.HTTPOptions) (llm.Provider, error) {
			return llm.NewOpenAI(llm.OpenAIOptions{Model: "gpt-test", BaseURL: srv.URL, APIKey: testKey, HTTP: h})
		},
	},
	{
		name: "anthropic", stopLength: "max_tokens", stopTool: "tool_use",
		start: func(t testing.TB, script ...llmtest.Reply) *llmtest.Server {
			return llmtest.Anthropic(t, testKey, script...)
		},
		build: func(srv *llmtest.Server, h llm.HTTPOptions) (llm.Provider, error) {
			return llm.NewAnthropic(llm.AnthropicOptions{Model: "claude-test", BaseURL: srv.URL, APIKey: testKey, HTTP: h})
		},
	},
}

// sleeps records the waits the Client asked for instead of waiting.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d = append(s.d, d)
	return ctx.Err()
}

func (s *sleeps) got() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

var reviewSchema = &llm.Schema{Name: "review", Schema: map[string]any{
	"type": "object", "additionalProperties": false, "required": []any{"summary"},
	"properties": map[string]any{"summary": map[string]any{"type": "string"}},
}}

var runTestsTool = llm.Tool{Name: "run_tests", Description: "run the tests",
	Parameters: map[string]any{"type": "object", "additionalProperties": false, "properties": map[string]any{
		"filter": map[string]any{"type": "string"}}, "required": []any{"filter"}}}

func baseRequest() llm.Request {
	return llm.Request{
		System:   "You review code.",
		Messages: []llm.Message{{Role: llm.RoleUser, Text: "please review"}},
		Schema:   reviewSchema,
		Tools:    []llm.Tool{runTestsTool},
	}
}

func TestProviderSuccess(t *testing.T) {
	eachFake(t, func(t *testing.T, f fake) {
		srv := f.start(t, llmtest.Reply{Text: `{"summary":"ok"}`, InputTokens: 1200, OutputTokens: 34})
		c := llm.NewClient(f.provider(t, srv), llm.ClientOptions{MaxOutputTokens: 777,
			Prices: llm.PriceTable{"gpt-*": {InputPerMTok: 2, OutputPerMTok: 8}, "claude-*": {InputPerMTok: 2, OutputPerMTok: 8}}})
		resp, err := c.Complete(t.Context(), baseRequest())
		if err != nil {
			t.Fatal(err)
		}
		if resp.Text != `{"summary":"ok"}` || resp.Stop != llm.StopEnd || len(resp.ToolCalls) != 0 {
			t.Fatalf("response = %+v", resp)
		}
		st := c.Stats()
		if st.Calls != 1 || st.Attempts != 1 || st.Usage.InputTokens != 1200 || st.Usage.OutputTokens != 34 {
			t.Fatalf("stats = %+v", st)
		}
		if want := (1200*2.0 + 34*8.0) / 1e6; !st.CostKnown || abs(st.CostUSD-want) > 1e-12 {
			t.Fatalf("cost = %v (known %v), want %v", st.CostUSD, st.CostKnown, want)
		}
		reqs := srv.Requests()
		if len(reqs) != 1 || reqs[0].Problem != "" {
			t.Fatalf("requests = %+v", reqs)
		}
		body := string(reqs[0].Body)
		if strings.Contains(body, testKey) {
			t.Fatal("API key in request body")
		}
		j := reqs[0].JSON
		switch f.name {
		case "openai":
			if j["max_completion_tokens"] != 777.0 || j["model"] != "gpt-test" {
				t.Fatalf("body = %s", body)
			}
			rf := j["response_format"].(map[string]any)
			if rf["type"] != "json_schema" {
				t.Fatalf("response_format = %v", rf)
			}
			if j["tool_choice"] != "auto" || len(j["tools"].([]any)) != 1 {
				t.Fatalf("tools = %v / %v", j["tools"], j["tool_choice"])
			}
			msgs := j["messages"].([]any)
			if msgs[0].(map[string]any)["role"] != "system" {
				t.Fatalf("first message = %v", msgs[0])
			}
		case "anthropic":
			if j["max_tokens"] != 777.0 || j["model"] != "claude-test" {
				t.Fatalf("body = %s", body)
			}
			oc := j["output_config"].(map[string]any)["format"].(map[string]any)
			if oc["type"] != "json_schema" {
				t.Fatalf("output_config = %v", oc)
			}
			if j["tool_choice"].(map[string]any)["type"] != "auto" {
				t.Fatalf("tool_choice = %v", j["tool_choice"])
			}
			if reqs[0].Header.Get("Anthropic-Version") == "" {
				t.Fatal("no anthropic-version")
			}
		}
	})
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

func TestProviderRetryAfter429(t *testing.T) {
	eachFake(t, func(t *testing.T, f fake) {
		srv := f.start(t,
			llmtest.Reply{Status: 429, ErrorMessage: "slow down", Header: map[string]string{"Retry-After": "7"}},
			llmtest.Reply{Status: 429, ErrorMessage: "slow down", Header: map[string]string{"Retry-After-Ms": "1500"}},
			llmtest.Reply{Text: `{"summary":"ok"}`})
		var s sleeps
		c := llm.NewClient(f.provider(t, srv), llm.ClientOptions{MaxRetries: 3, BackoffBase: time.Second,
			MaxRetryAfter: time.Minute, Sleep: s.sleep})
		if _, err := c.Complete(t.Context(), baseRequest()); err != nil {
			t.Fatal(err)
		}
		if got, want := s.got(), []time.Duration{7 * time.Second, 1500 * time.Millisecond}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("waits = %v, want %v", got, want)
		}
		st := c.Stats()
		if st.Calls != 1 || st.Attempts != 3 || st.Retries != 2 || len(srv.Requests()) != 3 {
			t.Fatalf("stats = %+v, requests %d", st, len(srv.Requests()))
		}
	})
}

func TestProviderRetryAfterTooLong(t *testing.T) {
	eachFake(t, func(t *testing.T, f fake) {
		srv := f.start(t, llmtest.Reply{Status: 429, ErrorMessage: "quota", Header: map[string]string{"Retry-After": "3600"}})
		var s sleeps
		c := llm.NewClient(f.provider(t, srv), llm.ClientOptions{MaxRetries: 3, MaxRetryAfter: time.Minute, Sleep: s.sleep})
		_, err := c.Complete(t.Context(), baseRequest())
		if !errors.Is(err, llm.ErrRateLimited) {
			t.Fatalf("err = %v", err)
		}
		var e *llm.Error
		if !errors.As(err, &e) || e.Status != 429 || e.RetryAfter != time.Hour {
			t.Fatalf("err = %#v", err)
		}
		if len(s.got()) != 0 || len(srv.Requests()) != 1 {
			t.Fatalf("waited %v, %d requests", s.got(), len(srv.Requests()))
		}
	})
}

func TestProviderRealRetryAfterWait(t *testing.T) {
	// One test with the real clock: the Client really waits what the server asked.
	f := fakes[0]
	srv := f.start(t, llmtest.Reply{Status: 429, Header: map[string]string{"Retry-After-Ms": "300"}}, llmtest.Reply{Text: "{}"})
	c := llm.NewClient(f.provider(t, srv), llm.ClientOptions{MaxRetries: 1, MaxRetryAfter: time.Second})
	start := time.Now()
	if _, err := c.Complete(t.Context(), baseRequest()); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < 300*time.Millisecond {
		t.Fatalf("retried after %v, before Retry-After", el)
	}
}

func TestProvider500ThenSuccess(t *testing.T) {
	eachFake(t, func(t *testing.T, f fake) {
		status := 500
		if f.name == "anthropic" {
			status = 529 // overloaded
		}
		srv := f.start(t, llmtest.Reply{Status: status, ErrorMessage: "boom"}, llmtest.Reply{Status: 503}, llmtest.Reply{Text: "{}"})
		var s sleeps
		c := llm.NewClient(f.provider(t, srv), llm.ClientOptions{MaxRetries: 2, BackoffBase: time.Second,
			BackoffMax: 10 * time.Second, Sleep: s.sleep, Rand: func() float64 { return 1 }})
		if _, err := c.Complete(t.Context(), baseRequest()); err != nil {
			t.Fatal(err)
		}
		// equal jitter with rand=1 gives the full exponential step
		if got := s.got(); fmt.Sprint(got) != fmt.Sprint([]time.Duration{time.Second, 2 * time.Second}) {
			t.Fatalf("waits = %v", got)
		}
		if st := c.Stats(); st.Attempts != 3 || st.Calls != 1 {
			t.Fatalf("stats = %+v", st)
		}
	})
}

func TestProviderDownAfterRetries(t *testing.T) {
	eachFake(t, func(t *testing.T, f fake) {
		srv := f.start(t)
		srv.Fallback(func(llmtest.Request, int) llmtest.Reply {
			return llmtest.Reply{Status: 502, ErrorMessage: "bad gateway"}
		})
		var s sleeps
		c := llm.NewClient(f.provider(t, srv), llm.ClientOptions{MaxRetries: 2, BackoffBase: time.Millisecond, Sleep: s.sleep})
		_, err := c.Complete(t.Context(), baseRequest())
		if !errors.Is(err, llm.ErrUnavailable) {
			t.Fatalf("err = %v", err)
		}
		var e *llm.Error
		errors.As(err, &e)
		if e.Attempts != 3 || len(srv.Requests()) != 3 || !strings.Contains(err.Error(), "after 3 attempts") {
			t.Fatalf("err = %v, attempts %d, requests %d", err, e.Attempts, len(srv.Requests()))
		}
	})
}

func TestProviderAuthNotRetriedAndKeyScrubbed(t *testing.T) {
	eachFake(t, func(t *testing.T, f fake) {
		srv := f.start(t, llmtest.Reply{Status: 401, ErrorMessage: "invalid x-api-key " + testKey})
		var logs bytes.Buffer
		c := llm.NewClient(f.provider(t, srv), llm.ClientOptions{MaxRetries: 3, Sleep: (&sleeps{}).sleep,
			Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
		_, err := c.Complete(t.Context(), baseRequest())
		if !errors.Is(err, llm.ErrAuth) || len(srv.Requests()) != 1 {
			t.Fatalf("err = %v, %d requests", err, len(srv.Requests()))
		}
		for _, s := range []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err), logs.String()} {
			if strings.Contains(s, testKey) {
				t.Fatalf("key leaked: %s", s)
			}
		}
		if !strings.Contains(err.Error(), "[REDACTED:") {
			t.Fatalf("error lost the server's message: %v", err)
		}
	})
}

func TestProviderMalformedJSON(t *testing.T) {
	eachFake(t, func(t *testing.T, f fake) {
		srv := f.start(t, llmtest.Reply{RawBody: `{"id":"x","choices":[{"index":0,"message":{"role":"assist`})
		c := llm.NewClient(f.provider(t, srv), llm.ClientOptions{MaxRetries: 3, Sleep: (&sleeps{}).sleep})
		_, err := c.Complete(t.Context(), baseRequest())
		if !errors.Is(err, llm.ErrBadResponse) || len(srv.Requests()) != 1 {
			t.Fatalf("err = %v (kind %q), %d requests", err, llm.KindOf(err), len(srv.Requests()))
		}
	})
}

func TestProviderConnectionDroppedMidBody(t *testing.T) {
	eachFake(t, func(t *testing.T, f fake) {
		srv := f.start(t, llmtest.Reply{HangUp: true}, llmtest.Reply{Text: `{"summary":"again"}`})
		c := llm.NewClient(f.provider(t, srv), llm.ClientOptions{MaxRetries: 1, Sleep: (&sleeps{}).sleep})
		resp, err := c.Complete(t.Context(), baseRequest())
		if err != nil || resp.Text != `{"summary":"again"}` || c.Stats().Attempts != 2 {
			t.Fatalf("err = %v, resp %q, stats %+v", err, resp.Text, c.Stats())
		}
	})
}

func TestProviderWrongShapeJSON(t *testing.T) {
	eachFake(t, func(t *testing.T, f fake) {
		body := `{"id":"x","object":"chat.completion","choices":[]}`
		if f.name == "anthropic" {
			body = `{"id":"x","type":"completion","content":[]}`
		}
		srv := f.start(t, llmtest.Reply{RawBody: body})
		c := llm.NewClient(f.provider(t, srv), llm.ClientOptions{})
		if _, err := c.Complete(t.Context(), baseRequest()); !errors.Is(err, llm.ErrBadResponse) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestProviderTruncatedOutput(t *testing.T) {
	eachFake(t, func(t *testing.T, f fake) {
		srv := f.start(t, llmtest.Reply{Text: `{"summary":"this answer was cut`, Stop: f.stopLength})
		c := llm.NewClient(f.provider(t, srv), llm.ClientOptions{})
		resp, err := c.Complete(t.Context(), baseRequest())
		if err != nil {
			t.Fatal(err)
		}
		if resp.Stop != llm.StopLength || c.Stats().Truncated != 1 {
			t.Fatalf("stop = %q, stats %+v", resp.Stop, c.Stats())
		}
	})
}

func TestProviderPerCallTimeout(t *testing.T) {
	eachFake(t, func(t *testing.T, f fake) {
		srv := f.start(t, llmtest.Reply{Delay: 5 * time.Second, Text: "{}"}, llmtest.Reply{Text: `{"summary":"2"}`})
		c := llm.NewClient(f.provider(t, srv), llm.ClientOptions{CallTimeout: 200 * time.Millisecond, MaxRetries: 1, Sleep: (&sleeps{}).sleep})
		start := time.Now()
		resp, err := c.Complete(t.Context(), baseRequest())
		if err != nil {
			t.Fatal(err)
		}
		if resp.Text != `{"summary":"2"}` || c.Stats().Attempts != 2 || time.Since(start) > 3*time.Second {
			t.Fatalf("resp %q stats %+v after %v", resp.Text, c.Stats(), time.Since(start))
		}
	})
}

func TestProviderCallerCancelNotRetried(t *testing.T) {
	f := fakes[0]
	srv := f.start(t, llmtest.Reply{Delay: 5 * time.Second, Text: "{}"})
	c := llm.NewClient(f.provider(t, srv), llm.ClientOptions{CallTimeout: time.Minute, MaxRetries: 5})
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err := c.Complete(ctx, baseRequest())
	if !errors.Is(err, llm.ErrCanceled) || !errors.Is(err, context.DeadlineExceeded) || len(srv.Requests()) != 1 {
		t.Fatalf("err = %v, %d requests", err, len(srv.Requests()))
	}
}

func TestProviderResponseCap(t *testing.T) {
	eachFake(t, func(t *testing.T, f fake) {
		srv := f.start(t, llmtest.Reply{Text: strings.Repeat("A", 64<<10)})
		p := f.provider(t, srv, func(h *llm.HTTPOptions) { h.MaxResponseBytes = 16 << 10 })
		c := llm.NewClient(p, llm.ClientOptions{MaxRetries: 2, Sleep: (&sleeps{}).sleep})
		if _, err := c.Complete(t.Context(), baseRequest()); !errors.Is(err, llm.ErrBadResponse) || len(srv.Requests()) != 1 {
			t.Fatalf("err = %v, %d requests", err, len(srv.Requests()))
		}
	})
}

func TestProviderNoUsageIsEstimated(t *testing.T) {
	eachFake(t, func(t *testing.T, f fake) {
		srv := f.start(t, llmtest.Reply{Text: strings.Repeat("x", 300), NoUsage: true})
		c := llm.NewClient(f.provider(t, srv), llm.ClientOptions{})
		if _, err := c.Complete(t.Context(), baseRequest()); err != nil {
			t.Fatal(err)
		}
		st := c.Stats()
		if !st.UsageEstimated || st.Usage.OutputTokens != 100 || st.Usage.InputTokens == 0 {
			t.Fatalf("stats = %+v", st)
		}
	})
}

func TestClientCallCap(t *testing.T) {
	eachFake(t, func(t *testing.T, f fake) {
		srv := f.start(t)
		srv.Fallback(func(llmtest.Request, int) llmtest.Reply { return llmtest.Reply{Text: "{}"} })
		c := llm.NewClient(f.provider(t, srv), llm.ClientOptions{MaxCalls: 2})
		for i := range 2 {
			if _, err := c.Complete(t.Context(), baseRequest()); err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
		}
		if _, err := c.Complete(t.Context(), baseRequest()); !errors.Is(err, llm.ErrCallCap) {
			t.Fatalf("third call: %v", err)
		}
		if len(srv.Requests()) != 2 || c.CallsLeft() != 0 {
			t.Fatalf("%d requests, %d left", len(srv.Requests()), c.CallsLeft())
		}
	})
}

func TestClientCostAndTokenCaps(t *testing.T) {
	f := fakes[1]
	srv := f.start(t)
	srv.Fallback(func(llmtest.Request, int) llmtest.Reply {
		return llmtest.Reply{Text: "{}", InputTokens: 10_000, OutputTokens: 1000}
	})
	prices := llm.PriceTable{"claude-test": {InputPerMTok: 3, OutputPerMTok: 15}}
	// Worst case of one call: ~60 input tokens + 1000 output at $15/M ≈ $0.0152.
	c := llm.NewClient(f.provider(t, srv), llm.ClientOptions{MaxOutputTokens: 1000, MaxCostUSD: 0.05, Prices: prices})
	var calls int
	for ; calls < 10; calls++ {
		if _, err := c.Complete(t.Context(), baseRequest()); err != nil {
			if !errors.Is(err, llm.ErrBudget) {
				t.Fatal(err)
			}
			break
		}
	}
	st := c.Stats()
	if calls == 0 || calls == 10 || st.CostUSD > 0.05 {
		t.Fatalf("made %d calls costing $%v", calls, st.CostUSD)
	}
	if len(srv.Requests()) != calls {
		t.Fatalf("a refused call reached the server")
	}

	c2 := llm.NewClient(f.provider(t, srv), llm.ClientOptions{MaxOutputTokens: 1000, MaxTotalTokens: 12_000})
	if _, err := c2.Complete(t.Context(), baseRequest()); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Complete(t.Context(), baseRequest()); !errors.Is(err, llm.ErrBudget) {
		t.Fatalf("second call past the token cap: %v", err)
	}
}

func TestProviderIgnoresSDKEnvironment(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/wrong/")
	t.Setenv("OPENAI_API_KEY", "env-key-should-not-be-used")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1/wrong/")
	t.Setenv("ANTHROPIC_API_KEY", "env-key-should-not-be-used")
	for _, f := range fakes {
		srv := f.start(t, llmtest.Reply{Text: "{}"})
		c := llm.NewClient(f.provider(t, srv), llm.ClientOptions{})
		if _, err := c.Complete(t.Context(), baseRequest()); err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		for _, r := range srv.Requests() {
			for k, v := range r.Header {
				if strings.Contains(strings.Join(v, " "), "env-key") {
					t.Fatalf("%s: header %s carries the environment's key", f.name, k)
				}
			}
		}
	}
}

func TestToolLoopHitsCap(t *testing.T) {
	eachFake(t, func(t *testing.T, f fake) {
		srv := f.start(t)
		// A model that never stops asking for tools.
		srv.Fallback(func(_ llmtest.Request, n int) llmtest.Reply {
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "run_tests", Arguments: fmt.Sprintf(`{"filter":"T%d"}`, n)}}}
		})
		var ran []string
		run := llm.ToolRunnerFunc(func(_ context.Context, call llm.ToolCall) (string, error) {
			ran = append(ran, string(call.Arguments))
			return strings.Repeat("output line\n", 1000), nil
		})
		c := llm.NewClient(f.provider(t, srv), llm.ClientOptions{MaxCalls: 20})
		res, err := c.Converse(t.Context(), baseRequest(), run, llm.ConverseOptions{MaxToolCalls: 3, MaxResultBytes: 500})
		if err != nil {
			t.Fatal(err)
		}
		if len(ran) != 3 || res.ToolCalls != 3 || !res.CapHit {
			t.Fatalf("ran %v, result %+v", ran, res)
		}
		reqs := srv.Requests()
		if len(reqs) != 4 {
			t.Fatalf("%d model calls, want 3 tool rounds + 1 final", len(reqs))
		}
		last := reqs[len(reqs)-1].JSON
		switch f.name {
		case "openai":
			if last["tool_choice"] != "none" {
				t.Fatalf("final tool_choice = %v", last["tool_choice"])
			}
		case "anthropic":
			if last["tool_choice"].(map[string]any)["type"] != "none" {
				t.Fatalf("final tool_choice = %v", last["tool_choice"])
			}
		}
		// Every tool result sent back is truncated to the cap.
		results := reqs[len(reqs)-1].ToolResults()
		if len(results) != 1 {
			t.Fatalf("final request carries %d tool results", len(results))
		}
		for _, r := range reqs[1:] {
			for _, text := range r.ToolResults() {
				if len(text) > 500 || !strings.Contains(text, "bytes cut") {
					t.Fatalf("tool result not truncated to 500 bytes: %d", len(text))
				}
			}
		}
		if len(res.Log) != 3 || !res.Log[0].Truncated || res.Log[0].Bytes != 12000 {
			t.Fatalf("log = %+v", res.Log)
		}
	})
}

func TestToolLoopRoundTrip(t *testing.T) {
	eachFake(t, func(t *testing.T, f fake) {
		srv := f.start(t,
			llmtest.Reply{Text: "let me check", ToolCalls: []llmtest.ToolCall{
				{ID: "c1", Name: "run_tests", Arguments: `{"filter":"TestA"}`},
				{ID: "c2", Name: "rm_rf", Arguments: `{}`},
			}},
			llmtest.Reply{Text: `{"summary":"tests pass"}`})
		run := llm.ToolRunnerFunc(func(_ context.Context, call llm.ToolCall) (string, error) {
			var a struct{ Filter string }
			if err := json.Unmarshal(call.Arguments, &a); err != nil || a.Filter != "TestA" {
				t.Errorf("arguments %s", call.Arguments)
			}
			return "", errors.New("exit status 1: FAIL TestA")
		})
		c := llm.NewClient(f.provider(t, srv), llm.ClientOptions{})
		res, err := c.Converse(t.Context(), baseRequest(), run, llm.ConverseOptions{MaxToolCalls: 5, MaxResultBytes: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if res.Text != `{"summary":"tests pass"}` || res.ToolCalls != 1 || res.Refused != 1 || res.CapHit {
			t.Fatalf("result = %+v", res)
		}
		second := string(srv.Requests()[1].Body)
		for _, want := range []string{"FAIL TestA", `unknown tool \"rm_rf\"`} {
			if !strings.Contains(second, want) {
				t.Fatalf("second request lacks %q: %s", want, second)
			}
		}
	})
}

func TestNewProviderConfigErrors(t *testing.T) {
	if _, err := llm.NewOpenAI(llm.OpenAIOptions{}); !errors.Is(err, llm.ErrConfig) {
		t.Fatalf("no model: %v", err)
	}
	if _, err := llm.NewOpenAI(llm.OpenAIOptions{Model: "m", BaseURL: "ftp://x"}); !errors.Is(err, llm.ErrConfig) {
		t.Fatalf("ftp: %v", err)
	}
	if _, err := llm.NewOpenAI(llm.OpenAIOptions{Model: "m", BaseURL: "https://user:" + testKey + "@h/v1"}); err == nil || strings.Contains(err.Error(), testKey) {
		t.Fatalf("credentials in URL: %v", err)
	}
	if _, err := llm.NewAnthropic(llm.AnthropicOptions{Model: "m"}); !errors.Is(err, llm.ErrConfig) {
		t.Fatalf("anthropic without key: %v", err)
	}
}

func TestOpenAICompatibleWithoutKey(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	srv := llmtest.OpenAI(t, "", llmtest.Reply{Text: "{}"})
	p, err := llm.NewOpenAI(llm.OpenAIOptions{Model: "llama3.1", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := llm.NewClient(p, llm.ClientOptions{}).Complete(t.Context(), baseRequest()); err != nil {
		t.Fatal(err)
	}
	if h := srv.Requests()[0].Header.Get("Authorization"); h != "" {
		t.Fatalf("Authorization %q sent to a server that needs none", h)
	}
}
