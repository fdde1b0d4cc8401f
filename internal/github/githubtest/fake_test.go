package githubtest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"crypto"
)

// rejections collects what the fake refused instead of failing the test.
type rejections struct {
	mu   sync.Mutex
	msgs []string
}

func (r *rejections) add(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, fmt.Sprintf(format, args...))
}

func (r *rejections) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.msgs...)
}

func signJWT(t *testing.T, key *rsa.PrivateKey, alg string, claims map[string]any) string {
	t.Helper()
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	signing := enc(map[string]any{"alg": alg, "typ": "JWT"}) + "." + enc(claims)
	sum := sha256.Sum256([]byte(signing))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return signing + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// fakeWithPull is a fake whose rejections are recorded, with repository o/r holding one
// commit (file a) and pull request 1 on it.
func fakeWithPull(t *testing.T) (*Server, *rejections) {
	t.Helper()
	rej := &rejections{}
	s := New(t, Options{OnReject: rej.add})
	g := NewGitRepo(t)
	sha := g.Commit("", "init", map[string]string{"a": "a\n"})
	s.AddRepo(Repository{Owner: "o", Name: "r", Git: g})
	s.AddPullRequest("o", "r", PullRequest{Number: 1, BaseSHA: sha, HeadSHA: sha})
	return s, rej
}

func TestFakeRejectsWhatGitHubWouldNot(t *testing.T) {
	t.Parallel()
	s, rej := fakeWithPull(t)

	now := time.Now().Unix()
	good := signJWT(t, appKey(), "RS256", map[string]any{"iss": fmt.Sprint(s.AppID()), "iat": now - 30, "exp": now + 90})
	otherKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	root := strings.TrimSuffix(s.URL(), "/api/v3/")
	tests := []struct {
		name       string
		method     string
		url        string
		auth       string
		body       string
		wantStatus int
		wantReject string // "" means the request is fine
	}{
		{name: "app with good JWT", method: "GET", url: s.URL() + "app", auth: "Bearer " + good, wantStatus: 200},
		{name: "unknown path", method: "GET", url: s.URL() + "repos/o/r/no-such-thing", wantStatus: 404, wantReject: "not an operation"},
		{name: "unknown method", method: "DELETE", url: s.URL() + "app", wantStatus: 404, wantReject: "not an operation"},
		{name: "outside base path", method: "GET", url: root + "/repos/o/r/pulls/1", wantStatus: 404, wantReject: "ignored its base URL"},
		{name: "body against schema", method: "POST", url: s.URL() + "app/installations/99/access_tokens", auth: "Bearer " + good,
			body: `{"permissions":{"contents":"admin"}}`, wantStatus: 422, wantReject: "request schema"},
		{name: "body where none is taken", method: "GET", url: s.URL() + "app", auth: "Bearer " + good, body: `{"x":1}`,
			wantStatus: 422, wantReject: "takes no JSON body"},
		{name: "not implemented", method: "GET", url: s.URL() + "repos/o/r/issues", wantStatus: 501, wantReject: "does not implement"},
		{name: "no JWT", method: "GET", url: s.URL() + "app", wantStatus: 401, wantReject: "needs an App JWT"},
		{name: "JWT other key", method: "GET", url: s.URL() + "app", wantStatus: 401, wantReject: "does not verify",
			auth: "Bearer " + signJWT(t, otherKey, "RS256", map[string]any{"iss": fmt.Sprint(s.AppID()), "iat": now, "exp": now + 60})},
		{name: "JWT other app", method: "GET", url: s.URL() + "app", wantStatus: 401, wantReject: "iss",
			auth: "Bearer " + signJWT(t, appKey(), "RS256", map[string]any{"iss": "1", "iat": now, "exp": now + 60})},
		{name: "JWT expired", method: "GET", url: s.URL() + "app", wantStatus: 401, wantReject: "expired",
			auth: "Bearer " + signJWT(t, appKey(), "RS256", map[string]any{"iss": fmt.Sprint(s.AppID()), "iat": now - 700, "exp": now - 100})},
		{name: "JWT too long-lived", method: "GET", url: s.URL() + "app", wantStatus: 401, wantReject: "10 minutes",
			auth: "Bearer " + signJWT(t, appKey(), "RS256", map[string]any{"iss": fmt.Sprint(s.AppID()), "iat": now, "exp": now + 3600})},
		{name: "JWT alg HS256", method: "GET", url: s.URL() + "app", wantStatus: 401, wantReject: "RS256",
			auth: "Bearer " + signJWT(t, appKey(), "HS256", map[string]any{"iss": fmt.Sprint(s.AppID()), "iat": now, "exp": now + 60})},
		{name: "installation op with JWT", method: "GET", url: s.URL() + "repos/o/r/pulls/1", auth: "Bearer " + good,
			wantStatus: 401, wantReject: "installation token"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := len(rej.list())
			req, _ := http.NewRequestWithContext(t.Context(), tc.method, tc.url, strings.NewReader(tc.body))
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.wantStatus {
				t.Errorf("status %d, want %d: %s", resp.StatusCode, tc.wantStatus, body)
			}
			got := rej.list()[before:]
			switch {
			case tc.wantReject == "" && len(got) > 0:
				t.Errorf("rejected a good request: %v", got)
			case tc.wantReject != "" && (len(got) != 1 || !strings.Contains(got[0], tc.wantReject)):
				t.Errorf("rejections %v, want one containing %q", got, tc.wantReject)
			}
		})
	}
}

func TestSpecMatch(t *testing.T) {
	t.Parallel()
	RequireData(t)
	spec, err := LoadSpec()
	if err != nil {
		t.Fatal(err)
	}
	if spec.Operations() < 800 {
		t.Fatalf("%d operations: description incomplete", spec.Operations())
	}
	tests := []struct {
		method, path, op string
		params           map[string]string
	}{
		{"GET", "/repos/o/r/pulls/7", "pulls/get", map[string]string{"owner": "o", "repo": "r", "pull_number": "7"}},
		{"GET", "/repos/o/r/pulls/comments", "pulls/list-review-comments-for-repo", map[string]string{"owner": "o", "repo": "r"}},
		{"GET", "/repos/o/r/contents/a/b%20c/d.yml", "repos/get-content", map[string]string{"owner": "o", "repo": "r", "path": "a/b c/d.yml"}},
		{"GET", "/repos/o/r/tarball/refs/heads/x", "repos/download-tarball-archive", map[string]string{"owner": "o", "repo": "r", "ref": "refs/heads/x"}},
		{"PATCH", "/repos/o/r/check-runs/5", "checks/update", map[string]string{"owner": "o", "repo": "r", "check_run_id": "5"}},
		{"GET", "/repos/o/r/extra/segments", "", nil},
		{"POST", "/repos/o/r/pulls/7", "", nil},
	}
	for _, tc := range tests {
		op, params, ok := spec.Match(tc.method, tc.path)
		if tc.op == "" {
			if ok {
				t.Errorf("%s %s matched %s", tc.method, tc.path, op.ID)
			}
			continue
		}
		if !ok || op.ID != tc.op || fmt.Sprint(params) != fmt.Sprint(tc.params) {
			t.Errorf("%s %s → %v %v, want %s %v", tc.method, tc.path, op, params, tc.op, tc.params)
		}
	}
}

func TestDiffLines(t *testing.T) {
	t.Parallel()
	diff := "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,2 +1,3 @@\n a\n+b\n c\n@@ -10 +11,0 @@\n-z\n"
	got := diffLines([]byte(diff))["x"]
	if !got["RIGHT"][1] || !got["RIGHT"][3] || got["RIGHT"][4] || !got["LEFT"][10] || got["RIGHT"][11] {
		t.Errorf("lines %v", got)
	}
}

// answerProbe calls before when the first byte of an answer (its status) is written.
type answerProbe struct {
	*httptest.ResponseRecorder
	before func()
}

func (p *answerProbe) WriteHeader(code int) { p.before(); p.ResponseRecorder.WriteHeader(code) }
func (p *answerProbe) Write(b []byte) (int, error) {
	p.before()
	return p.ResponseRecorder.Write(b)
}

// TestRequestRecordedBeforeItsAnswer: a request is in Calls and Requests, with its status,
// before any of its answer leaves the fake, so a test that has its answer never counts
// short (a long answer is sent while the handler still runs).
func TestRequestRecordedBeforeItsAnswer(t *testing.T) {
	t.Parallel()
	s := New(t, Options{})
	now := time.Now().Unix()
	jwt := signJWT(t, appKey(), "RS256", map[string]any{"iss": fmt.Sprint(s.AppID()), "iat": now - 30, "exp": now + 90})
	for i := 1; i <= 3; i++ {
		calls, status := -1, -1
		w := &answerProbe{ResponseRecorder: httptest.NewRecorder(), before: func() {
			if calls < 0 {
				calls, status = s.Calls("apps/get-authenticated"), 0
				if reqs := s.Requests(); len(reqs) > 0 {
					status = reqs[len(reqs)-1].Status
				}
			}
		}}
		r := httptest.NewRequest(http.MethodGet, APIPrefix+"/app", nil)
		r.Header.Set("Authorization", "Bearer "+jwt)
		s.serveAPI(w, r)
		if w.Code != http.StatusOK || calls != i || status != http.StatusOK {
			t.Fatalf("request %d answered %d; when its answer started the fake had recorded %d call(s), the last with status %d",
				i, w.Code, calls, status)
		}
	}
}
