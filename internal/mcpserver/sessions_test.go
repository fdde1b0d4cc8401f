package mcpserver

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/asterhq/aster/internal/testkit"
)

// opening is one POST without a session, as a client sends it.
type opening struct {
	status int
	header http.Header
	body   []byte
}

// rpcError decodes the JSON-RPC error of an answer.
func (o opening) rpcError(t *testing.T) (id json.RawMessage, code int, message string, data map[string]any) {
	t.Helper()
	var r struct {
		ID    json.RawMessage `json:"id"`
		Error struct {
			Code    int            `json:"code"`
			Message string         `json:"message"`
			Data    map[string]any `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(o.body, &r); err != nil || r.Error.Message == "" {
		t.Fatalf("answer %d is not a JSON-RPC error: %q (%v)", o.status, o.body, err)
	}
	return r.ID, r.Error.Code, r.Error.Message, r.Error.Data
}

func postOpening(t *testing.T, url, token, body string, header map[string]string) opening {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return opening{resp.StatusCode, resp.Header, b}
}

func initializeWithID(id int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`, id)
}

// openSession initializes a session and returns its id.
func openSession(t *testing.T, url, token string) string {
	t.Helper()
	o := postOpening(t, url, token, initializeWithID(1), nil)
	id := o.header.Get(sessionIDHeader)
	if o.status != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d %q", o.status, o.body)
	}
	return id
}

func deleteSession(t *testing.T, url, token, id string) int {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodDelete, url, nil)
	req.Header.Set(sessionIDHeader, id)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// SECURITY L7: sessions are capped per token and in all. Past a cap an
// initialize is refused at once with a JSON-RPC error that names the cap and
// says what to do (429 for the token's, 503 for the server's, Retry-After
// both); the sessions already open keep working; a deleted session, and
// sessions closed for being idle, make room again.
func TestSessionCaps(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, &fakeExecutor{}, nil)
	h, gate := s.handler(HTTPOptions{Tokens: mustTokens(t, tokenA, tokenB), MaxSessions: 5, MaxSessionsPerToken: 3, SessionTimeout: 2 * time.Second})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	url := srv.URL + Path

	// A session opened through the SDK's client, kept busy below so that it
	// outlives the idle timeout.
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: httpClient(tokenA)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	a := []string{cs.ID(), openSession(t, url, tokenA), openSession(t, url, tokenA)}

	o := postOpening(t, url, tokenA, initializeWithID(41), nil)
	id, code, msg, data := o.rpcError(t)
	if o.status != http.StatusTooManyRequests || o.header.Get("Retry-After") == "" || string(id) != "41" || code != codeSessionLimit ||
		data["cap"] != "per_token" || !strings.Contains(msg, "--max-sessions-per-token") || !strings.Contains(msg, "DELETE") {
		t.Errorf("a token's fourth session: %d Retry-After %q: %s", o.status, o.header.Get("Retry-After"), o.body)
	}
	t.Logf("per-token refusal: %s", msg)

	// Another token has its own share, up to the server's total.
	openSession(t, url, tokenB)
	openSession(t, url, tokenB)
	o = postOpening(t, url, tokenB, initializeWithID(42), nil)
	id, _, msg, data = o.rpcError(t)
	if o.status != http.StatusServiceUnavailable || o.header.Get("Retry-After") == "" || string(id) != "42" ||
		data["cap"] != "total" || !strings.Contains(msg, "--max-sessions") {
		t.Errorf("the sixth session: %d: %s", o.status, o.body)
	}
	t.Logf("total refusal: %s", msg)
	if total, held := gate.counts(); total != 5 || len(held) != 2 {
		t.Errorf("counted %d sessions %v, want 5 of two tokens", total, held)
	}

	// The open sessions are served as before.
	if res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"argv": []string{"echo"}}}); err != nil || res.IsError {
		t.Fatalf("a call on an open session at the cap: %v %v", err, res)
	}

	// A session deleted by its client makes room at once; one token cannot
	// delete another's.
	if st := deleteSession(t, url, tokenB, a[1]); st != http.StatusForbidden {
		t.Errorf("token B deleting a session of A: %d", st)
	}
	if st := deleteSession(t, url, tokenA, a[1]); st != http.StatusNoContent {
		t.Fatalf("delete: %d", st)
	}
	openSession(t, url, tokenB)

	// Idle sessions close after the timeout, and their places are given
	// again; the SDK client's session, pinged meanwhile, stays.
	stop := make(chan struct{})
	pinged := make(chan error, 1)
	go func() {
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				pinged <- nil
				return
			case <-tick.C:
				if err := cs.Ping(t.Context(), nil); err != nil {
					pinged <- err
					return
				}
			}
		}
	}()
	var fresh []string
	testkit.WaitFor(t, "idle sessions to close and make room", 20*time.Second, func() bool {
		if o := postOpening(t, url, tokenB, initializeWithID(43), nil); o.status == http.StatusOK {
			fresh = append(fresh, o.header.Get(sessionIDHeader))
		}
		return len(fresh) == 3
	})
	close(stop)
	if err := <-pinged; err != nil {
		t.Fatalf("ping on the busy session: %v", err)
	}
	if res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"argv": []string{"echo"}}}); err != nil || res.IsError {
		t.Errorf("the busy session after the others closed: %v %v", err, res)
	}
	if o := postOpening(t, url, tokenB, initializeWithID(44), nil); o.status != http.StatusTooManyRequests {
		t.Errorf("a fourth session of B after the idle ones closed: %d %s", o.status, o.body)
	}
	if total, held := gate.counts(); total != 4 || held[ownerOfToken(t, tokenA)] != 1 || held[ownerOfToken(t, tokenB)] != 3 {
		t.Errorf("counted %d sessions %v, want 4: A's busy one and B's three new ones", total, held)
	}
}

// ownerOfToken is the owner the gate counts a token's sessions under.
func ownerOfToken(t *testing.T, token string) string {
	t.Helper()
	ti, err := verifier(mustTokens(t, token))(t.Context(), token, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ti.UserID
}

// SECURITY L7: what a session keeps of the request that opened it is
// bounded: its initialize parameters are cut to the protocol version, the
// capabilities the SDK reads and the client's name and version (clipped);
// a request without a session is one message of at most 64 KiB, never a
// batch that could open a session uncounted.
func TestOpeningRequestTrimmed(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, &fakeExecutor{}, nil)
	h, gate := s.handler(HTTPOptions{})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	url := srv.URL + Path

	big := strings.Repeat("n", 10<<10)
	body := `{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-11-25","_meta":{"pad":"` + big + `"},` +
		`"capabilities":{"elicitation":{"form":{}},"experimental":{"pad":"` + big + `"},"roots":{"pad":"` + big + `"}},` +
		`"clientInfo":{"name":"` + big + `","version":"1.0","icons":[{"src":"` + big + `"}]}}}`
	o := postOpening(t, url, "", body, map[string]string{"X-Pad": strings.Repeat("h", 32<<10)})
	if o.status != http.StatusOK {
		t.Fatalf("initialize: %d %s", o.status, o.body)
	}
	var ss *mcp.ServerSession
	for x := range s.MCP().Sessions() {
		if x.ID() == o.header.Get(sessionIDHeader) {
			ss = x
		}
	}
	if ss == nil {
		t.Fatal("the session is not open")
	}
	p := ss.InitializeParams()
	if p.ClientInfo == nil || len(p.ClientInfo.Name) > maxClientInfoBytes+3 || !strings.HasPrefix(p.ClientInfo.Name, "nnn") ||
		p.ClientInfo.Version != "1.0" || len(p.ClientInfo.Icons) != 0 || p.Meta != nil {
		t.Errorf("client info kept: %d bytes of name, %d icons, meta %v", len(p.ClientInfo.Name), len(p.ClientInfo.Icons), p.Meta != nil)
	}
	kept, _ := json.Marshal(p.Capabilities)
	if !strings.Contains(string(kept), `"elicitation":{"form":{}}`) || strings.Contains(string(kept), "pad") || p.ProtocolVersion != "2025-11-25" {
		t.Errorf("capabilities kept: %.200s; version %q", kept, p.ProtocolVersion)
	}

	for name, bad := range map[string]struct {
		body   string
		status int
	}{
		"batch with an initialize": {"[" + initializeWithID(1) + "]", http.StatusBadRequest},
		"over 64KiB":               {`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"pad":"` + strings.Repeat("p", 64<<10) + `"}}`, http.StatusRequestEntityTooLarge},
		"not JSON":                 {`{"jsonrpc":`, http.StatusBadRequest},
	} {
		o := postOpening(t, url, "", bad.body, nil)
		if o.status != bad.status {
			t.Errorf("%s: %d %s", name, o.status, o.body)
			continue
		}
		if _, code, msg, _ := o.rpcError(t); code != jsonrpcInvalidRequest {
			t.Errorf("%s: code %d %s", name, code, msg)
		}
	}
	// A message without a session other than initialize is the SDK's to
	// answer, and opens nothing.
	postOpening(t, url, "", `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, nil)
	if total, _ := gate.counts(); total != 1 {
		t.Errorf("%d sessions counted, want the one", total)
	}
	n := 0
	for range s.MCP().Sessions() {
		n++
	}
	if n != 1 {
		t.Errorf("the SDK holds %d sessions, want 1", n)
	}
}
