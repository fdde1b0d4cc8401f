package llm

import (
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/asterhq/aster/internal/safetext"
)

func TestPriceLookup(t *testing.T) {
	tab := PriceTable{
		"gpt-*":         {InputPerMTok: 1},
		"gpt-4o-*":      {InputPerMTok: 2},
		"gpt-4o-mini":   {InputPerMTok: 3},
		"claude-opus-*": {InputPerMTok: 4},
	}
	for model, want := range map[string]float64{"gpt-4o-mini": 3, "gpt-4o-2024": 2, "gpt-5": 1, "claude-opus-9": 4} {
		p, ok := tab.Lookup(model)
		if !ok || p.InputPerMTok != want {
			t.Errorf("%s: %v %v, want %v", model, p, ok, want)
		}
	}
	if _, ok := tab.Lookup("llama3"); ok {
		t.Error("llama3 priced")
	}
	p := Price{InputPerMTok: 10, OutputPerMTok: 20, CachedInputPerMTok: 1}
	if got := p.Cost(Usage{InputTokens: 1_000_000, CachedInputTokens: 500_000, OutputTokens: 100_000}); got != 5+0.5+2 {
		t.Errorf("cost = %v", got)
	}
}

func TestTruncateMiddle(t *testing.T) {
	s := strings.Repeat("é", 5000) + "TAIL"
	out, cut := TruncateMiddle(s, 300)
	if !cut || len(out) > 300 || !utf8.ValidString(out) || !strings.HasSuffix(out, "TAIL") || !strings.Contains(out, "bytes cut") {
		t.Fatalf("cut=%v len=%d valid=%v %q", cut, len(out), utf8.ValidString(out), out[len(out)-20:])
	}
	if out, cut := TruncateMiddle("short", 300); cut || out != "short" {
		t.Fatal("short text changed")
	}
	if out, _ := TruncateMiddle(s, 10); len(out) > 10 || !utf8.ValidString(out) {
		t.Fatalf("tiny cap: %q", out)
	}
}

func TestEstimateTokens(t *testing.T) {
	if EstimateTokens("") != 0 || EstimateTokens("abc") != 1 || EstimateTokens("abcd") != 2 {
		t.Fatal("estimate off")
	}
	req := Request{System: strings.Repeat("s", 300), Messages: []Message{{Role: RoleUser, Text: strings.Repeat("u", 3000)}}}
	if n := EstimateRequestTokens(req); n < 1100 || n > 1200 {
		t.Fatalf("request estimate %d", n)
	}
}

func TestExcerptAndScrub(t *testing.T) {
	s := safetext.NewRedactor([]string{"secret-value"}).RedactString("key secret-value leaked\nagain secret-value")
	if strings.Contains(s, "secret-value") {
		t.Fatal(s)
	}
	e := excerpt(strings.Repeat("ü", 400), 101)
	if !utf8.ValidString(e) || len(e) > 101+len("…") {
		t.Fatalf("excerpt %d bytes", len(e))
	}
}

func TestStatusError(t *testing.T) {
	scrub := safetext.NewRedactor([]string{"secret-value"})
	res := &http.Response{Header: http.Header{"Retry-After": {"3"}}}
	e := statusError("p", scrub, 529, res, "overloaded secret-value\nagain")
	if e.Kind != KindUnavailable || e.Status != 529 || e.RetryAfter != 3*time.Second || !e.hasRetryAfter {
		t.Fatalf("%#v", e)
	}
	if strings.Contains(e.Error(), "secret-value") || strings.Contains(e.Error(), "\n") {
		t.Fatalf("message %q", e.Error())
	}
	if e := statusError("p", scrub, 429, nil, "slow down"); e.Kind != KindRateLimited || e.hasRetryAfter || e.msg != "slow down" {
		t.Fatalf("without a response: %#v", e)
	}
}
