package mcpserver

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/asterhq/aster/internal/health"
	"github.com/asterhq/aster/internal/sandboxapi"

	"github.com/prometheus/client_golang/prometheus"
)

const (
	tokenA = "aster-test-token-aaaaaaaaaaaa"
	tokenB = "aster-test-token-bbbbbbbbbbbb"
)

// bearer adds a fixed Authorization header to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.next.RoundTrip(r)
}

func httpClient(token string) *http.Client {
	return &http.Client{Transport: bearer{token: token, next: http.DefaultTransport}}
}

func initializeBody() *strings.Reader {
	return strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
}

func postInit(t *testing.T, url, token, host string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, initializeBody())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestHTTPAuth(t *testing.T) {
	s := newTestServer(t, &fakeExecutor{}, nil)
	hs := httptest.NewServer(s.Handler(HTTPOptions{Tokens: mustTokens(t, tokenA, tokenB)}))
	t.Cleanup(hs.Close)
	url := hs.URL + Path

	for name, tok := range map[string]string{"no token": "", "wrong token": "aster-test-token-cccccccccccc", "prefix of a token": tokenA[:20]} {
		if resp := postInit(t, url, tok, ""); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401", name, resp.StatusCode)
		}
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, initializeBody())
	req.Header.Set("Authorization", "Basic "+tokenA)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("basic auth: %v %v, want 401", resp.StatusCode, err)
	}

	// Through the SDK client: refused without a token, served with one.
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil)
	if _, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: httpClient("")}, nil); err == nil {
		t.Fatal("connected without a token")
	}
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: httpClient(tokenB)}, nil)
	if err != nil {
		t.Fatalf("connect with a valid token: %v", err)
	}
	defer cs.Close()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"argv": []string{"echo"}}})
	if err != nil || res.IsError {
		t.Fatalf("call with a valid token: %v %v", err, res)
	}

	// A session opened with one token cannot be driven with another.
	if id := cs.ID(); id == "" {
		t.Error("streamable HTTP session has no id")
	} else {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url,
			strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", id)
		req.Header.Set("Authorization", "Bearer "+tokenA)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("session of token B used with token A: status %d, want 403", resp.StatusCode)
		}
	}

	// Health needs no token, and answers as every Aster server does.
	resp, err := http.Get(hs.URL + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	hb, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(hb) != health.Body || resp.Header.Get("Content-Type") != health.ContentType {
		t.Errorf("healthz %q (%s), want %q", hb, resp.Header.Get("Content-Type"), health.Body)
	}
}

func TestHTTPDNSRebinding(t *testing.T) {
	s := newTestServer(t, &fakeExecutor{}, nil)
	hs := httptest.NewServer(s.Handler(HTTPOptions{}))
	t.Cleanup(hs.Close)
	if resp := postInit(t, hs.URL+Path, "", "evil.example.com"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("foreign Host on loopback: status %d, want 403", resp.StatusCode)
	}
	if resp := postInit(t, hs.URL+Path, "", "localhost"); resp.StatusCode != http.StatusOK {
		t.Errorf("Host localhost: status %d, want 200", resp.StatusCode)
	}
}

func TestListenHTTPRefusesOpenAddress(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0"} {
		ln, err := ListenHTTP(addr, HTTPOptions{})
		if !errors.Is(err, ErrOpenListener) {
			if ln != nil {
				ln.Close()
			}
			t.Errorf("%s without tokens: err %v, want ErrOpenListener", addr, err)
		}
		ln, err = ListenHTTP(addr, HTTPOptions{Tokens: mustTokens(t, tokenA)})
		if err != nil {
			t.Errorf("%s with tokens: %v", addr, err)
		} else {
			ln.Close()
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:0", "[::1]:0"} {
		ln, err := ListenHTTP(addr, HTTPOptions{})
		if err != nil {
			if strings.Contains(addr, "::1") && !errors.Is(err, ErrOpenListener) {
				continue // no IPv6 on this host
			}
			t.Errorf("%s without tokens: %v", addr, err)
			continue
		}
		ln.Close()
	}
}

func TestVerifier(t *testing.T) {
	v := verifier(mustTokens(t, tokenA, tokenB))
	a, errA := v(t.Context(), tokenA, nil)
	b, errB := v(t.Context(), tokenB, nil)
	if errA != nil || errB != nil || a.UserID == b.UserID || a.UserID == "" {
		t.Fatalf("verify: %v %v %v %v", a, b, errA, errB)
	}
	for _, bad := range []string{tokenB + "x", tokenB[:20], ""} {
		if _, err := v(t.Context(), bad, nil); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func mustTokens(t *testing.T, toks ...string) *sandboxapi.Tokens {
	t.Helper()
	ts, err := sandboxapi.ParseTokens(strings.NewReader(strings.Join(toks, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// GET /metrics serves the registry given, with the open sessions, behind the same tokens
// as /mcp; without a registry there is no /metrics.
func TestHTTPMetrics(t *testing.T) {
	s := newTestServer(t, &fakeExecutor{}, nil)
	reg := prometheus.NewRegistry()
	hs := httptest.NewServer(s.Handler(HTTPOptions{Tokens: mustTokens(t, tokenA), Metrics: reg}))
	t.Cleanup(hs.Close)
	get := func(url, token string) (int, string) {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get(hs.URL+MetricsRoute, ""); code != http.StatusUnauthorized {
		t.Errorf("/metrics without a token: %d, want 401", code)
	}
	if resp := postInit(t, hs.URL+Path, tokenA, ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("initialize: %d", resp.StatusCode)
	}
	code, body := get(hs.URL+MetricsRoute, tokenA)
	if code != http.StatusOK || !strings.Contains(body, "aster_mcp_sessions 1") || !strings.Contains(body, "aster_mcp_sessions_max ") {
		t.Errorf("/metrics: %d\n%s", code, body)
	}
	plain := httptest.NewServer(s.Handler(HTTPOptions{}))
	t.Cleanup(plain.Close)
	if code, _ := get(plain.URL+MetricsRoute, ""); code != http.StatusNotFound {
		t.Errorf("/metrics with no registry: %d, want 404", code)
	}
}
