package sandboxapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/runstore"
)

const (
	runsTokenA = "token-for-the-runs-test-alice"
	runsTokenB = "token-for-the-runs-test-bob01"
	cbSecret   = "callback-secret-of-the-runs-test"
)

// runsHarness is a server with a runs database at db, two tokens and
// callbacks allowed to allow.
func runsHarness(t *testing.T, db string, allow ...string) *harness {
	t.Helper()
	store, err := runstore.Open(t.Context(), runstore.Options{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	toks, err := ParseTokens(strings.NewReader(runsTokenA + "\n" + runsTokenB + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessOpts{server: func(o *Options) {
		o.Runs, o.Tokens = store, toks
		o.Callbacks = Callbacks{Allow: allow, Secret: []byte(cbSecret), Attempts: 2, Timeout: 5 * time.Second}
	}})
	h.token = runsTokenA
	return h
}

// submit posts body to /v1/runs with query and returns the accepted run.
func (h *harness) submit(query string, body any) api.Run {
	h.t.Helper()
	resp, b := h.postJSON(api.RouteRuns+query, body)
	if resp.StatusCode != http.StatusAccepted {
		h.t.Fatalf("submit: %d %s", resp.StatusCode, b)
	}
	var run api.Run
	if err := json.Unmarshal(b, &run); err != nil {
		h.t.Fatal(err)
	}
	if run.State != api.RunQueued || run.ID == "" || resp.Header.Get("Location") != api.RouteRunPrefix+run.ID || resp.Header.Get(api.HeaderRunID) != run.ID {
		h.t.Fatalf("accepted %+v, headers %v", run, resp.Header)
	}
	return run
}

// awaitRun polls the run until it ended.
func (h *harness) awaitRun(id string) api.Run {
	h.t.Helper()
	var run api.Run
	waitFor(h.t, 2*time.Minute, "run "+id+" to end", func() bool {
		resp, b := h.do(h.t.Context(), http.MethodGet, api.RouteRunPrefix+id, "", nil)
		run = decodeOK[api.Run](h.t, resp, b)
		return run.State == api.RunDone || run.State == api.RunError
	})
	return run
}

// An asynchronous run answers 202 at once, runs, and is read back by its
// owner with the result the synchronous route gives; its callback arrives
// signed; another token cannot see it; a restart keeps it.
func TestAsyncRunLifecycle(t *testing.T) {
	got := make(chan *http.Request, 4)
	bodies := make(chan []byte, 4)
	cb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- r
		bodies <- b
	}))
	defer cb.Close()
	cbURL, _ := url.Parse(cb.URL)
	db := filepath.Join(t.TempDir(), "runs.db")
	h := runsHarness(t, db, cbURL.Host)

	run := h.submit("?callback_url="+url.QueryEscape(cb.URL+"/hook"), api.ExecuteRequest{Argv: []string{"sh", "-c", "echo async; exit 3"}})
	done := h.awaitRun(run.ID)
	if done.State != api.RunDone || done.Kind != api.RunKindExecute || done.StartedAt == nil || done.FinishedAt == nil {
		t.Fatalf("run %+v", done)
	}
	var res api.Result
	if err := json.Unmarshal(done.Result, &res); err != nil {
		t.Fatal(err)
	}
	if res.Status != api.StatusExitNonzero || res.ExitCode != 3 || res.Stdout != "async\n" {
		t.Fatalf("result %+v", res)
	}

	select {
	case r := <-got:
		body := <-bodies
		if r.Method != http.MethodPost || r.URL.Path != "/hook" || r.Header.Get(api.HeaderSignature) != Sign([]byte(cbSecret), body) {
			t.Errorf("callback %s %s signature %q", r.Method, r.URL.Path, r.Header.Get(api.HeaderSignature))
		}
		var posted api.Run
		if err := json.Unmarshal(body, &posted); err != nil || posted.ID != run.ID || posted.State != api.RunDone || len(posted.Result) == 0 {
			t.Errorf("callback body %s: %v", body, err)
		}
	case <-time.After(time.Minute):
		t.Fatal("no callback")
	}

	resp, b := h.do(t.Context(), http.MethodGet, api.RouteRuns+"?limit=5", "", nil)
	list := decodeOK[api.RunList](t, resp, b)
	if len(list.Runs) != 1 || list.Runs[0].ID != run.ID || list.Runs[0].Result != nil {
		t.Errorf("list %+v", list)
	}
	h.token = runsTokenB
	resp, b = h.do(t.Context(), http.MethodGet, api.RouteRunPrefix+run.ID, "", nil)
	errorOf(t, resp, b, http.StatusNotFound, api.CodeNotFound)
	resp, b = h.do(t.Context(), http.MethodGet, api.RouteRuns, "", nil)
	if list := decodeOK[api.RunList](t, resp, b); len(list.Runs) != 0 {
		t.Errorf("another token lists %+v", list)
	}

	// A restart: a new server over the same database still has the result.
	h.server.Stop(time.Minute)
	h2 := runsHarness(t, db)
	if again := h2.awaitRun(run.ID); again.State != api.RunDone || string(again.Result) != string(done.Result) {
		t.Errorf("after a restart: %+v", again)
	}
}

// A test run takes /v1/test's body and gives its answer.
func TestAsyncTestRun(t *testing.T) {
	h := runsHarness(t, filepath.Join(t.TempDir(), "runs.db"))
	run := h.submit("?kind=test", api.TestRequest{JobRequest: api.JobRequest{Files: map[string]api.File{
		"test_x.py": api.TextFile("def test_ok():\n    assert 1 + 1 == 2\n"),
	}}})
	done := h.awaitRun(run.ID)
	var res api.TestResponse
	if err := json.Unmarshal(done.Result, &res); done.State != api.RunDone || err != nil {
		t.Fatalf("%+v %v", done, err)
	}
	if res.Tests.Passed != 1 || res.Phase != "test" {
		t.Fatalf("test result %+v", res)
	}
}

// What the synchronous routes refuse is refused at submission, and so are a
// callback off the allow list, an unknown kind and an unknown run.
func TestAsyncRunRefusals(t *testing.T) {
	h := runsHarness(t, filepath.Join(t.TempDir(), "runs.db"), "127.0.0.1:9")
	for name, c := range map[string]struct {
		query string
		body  any
		code  string
		want  string
	}{
		"no argv":        {"", api.ExecuteRequest{}, api.CodeInvalidSpec, "no command"},
		"bad kind":       {"?kind=nope", api.ExecuteRequest{Argv: []string{"true"}}, api.CodeInvalidSpec, "kind"},
		"off the list":   {"?callback_url=" + url.QueryEscape("http://example.com/x"), api.ExecuteRequest{Argv: []string{"true"}}, api.CodeInvalidSpec, "allow list"},
		"other port":     {"?callback_url=" + url.QueryEscape("http://127.0.0.1:10/x"), api.ExecuteRequest{Argv: []string{"true"}}, api.CodeInvalidSpec, "allow list"},
		"not http":       {"?callback_url=" + url.QueryEscape("file:///etc/passwd"), api.ExecuteRequest{Argv: []string{"true"}}, api.CodeInvalidSpec, "http"},
		"credentials":    {"?callback_url=" + url.QueryEscape("http://u:p@127.0.0.1:9/x"), api.ExecuteRequest{Argv: []string{"true"}}, api.CodeInvalidSpec, "credentials"},
		"unknown image":  {"", api.ExecuteRequest{Argv: []string{"true"}, JobRequest: api.JobRequest{Image: "nope:1"}}, api.CodeUnknownImage, "allowlist"},
		"over a ceiling": {"", api.ExecuteRequest{Argv: []string{"true"}, JobRequest: api.JobRequest{Limits: api.Limits{Memory: "64g"}}}, api.CodeInvalidSpec, "memory"},
	} {
		resp, b := h.postJSON(api.RouteRuns+c.query, c.body)
		if d := errorOf(t, resp, b, http.StatusBadRequest, c.code); !strings.Contains(d.Message, c.want) {
			t.Errorf("%s: %q does not say %q", name, d.Message, c.want)
		}
	}
	resp, b := h.do(t.Context(), http.MethodGet, api.RouteRunPrefix+"r-0123456789ab", "", nil)
	errorOf(t, resp, b, http.StatusNotFound, api.CodeNotFound)
	resp, b = h.do(t.Context(), http.MethodGet, api.RouteRuns+"?limit=0", "", nil)
	errorOf(t, resp, b, http.StatusBadRequest, api.CodeInvalidSpec)
	resp, b = h.postJSON(api.RouteRuns, api.ExecuteRequest{Argv: []string{"true"}}, "Authorization", "Bearer wrong-token-0000000000")
	errorOf(t, resp, b, http.StatusUnauthorized, api.CodeUnauthorized)
}

// The callback's client never dials a link-local or metadata address, even
// for an allowed name.
func TestCallbackRefusesMetadata(t *testing.T) {
	s := &Server{opts: Options{Callbacks: Callbacks{Secret: []byte(cbSecret)}}}
	_, err := s.postCallback(t.Context(), s.callbackClient(), "http://169.254.169.254/latest/meta-data/", []byte("{}"))
	if err == nil || !strings.Contains(err.Error(), "never called") {
		t.Fatalf("metadata address: %v", err)
	}
}

// GET /v1/images lists the allow list with the image's toolchains.
func TestImages(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	resp, b := h.do(t.Context(), http.MethodGet, api.RouteImages, "", nil)
	list := decodeOK[api.ImageList](t, resp, b)
	if len(list.Images) != 1 || !list.Images[0].Default || list.Images[0].Digest == "" || list.Images[0].Error != "" {
		t.Fatalf("images %s", b)
	}
	if tc := list.Images[0].Toolchains; tc["python"] == "" || tc["node"] == "" {
		t.Errorf("toolchains %v", tc)
	}
	// The second listing comes from the cache: the same answer.
	resp, b2 := h.do(t.Context(), http.MethodGet, api.RouteImages, "", nil)
	if again := decodeOK[api.ImageList](t, resp, b2); again.Images[0].Toolchains["python"] != list.Images[0].Toolchains["python"] {
		t.Errorf("second listing %s", b2)
	}
}

func TestParseToolchains(t *testing.T) {
	tc := parseToolchains([]byte("python Python 3.13.5\nnode v24.1.0\ngo go1.26.1\njava openjdk version \"21.0.8\" 2025-07-15\nevil 9.9\nnpm \nnode v1.0\n"))
	want := map[string]string{"python": "3.13.5", "node": "24.1.0", "go": "1.26.1", "java": "21.0.8"}
	if len(tc) != len(want) {
		t.Fatalf("%v", tc)
	}
	for k, v := range want {
		if tc[k] != v {
			t.Errorf("%s: %q, want %q", k, tc[k], v)
		}
	}
}
