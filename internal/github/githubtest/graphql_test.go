package githubtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// installationToken asks the fake for a token of its installation, as the App does.
func installationToken(t *testing.T, s *Server, body string) string {
	t.Helper()
	now := time.Now().Unix()
	jwt := signJWT(t, appKey(), "RS256", map[string]any{"iss": fmt.Sprint(s.AppID()), "iat": now - 30, "exp": now + 90})
	req, _ := http.NewRequestWithContext(t.Context(), "POST", s.URL()+"app/installations/99/access_tokens", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+jwt)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Token string `json:"token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Token == "" {
		t.Fatalf("token: status %d, %v", resp.StatusCode, err)
	}
	return out.Token
}

// TestGraphQLAgainstGitHubsSchema: the fake's GraphQL endpoint runs review-thread queries
// and resolveReviewThread, refuses (as a test failure) every document GitHub's published
// schema does not validate and every field it does not serve, and answers NOT_FOUND for an
// unknown thread like GitHub does.
func TestGraphQLAgainstGitHubsSchema(t *testing.T) {
	t.Parallel()
	s, rej := fakeWithPull(t)
	first := s.AddReviewComment("o", "r", Comment{Number: 1, Author: s.BotLogin(), Body: "finding", Path: "a", Line: 1})
	s.AddReviewComment("o", "r", Comment{Number: 1, Author: "octocat", Body: "/aster ignore", Path: "a", Line: 1, InReplyTo: first})
	s.AddReviewComment("o", "r", Comment{Number: 1, Author: "octocat", Body: "human thread", Path: "a", Line: 1})
	tok := installationToken(t, s, "")
	readOnly := installationToken(t, s, `{"permissions":{"pull_requests":"read"}}`)
	graphqlURL := strings.TrimSuffix(s.URL(), "/api/v3/") + GraphQLPath

	const threads = `query($o: String!, $n: String!) { repository(owner: $o, name: $n) { pullRequest(number: 1) {
	  reviewThreads(first: 2) { pageInfo { hasNextPage endCursor } nodes { id isResolved
	    comments(first: 10) { nodes { databaseId body author { __typename login } } } } } } } }`
	resolve := fmt.Sprintf(`mutation { resolveReviewThread(input: {threadId: %q}) { thread { id isResolved } } }`, nodeID("PRRT_", first))
	tests := []struct {
		name, token, method, query string
		vars                       map[string]any
		want                       string // in the answer
		wantReject                 string
	}{
		{name: "threads", query: threads, vars: map[string]any{"o": "o", "n": "r"},
			want: `"author":{"__typename":"Bot","login":"aster-test"},"body":"finding"`},
		{name: "replies join their thread", query: threads, vars: map[string]any{"o": "o", "n": "r"}, want: `"body":"/aster ignore"`},
		{name: "pages", query: threads, vars: map[string]any{"o": "o", "n": "r"}, want: `"hasNextPage":false`},
		{name: "field not in the schema", query: `{ repository(owner: "o", name: "r") { pullRequest(number: 1) { reviewThreads(first: 1) { nodes { resolved } } } } }`,
			wantReject: "not valid against GitHub's schema"},
		{name: "wrong argument type", query: `{ repository(owner: "o", name: "r") { pullRequest(number: "1") { number } } }`,
			wantReject: "not valid against GitHub's schema"},
		{name: "missing variable", query: threads, vars: map[string]any{"o": "o"}, wantReject: "graphql variables"},
		{name: "connection without first", query: `{ repository(owner: "o", name: "r") { pullRequest(number: 1) { reviewThreads { totalCount } } } }`,
			wantReject: "first between 1 and 100"},
		{name: "field the fake does not serve", query: `{ repository(owner: "o", name: "r") { pullRequest(number: 1) { title } } }`,
			wantReject: "does not serve PullRequest.title"},
		{name: "other repository", query: `{ repository(owner: "o", name: "nope") { pullRequest(number: 1) { number } } }`, want: `"type":"NOT_FOUND"`},
		{name: "unknown thread", query: `mutation { resolveReviewThread(input: {threadId: "PRRT_x"}) { thread { id } } }`, want: `"type":"NOT_FOUND"`},
		{name: "resolve needs write", token: readOnly, query: resolve, want: `"type":"FORBIDDEN"`},
		{name: "resolve", query: resolve, want: `"isResolved":true`},
		{name: "no token", token: "-", query: threads, wantReject: "installation token"},
		{name: "GET", method: "GET", query: threads, wantReject: "POST only"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := len(rej.list())
			body, _ := json.Marshal(map[string]any{"query": tc.query, "variables": tc.vars})
			req, _ := http.NewRequestWithContext(t.Context(), cmpOr(tc.method, "POST"), graphqlURL, strings.NewReader(string(body)))
			switch tc.token {
			case "":
				req.Header.Set("Authorization", "token "+tok)
			case "-":
			default:
				req.Header.Set("Authorization", "token "+tc.token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			answer, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if tc.want != "" && !strings.Contains(string(answer), tc.want) {
				t.Errorf("answer %s, want it to contain %s", answer, tc.want)
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
	ts := s.Threads("o", "r", 1)
	if len(ts) != 2 || !ts[0].Resolved || ts[0].ResolvedBy != s.BotLogin() || len(ts[0].Comments) != 2 || ts[1].Resolved {
		t.Errorf("threads after the mutation: %+v", ts)
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
