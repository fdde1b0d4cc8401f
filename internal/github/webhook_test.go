package github_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/asterhq/aster/internal/github"
	"github.com/asterhq/aster/internal/github/githubtest"
)

var secret = []byte("It's a Secret to Everybody")

func TestSignGitHubTestVector(t *testing.T) {
	t.Parallel()
	// https://docs.github.com/webhooks/using-webhooks/validating-webhook-deliveries
	const want = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
	body := []byte("Hello, World!")
	if got := github.Sign(secret, body); got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
	if err := github.VerifySignature(secret, body, want); err != nil {
		t.Fatalf("VerifySignature(test vector) = %v", err)
	}
}

func TestVerifySignatureRejects(t *testing.T) {
	t.Parallel()
	body := []byte("Hello, World!")
	good := github.Sign(secret, body)
	flipped := []byte(good)
	flipped[len(flipped)-1] ^= 0x01 // '7' → '6'
	tests := []struct {
		name   string
		secret []byte
		body   []byte
		header string
	}{
		{name: "missing", secret: secret, body: body, header: ""},
		{name: "sha1 only", secret: secret, body: body, header: "sha1=01dc10d0c83e72ed246219cdd91669667fe2ca59"},
		{name: "wrong secret", secret: []byte("another secret"), body: body, header: good},
		{name: "body byte flipped", secret: secret, body: []byte("Hello, World?"), header: good},
		{name: "signature byte flipped", secret: secret, body: body, header: string(flipped)},
		{name: "not hex", secret: secret, body: body, header: "sha256=zz" + good[9:]},
		{name: "truncated", secret: secret, body: body, header: good[:40]},
		{name: "bare hex", secret: secret, body: body, header: good[len("sha256="):]},
		{name: "empty secret", secret: nil, body: body, header: github.Sign(nil, body)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := github.VerifySignature(tc.secret, tc.body, tc.header)
			if !errors.Is(err, github.ErrBadSignature) {
				t.Fatalf("err = %v, want ErrBadSignature", err)
			}
			if got := github.WebhookStatus(err); got != http.StatusUnauthorized {
				t.Errorf("status %d, want 401", got)
			}
		})
	}
}

// recordingSink stores accepted events and answers duplicates like a durable store would.
type recordingSink struct {
	mu     sync.Mutex
	seen   map[string]bool
	events []github.Event
	err    error
}

func (s *recordingSink) Accept(_ context.Context, ev github.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	if s.seen[ev.Delivery()] {
		return github.ErrDuplicateDelivery
	}
	s.seen[ev.Delivery()] = true
	s.events = append(s.events, ev)
	return nil
}

func (s *recordingSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.events)
}

// withInstallation returns body with "installation": {"id": id} set, as App deliveries have.
func withInstallation(t *testing.T, body []byte, id int64) []byte {
	return patch(t, body, func(m map[string]any) { m["installation"] = map[string]any{"id": id} })
}

func patch(t *testing.T, body []byte, fn func(map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	fn(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func exampleFor(t *testing.T, event, action string) []byte {
	t.Helper()
	for _, ex := range githubtest.WebhookExamples(t, event) {
		if ex.Action == action {
			return ex.Body
		}
	}
	t.Fatalf("no %s/%s example", event, action)
	return nil
}

func newHandler(t *testing.T, sink github.Sink, opts github.WebhookOptions) *github.WebhookHandler {
	t.Helper()
	opts.Secret, opts.Sink = secret, sink
	h, err := github.NewWebhookHandler(opts)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func serve(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestWebhookHandler(t *testing.T) {
	t.Parallel()
	opened := withInstallation(t, exampleFor(t, "pull_request", "opened"), 42)
	draft := withInstallation(t, patch(t, opened, func(m map[string]any) {
		m["pull_request"].(map[string]any)["draft"] = true
	}), 42)
	type req struct {
		method, event, delivery, sig, contentType string
		body                                      []byte
		contentLength                             int64 // -1: unknown (chunked)
	}
	signed := func(event string, body []byte) req {
		return req{method: http.MethodPost, event: event, delivery: "d-1", sig: github.Sign(secret, body), body: body}
	}
	tests := []struct {
		name       string
		req        req
		opts       github.WebhookOptions
		sinkErr    error
		wantStatus int
		wantResult string
		wantStored int
	}{
		{name: "accepted", req: signed("pull_request", opened), wantStatus: 202, wantResult: "accepted", wantStored: 1},
		{name: "no signature", req: func() req { r := signed("pull_request", opened); r.sig = ""; return r }(),
			wantStatus: 401, wantResult: "rejected"},
		{name: "sha1 only", req: func() req { r := signed("pull_request", opened); r.sig = "sha1=abc"; return r }(),
			wantStatus: 401, wantResult: "rejected"},
		{name: "wrong secret", req: func() req { r := signed("pull_request", opened); r.sig = github.Sign([]byte("x"), opened); return r }(),
			wantStatus: 401, wantResult: "rejected"},
		{name: "flipped byte", req: func() req {
			r := signed("pull_request", opened)
			r.body = bytes.Clone(opened)
			r.body[len(r.body)/2] ^= 0x20
			return r
		}(), wantStatus: 401, wantResult: "rejected"},
		{name: "too large declared", req: signed("pull_request", opened), opts: github.WebhookOptions{MaxBodyBytes: 100},
			wantStatus: 413, wantResult: "rejected"},
		{name: "too large streamed", req: func() req { r := signed("pull_request", opened); r.contentLength = -1; return r }(),
			opts: github.WebhookOptions{MaxBodyBytes: 100}, wantStatus: 413, wantResult: "rejected"},
		{name: "GET", req: func() req { r := signed("pull_request", opened); r.method = http.MethodGet; return r }(),
			wantStatus: 405, wantResult: "rejected"},
		{name: "no delivery id", req: func() req { r := signed("pull_request", opened); r.delivery = ""; return r }(),
			wantStatus: 400, wantResult: "rejected"},
		{name: "signed garbage", req: signed("pull_request", []byte("{not json")), wantStatus: 400, wantResult: "rejected"},
		{name: "signed wrong shape", req: signed("pull_request", []byte(`{"action":"opened","installation":{"id":1},"pull_request":"x"}`)),
			wantStatus: 400, wantResult: "rejected"},
		{name: "ping ignored", req: signed("ping", exampleFor(t, "ping", "")), wantStatus: 200, wantResult: "ignored"},
		{name: "closed ignored", req: signed("pull_request", exampleFor(t, "pull_request", "closed")), wantStatus: 200, wantResult: "ignored"},
		{name: "draft ignored", req: signed("pull_request", draft), wantStatus: 200, wantResult: "ignored"},
		{name: "draft reviewed when configured", req: signed("pull_request", draft), opts: github.WebhookOptions{ReviewDrafts: true},
			wantStatus: 202, wantResult: "accepted", wantStored: 1},
		{name: "form encoded", req: func() req {
			body := []byte("payload=" + strings.NewReplacer("%", "%25", "&", "%26", "+", "%2B", "=", "%3D").Replace(string(opened)))
			r := signed("pull_request", body)
			r.contentType = "application/x-www-form-urlencoded"
			return r
		}(), wantStatus: 202, wantResult: "accepted", wantStored: 1},
		{name: "sink down", req: signed("pull_request", opened), sinkErr: errors.New("disk full"), wantStatus: 503, wantResult: "failed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sink := &recordingSink{err: tc.sinkErr}
			var outcomes []github.Outcome
			tc.opts.OnOutcome = func(o github.Outcome) { outcomes = append(outcomes, o) }
			h := newHandler(t, sink, tc.opts)
			r := githubtest.DeliveryRequest(secret, tc.req.event, tc.req.delivery, tc.req.body)
			r.Method = tc.req.method
			r.Header.Set(github.SignatureHeader, tc.req.sig)
			if tc.req.sig == "" {
				r.Header.Del(github.SignatureHeader)
			}
			if tc.req.delivery == "" {
				r.Header.Del(github.DeliveryHeader)
			}
			if tc.req.contentType != "" {
				r.Header.Set("Content-Type", tc.req.contentType)
			}
			if tc.req.contentLength == -1 {
				r.ContentLength = -1
			}
			w := serve(h, r)
			if w.Code != tc.wantStatus {
				t.Errorf("status %d, want %d (%s)", w.Code, tc.wantStatus, w.Body)
			}
			var reply struct{ Result string }
			_ = json.Unmarshal(w.Body.Bytes(), &reply)
			if reply.Result != tc.wantResult {
				t.Errorf("result %q, want %q", reply.Result, tc.wantResult)
			}
			if got := sink.count(); got != tc.wantStored {
				t.Errorf("stored %d events, want %d", got, tc.wantStored)
			}
			if tc.req.method == http.MethodPost && (len(outcomes) != 1 || outcomes[0].Status != tc.wantStatus) {
				t.Errorf("outcomes %+v", outcomes)
			}
		})
	}
}

func TestWebhookDuplicateDeliveryStoredOnce(t *testing.T) {
	t.Parallel()
	sink := &recordingSink{}
	h := newHandler(t, sink, github.WebhookOptions{})
	body := withInstallation(t, exampleFor(t, "pull_request", "synchronize"), 42)
	for i, want := range []int{http.StatusAccepted, http.StatusOK, http.StatusOK} {
		w := serve(h, githubtest.DeliveryRequest(secret, "pull_request", "72d3162e-cc78-11e3-81ab-4c9367dc0958", body))
		if w.Code != want {
			t.Errorf("delivery %d: status %d, want %d", i, w.Code, want)
		}
	}
	if sink.count() != 1 {
		t.Errorf("stored %d events, want 1", sink.count())
	}
}

// TestWebhookEveryExampleIs2xx sends every example payload GitHub publishes, for every event,
// as an App delivery: handled ones are accepted, everything else is ignored, nothing errors.
func TestWebhookEveryExampleIs2xx(t *testing.T) {
	t.Parallel()
	sink := &recordingSink{}
	h := newHandler(t, sink, github.WebhookOptions{})
	n := 0
	for _, event := range githubtest.WebhookEvents(t) {
		for _, ex := range githubtest.WebhookExamples(t, event) {
			n++
			body := withInstallation(t, ex.Body, 42)
			w := serve(h, githubtest.DeliveryRequest(secret, event, fmt.Sprintf("d-%d", n), body))
			if w.Code != http.StatusAccepted && w.Code != http.StatusOK {
				t.Errorf("%s/%s #%d: status %d: %s", event, ex.Action, ex.Index, w.Code, w.Body)
			}
		}
	}
	if n < 300 {
		t.Errorf("only %d examples; the octokit package looks incomplete", n)
	}
	t.Logf("%d example deliveries, %d accepted", n, sink.count())
}

func TestParseEventExamples(t *testing.T) {
	t.Parallel()
	type want struct {
		kind   string // pr, command, installation, ignored
		reason string
	}
	check := func(t *testing.T, event string, body []byte, w want) github.Event {
		t.Helper()
		ev, err := github.ParseEvent(event, "d", body)
		if err != nil {
			t.Fatalf("ParseEvent: %v", err)
		}
		var kind, reason string
		switch e := ev.(type) {
		case *github.PullRequestEvent:
			kind = "pr"
		case *github.ReviewCommandEvent:
			kind = "command"
		case *github.InstallationEvent:
			kind = "installation"
		case *github.ThreadResolvedEvent:
			kind = "thread"
		case *github.ThreadCommandEvent:
			kind = "thread command"
		case *github.Ignored:
			kind, reason = "ignored", e.Reason
		}
		if kind != w.kind || (w.reason != "" && !strings.Contains(reason, w.reason)) {
			t.Fatalf("got %s (%s), want %s (%s)", kind, reason, w.kind, w.reason)
		}
		return ev
	}

	handled := map[string]bool{"opened": true, "reopened": true, "synchronize": true, "ready_for_review": true}
	for _, ex := range githubtest.WebhookExamples(t, "pull_request") {
		t.Run(fmt.Sprintf("pull_request/%s/%d", ex.Action, ex.Index), func(t *testing.T) {
			if !handled[ex.Action] {
				check(t, "pull_request", ex.Body, want{"ignored", "action not handled"})
				return
			}
			check(t, "pull_request", patch(t, ex.Body, func(m map[string]any) { delete(m, "installation") }),
				want{"ignored", "no installation"})
			ev := check(t, "pull_request", withInstallation(t, ex.Body, 42), want{kind: "pr"}).(*github.PullRequestEvent)
			var raw struct {
				Number      int
				PullRequest struct {
					Draft bool
					Head  struct{ SHA, Ref string }
					Base  struct{ SHA, Ref string }
				} `json:"pull_request"`
			}
			_ = json.Unmarshal(ex.Body, &raw)
			if ev.Number != raw.Number || ev.Head.SHA != raw.PullRequest.Head.SHA || ev.Base.Ref != raw.PullRequest.Base.Ref ||
				ev.Draft != raw.PullRequest.Draft || ev.InstallationID != 42 || ev.Action != ex.Action {
				t.Errorf("event %+v does not match the payload", ev)
			}
		})
	}
	for _, ex := range githubtest.WebhookExamples(t, "issue_comment") {
		t.Run(fmt.Sprintf("issue_comment/%s/%d", ex.Action, ex.Index), func(t *testing.T) {
			body := withInstallation(t, ex.Body, 42)
			if ex.Action != "created" && ex.Action != "edited" {
				check(t, "issue_comment", body, want{"ignored", "action not handled"})
				return
			}
			check(t, "issue_comment", body, want{"ignored", "not a pull request"})
			onPR := patch(t, body, func(m map[string]any) {
				m["issue"].(map[string]any)["pull_request"] = map[string]any{"url": "https://api.github.com/repos/x/y/pulls/1"}
			})
			check(t, "issue_comment", onPR, want{"ignored", "not an /aster command"})
			command := patch(t, onPR, func(m map[string]any) { m["comment"].(map[string]any)["body"] = "/aster review\nplease" })
			ev := check(t, "issue_comment", command, want{kind: "command"}).(*github.ReviewCommandEvent)
			if ev.Number == 0 || ev.CommentID == 0 || ev.Sender == "" || ev.Repo.Owner == "" {
				t.Errorf("command %+v misses fields", ev)
			}
			var raw struct {
				Comment struct {
					UpdatedAt time.Time `json:"updated_at"`
				}
			}
			_ = json.Unmarshal(ex.Body, &raw)
			if !ev.UpdatedAt.Equal(raw.Comment.UpdatedAt) || ev.UpdatedAt.IsZero() || ev.Edited != (ex.Action == "edited") {
				t.Errorf("command %+v: updated_at %s, edited %v do not match the payload", ev, raw.Comment.UpdatedAt, ev.Edited)
			}
			byBot := patch(t, command, func(m map[string]any) { m["sender"].(map[string]any)["type"] = "Bot" })
			check(t, "issue_comment", byBot, want{"ignored", "bot"})
		})
	}
	for _, ex := range githubtest.WebhookExamples(t, "installation") {
		t.Run(fmt.Sprintf("installation/%s/%d", ex.Action, ex.Index), func(t *testing.T) {
			ev := check(t, "installation", ex.Body, want{kind: "installation"}).(*github.InstallationEvent)
			if ev.Action != ex.Action || ev.InstallationID == 0 || ev.Account == "" {
				t.Errorf("installation %+v misses fields", ev)
			}
		})
	}
	spec, err := githubtest.LoadSpec()
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range githubtest.WebhookExamples(t, "pull_request_review_thread") {
		t.Run(fmt.Sprintf("pull_request_review_thread/%s/%d", ex.Action, ex.Index), func(t *testing.T) {
			body := withInstallation(t, ex.Body, 42)
			if ex.Action != "resolved" {
				check(t, "pull_request_review_thread", body, want{"ignored", "action not handled"})
				return
			}
			check(t, "pull_request_review_thread", patch(t, body, func(m map[string]any) { delete(m, "installation") }),
				want{"ignored", "no installation"})
			check(t, "pull_request_review_thread", body, want{"ignored", "not a thread Aster opened"})
			// The thread as Aster opens it: its first comment by the App, with a marker.
			aster := patch(t, body, func(m map[string]any) {
				c := m["thread"].(map[string]any)["comments"].([]any)[0].(map[string]any)
				c["user"].(map[string]any)["type"] = "Bot"
				c["user"].(map[string]any)["login"] = "aster[bot]"
				c["body"] = "**warning** · lines `todo`\n\nTODO left in\n\n<!-- aster:fp=0123456789abcdef0123456789abcdef -->"
				m["sender"].(map[string]any)["type"] = "User"
			})
			if err := spec.ValidateWebhook("pull_request_review_thread", "resolved", aster, "action", "thread", "sender"); err != nil {
				t.Fatalf("the payload does not match GitHub's schema: %v", err)
			}
			ev := check(t, "pull_request_review_thread", aster, want{kind: "thread"}).(*github.ThreadResolvedEvent)
			var raw struct {
				PullRequest struct{ Number int } `json:"pull_request"`
				Thread      struct {
					NodeID string `json:"node_id"`
				}
				Sender struct{ Login string }
			}
			_ = json.Unmarshal(aster, &raw)
			if ev.Number != raw.PullRequest.Number || ev.ThreadID != raw.Thread.NodeID || ev.Sender != raw.Sender.Login ||
				ev.InstallationID != 42 || ev.Repo.Owner == "" {
				t.Errorf("thread event %+v does not match the payload", ev)
			}
			// Aster resolving its own thread comes back as this event, sent by the App.
			byBot := patch(t, aster, func(m map[string]any) { m["sender"].(map[string]any)["type"] = "Bot" })
			check(t, "pull_request_review_thread", byBot, want{"ignored", "resolved by a bot"})
			unmarked := patch(t, aster, func(m map[string]any) {
				m["thread"].(map[string]any)["comments"].([]any)[0].(map[string]any)["body"] = "a bot's thread, not Aster's"
			})
			check(t, "pull_request_review_thread", unmarked, want{"ignored", "not a thread Aster opened"})
		})
	}
	for _, ex := range githubtest.WebhookExamples(t, "pull_request_review_comment") {
		t.Run(fmt.Sprintf("pull_request_review_comment/%s/%d", ex.Action, ex.Index), func(t *testing.T) {
			body := withInstallation(t, ex.Body, 42)
			if ex.Action != "created" && ex.Action != "edited" {
				check(t, "pull_request_review_comment", body, want{"ignored", "action not handled"})
				return
			}
			check(t, "pull_request_review_comment", body, want{"ignored", "not an /aster thread command"})
			// A person's reply in a thread, "/aster ignore" as its first line.
			reply := patch(t, body, func(m map[string]any) {
				c := m["comment"].(map[string]any)
				c["body"] = "/aster ignore the path is fixed\nthanks"
				c["in_reply_to_id"] = float64(7)
				m["sender"].(map[string]any)["type"] = "User"
				githubtest.CompleteReviewComment(c, 1)
			})
			if err := spec.ValidateWebhook("pull_request_review_comment", ex.Action, reply, "action", "comment", "sender"); err != nil {
				t.Fatalf("the payload does not match GitHub's schema: %v", err)
			}
			check(t, "pull_request_review_comment", patch(t, reply, func(m map[string]any) { delete(m, "installation") }),
				want{"ignored", "no installation"})
			ev := check(t, "pull_request_review_comment", reply, want{kind: "thread command"}).(*github.ThreadCommandEvent)
			var raw struct {
				PullRequest struct{ Number int } `json:"pull_request"`
				Comment     struct{ ID int64 }
				Sender      struct{ Login string }
			}
			_ = json.Unmarshal(reply, &raw)
			if ev.Number != raw.PullRequest.Number || ev.CommentID != raw.Comment.ID || ev.Sender != raw.Sender.Login ||
				ev.Action != ex.Action || ev.InstallationID != 42 || ev.Repo.Owner == "" {
				t.Errorf("thread command event %+v does not match the payload", ev)
			}
			unignore := patch(t, reply, func(m map[string]any) { m["comment"].(map[string]any)["body"] = "  /aster unignore" })
			check(t, "pull_request_review_comment", unignore, want{kind: "thread command"})
			// A command that opens a thread of its own is in no thread of Aster's.
			top := patch(t, reply, func(m map[string]any) { delete(m["comment"].(map[string]any), "in_reply_to_id") })
			check(t, "pull_request_review_comment", top, want{"ignored", "not a reply in a thread"})
			// Aster's own answers quote no command, but a bot's comment is never one.
			byBot := patch(t, reply, func(m map[string]any) { m["sender"].(map[string]any)["type"] = "Bot" })
			check(t, "pull_request_review_comment", byBot, want{"ignored", "bot"})
			conversation := patch(t, reply, func(m map[string]any) { m["comment"].(map[string]any)["body"] = "/aster review" })
			check(t, "pull_request_review_comment", conversation, want{"ignored", "not an /aster thread command"})
			for _, bad := range []func(map[string]any){
				func(m map[string]any) { delete(m, "comment") },
				func(m map[string]any) { m["pull_request"].(map[string]any)["number"] = float64(0) },
				func(m map[string]any) { m["comment"].(map[string]any)["id"] = float64(-1) },
				func(m map[string]any) { m["repository"].(map[string]any)["name"] = "../x" },
			} {
				if _, err := github.ParseEvent("pull_request_review_comment", "d", patch(t, reply, bad)); !errors.Is(err, github.ErrMalformedPayload) {
					t.Errorf("a malformed thread command gave %v, want ErrMalformedPayload", err)
				}
			}
		})
	}
	for _, event := range []string{"push", "ping", "check_run", "pull_request_review", "installation_repositories"} {
		for _, ex := range githubtest.WebhookExamples(t, event) {
			t.Run(fmt.Sprintf("%s/%s/%d", event, ex.Action, ex.Index), func(t *testing.T) {
				check(t, event, withInstallation(t, ex.Body, 42), want{"ignored", "event not handled"})
			})
		}
	}
}

func TestParsePullRequestOpenedExample(t *testing.T) {
	t.Parallel()
	body := withInstallation(t, exampleFor(t, "pull_request", "opened"), 42)
	ev, err := github.ParseEvent("pull_request", "delivery-1", body)
	if err != nil {
		t.Fatal(err)
	}
	repo := github.Repo{ID: 186853002, Owner: "Codertocat", Name: "Hello-World", CloneURL: "https://github.com/Codertocat/Hello-World.git"}
	want := &github.PullRequestEvent{
		DeliveryID: "delivery-1", Action: "opened", InstallationID: 42, Repo: repo, Number: 2,
		Title:  "Update the README with new information.",
		Head:   github.Branch{SHA: "ec26c3e57ca3a959ca5aad62de7213c562f8c821", Ref: "changes", Repo: repo},
		Base:   github.Branch{SHA: "f95f852bd8fca8fcc58a9a2d6c842781e32a215e", Ref: "master", Repo: repo},
		Sender: "Codertocat",
	}
	if diff := cmp.Diff(want, ev); diff != "" {
		t.Errorf("event (-want +got):\n%s", diff)
	}
}

func TestParsePullRequestFork(t *testing.T) {
	t.Parallel()
	base := withInstallation(t, exampleFor(t, "pull_request", "synchronize"), 42)
	fork := patch(t, base, func(m map[string]any) {
		head := m["pull_request"].(map[string]any)["head"].(map[string]any)
		head["repo"] = map[string]any{"id": 999, "name": "Hello-World", "full_name": "mallory/Hello-World",
			"owner": map[string]any{"login": "mallory"}, "clone_url": "https://github.com/mallory/Hello-World.git"}
		m["before"] = strings.Repeat("a", 40)
	})
	ev, err := github.ParseEvent("pull_request", "d", fork)
	if err != nil {
		t.Fatal(err)
	}
	pr := ev.(*github.PullRequestEvent)
	if !pr.Fork || pr.Head.Repo.Owner != "mallory" || pr.Repo.Owner != "Codertocat" || pr.Before != strings.Repeat("a", 40) {
		t.Errorf("fork event %+v", pr)
	}
	deleted := patch(t, base, func(m map[string]any) { m["pull_request"].(map[string]any)["head"].(map[string]any)["repo"] = nil })
	ev, err = github.ParseEvent("pull_request", "d", deleted)
	if err != nil {
		t.Fatal(err)
	}
	if pr := ev.(*github.PullRequestEvent); !pr.Fork || pr.Head.Repo != (github.Repo{}) {
		t.Errorf("deleted fork %+v", pr)
	}
}

func TestParseEventRejectsHostileNames(t *testing.T) {
	t.Parallel()
	base := withInstallation(t, exampleFor(t, "pull_request", "opened"), 42)
	for _, name := range []string{"../../orgs", "a/b", "..", "name?x=1", "", strings.Repeat("a", 101)} {
		body := patch(t, base, func(m map[string]any) {
			m["repository"].(map[string]any)["name"] = name
			m["repository"].(map[string]any)["full_name"] = "Codertocat/" + name
		})
		if _, err := github.ParseEvent("pull_request", "d", body); !errors.Is(err, github.ErrMalformedPayload) {
			t.Errorf("repository name %q: err = %v, want ErrMalformedPayload", name, err)
		}
	}
	badSHA := patch(t, base, func(m map[string]any) {
		m["pull_request"].(map[string]any)["head"].(map[string]any)["sha"] = "--upload-pack=x"
	})
	if _, err := github.ParseEvent("pull_request", "d", badSHA); !errors.Is(err, github.ErrMalformedPayload) {
		t.Errorf("bad sha: err = %v", err)
	}
}

func TestCommandOf(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"/aster pause":                github.CmdPause,
		"/aster pause\nfor a while":   github.CmdPause,
		"  /aster resume  ":           github.CmdResume,
		"/aster help":                 github.CmdHelp,
		"/aster help me":              github.CmdHelp,
		"/aster resolve":              github.CmdReview,
		"/aster review":               github.CmdReview,
		"/aster paused":               "",
		"/aster  pause":               "",
		"> /aster pause":              "",
		"please /aster help":          "",
		"/aster ignore":               github.CmdInThread, // a thread command, in the conversation
		"/aster unignore x":           github.CmdInThread,
		"/ASTER PAUSE":                "",
		"/aster pause\u200b":          "",
		"`/aster help`":               "",
		"hello\n/aster pause":         "",
		"/aster":                      "",
		"/aster \u00a0pause":          "",
		"\n\n/aster resume\r\nthanks": github.CmdResume,
	}
	for body, want := range tests {
		if got := github.CommandOf(body); got != want {
			t.Errorf("CommandOf(%q) = %q, want %q", body, got, want)
		}
	}
}

func TestThreadCommandOf(t *testing.T) {
	t.Parallel()
	type got struct {
		word, reason string
		ok           bool
	}
	tests := map[string]got{
		"/aster ignore":                           {"ignore", "", true},
		"/aster ignore the directory exists":      {"ignore", "the directory exists", true},
		"  /aster ignore\tgenerated  \nmore text": {"ignore", "generated", true},
		"\n/aster unignore":                       {"unignore", "", true},
		"/aster ignored":                          {},
		"/aster review":                           {},
		"> /aster ignore":                         {},
		"please /aster ignore":                    {},
		"hello\n/aster ignore":                    {},
		"/ASTER IGNORE":                           {},
		"":                                        {},
	}
	for body, want := range tests {
		word, reason, ok := github.ThreadCommandOf(body)
		if (got{word, reason, ok}) != want {
			t.Errorf("ThreadCommandOf(%q) = %q, %q, %v, want %+v", body, word, reason, ok, want)
		}
	}
}

func TestIsReviewCommand(t *testing.T) {
	t.Parallel()
	tests := map[string]bool{
		"/aster review":               true,
		"  /aster review  ":           true,
		"\n\n/aster review\nthanks":   true,
		"/aster review please":        true,
		"/aster reviews":              false,
		"> /aster review":             false,
		"please /aster review":        false,
		"/ASTER REVIEW":               false,
		"":                            false,
		"hello\n/aster review":        false,
		"/aster review\t--full":       true,
		"`/aster review`":             false,
		"/aster review\u200b":         false,
		"/asterreview":                false,
		"/aster  review":              false,
		"\u00a0/aster review":         true, // TrimSpace: Unicode spaces count as blank
		"/aster review\r\nmore text":  true,
		"/aster review\u00a0and more": false,
		"/aster resolve":              true,
		"/aster resolve now":          true,
		"/aster resolved":             false,
		"/aster ignore":               false,
	}
	for body, want := range tests {
		if got := github.IsReviewCommand(body); got != want {
			t.Errorf("IsReviewCommand(%q) = %v, want %v", body, got, want)
		}
	}
}

func FuzzParseEvent(f *testing.F) {
	for _, ev := range []string{"pull_request", "issue_comment", "installation", "pull_request_review_comment"} {
		f.Add(ev, []byte(`{"action":"created","installation":{"id":1},"pull_request":{"number":1},"comment":{"id":2,"in_reply_to_id":1,"body":"/aster ignore x"},"repository":{"full_name":"o/r"}}`))
		f.Add(ev, []byte(`{"action":"opened","installation":{"id":1},"repository":{"name":"r","owner":{"login":"o"}},"pull_request":{"head":{"sha":"`+strings.Repeat("a", 40)+`"},"base":{"sha":"`+strings.Repeat("b", 40)+`"}},"number":1}`))
		f.Add(ev, []byte(`{"action":"created","installation":{"id":1},"issue":{"number":1,"pull_request":{}},"comment":{"id":1,"body":"/aster review"},"repository":{"full_name":"o/r"}}`))
		f.Add(ev, []byte(`null`))
		f.Add(ev, []byte(`[]`))
	}
	if _, err := githubtest.DataDir(); err == nil {
		for _, event := range []string{"pull_request", "issue_comment", "installation", "pull_request_review_thread", "pull_request_review_comment"} {
			for _, ex := range githubtest.WebhookExamples(f, event) {
				f.Add(event, ex.Body)
			}
		}
	}
	f.Fuzz(func(t *testing.T, event string, body []byte) {
		ev, err := github.ParseEvent(event, "d", body)
		if err != nil {
			if !errors.Is(err, github.ErrMalformedPayload) {
				t.Fatalf("error not classified: %v", err)
			}
			if ev != nil {
				t.Fatal("event and error both returned")
			}
			return
		}
		switch e := ev.(type) {
		case *github.PullRequestEvent:
			if e.Number <= 0 || e.InstallationID <= 0 || e.Repo.Owner == "" || len(e.Head.SHA) < 40 || strings.Contains(e.Repo.Name, "/") {
				t.Fatalf("invalid pull request event accepted: %+v", e)
			}
		case *github.ReviewCommandEvent:
			if e.Number <= 0 || e.InstallationID <= 0 || strings.Contains(e.Repo.Owner, "/") {
				t.Fatalf("invalid command accepted: %+v", e)
			}
		case *github.InstallationEvent:
			if e.InstallationID <= 0 {
				t.Fatalf("installation without id: %+v", e)
			}
		case *github.ThreadResolvedEvent:
			if e.Number <= 0 || e.InstallationID <= 0 || strings.Contains(e.Repo.Owner, "/") {
				t.Fatalf("invalid thread resolution accepted: %+v", e)
			}
		case *github.ThreadCommandEvent:
			if e.Number <= 0 || e.InstallationID <= 0 || e.CommentID <= 0 || strings.Contains(e.Repo.Owner, "/") ||
				(e.Action != "created" && e.Action != "edited") {
				t.Fatalf("invalid thread command accepted: %+v", e)
			}
		case *github.Ignored:
		default:
			t.Fatalf("unexpected %T", ev)
		}
	})
}

func FuzzVerifySignature(f *testing.F) {
	f.Add([]byte("Hello, World!"), "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17")
	f.Add([]byte(""), "sha1=")
	f.Fuzz(func(t *testing.T, body []byte, header string) {
		err := github.VerifySignature(secret, body, header)
		// Hex digits in upper case carry the same digest (the fuzzer's find in
		// testdata/fuzz): what must never pass is another digest.
		if err == nil && strings.ToLower(header) != github.Sign(secret, body) {
			t.Fatalf("accepted %q for a body it does not sign", header)
		}
		if err != nil && !errors.Is(err, github.ErrBadSignature) {
			t.Fatalf("unclassified error %v", err)
		}
	})
}

// BenchmarkWebhookHandler measures one signed pull_request delivery (GitHub's opened example,
// about 25 KB): cap, verify, parse, accept.
func BenchmarkWebhookHandler(b *testing.B) {
	var body []byte
	for _, ex := range githubtest.WebhookExamples(b, "pull_request") {
		if ex.Action == "opened" {
			var m map[string]any
			_ = json.Unmarshal(ex.Body, &m)
			m["installation"] = map[string]any{"id": 1}
			body, _ = json.Marshal(m)
			break
		}
	}
	h, err := github.NewWebhookHandler(github.WebhookOptions{Secret: secret, Sink: discardSink{}})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, githubtest.DeliveryRequest(secret, "pull_request", fmt.Sprint("d", i), body))
		if w.Code != http.StatusAccepted {
			b.Fatal(w.Code)
		}
	}
}

type discardSink struct{}

func (discardSink) Accept(context.Context, github.Event) error { return nil }
