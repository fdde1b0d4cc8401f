package gitea

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/github"
)

const (
	shaA = "1111111111111111111111111111111111111111"
	shaB = "2222222222222222222222222222222222222222"
)

// pullBody is the shape of Gitea 1.27's pull_request delivery (the fields Aster reads).
func pullBody(action string) string {
	return `{"action":"` + action + `","number":3,"before":"` + shaA + `","after":"` + shaB + `",
	"pull_request":{"number":3,"title":"t","draft":false,
	  "head":{"ref":"feature","sha":"` + shaB + `","repo":{"id":7,"name":"widgets","full_name":"acme/widgets","owner":{"login":"acme"}}},
	  "base":{"ref":"main","sha":"` + shaA + `","repo":{"id":7,"name":"widgets","full_name":"acme/widgets","owner":{"login":"acme"}}}},
	"repository":{"id":7,"name":"widgets","full_name":"acme/widgets","owner":{"login":"acme"}},"sender":{"login":"alice"}}`
}

func commentBody(action, body string, pull bool) string {
	pr := `null`
	if pull {
		pr = `{"merged":false}`
	}
	return `{"action":"` + action + `","issue":{"number":3,"pull_request":` + pr + `},
	"comment":{"id":42,"body":` + quote(body) + `,"user":{"login":"bob"},"created_at":"2026-12-05T10:00:00Z","updated_at":"2026-12-05T10:00:01Z"},
	"repository":{"id":7,"name":"widgets","full_name":"acme/widgets","owner":{"login":"acme"}},"sender":{"login":"bob"},"is_pull":` + map[bool]string{true: "true", false: "false"}[pull] + `}`
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestParseEvent(t *testing.T) {
	ev, err := ParseEvent("pull_request", "d1", []byte(pullBody("synchronized")))
	pr, ok := ev.(*github.PullRequestEvent)
	if err != nil || !ok || pr.Action != "synchronize" || pr.Before != shaA || pr.Head.SHA != shaB || pr.Number != 3 ||
		pr.Repo.FullName() != "acme/widgets" || pr.Fork || pr.InstallationID != 0 {
		t.Fatalf("synchronized: %+v, %v", ev, err)
	}
	ev, err = ParseEvent("issue_comment", "d2", []byte(commentBody("created", "/aster review\nplease", true)))
	cmd, ok := ev.(*github.ReviewCommandEvent)
	if err != nil || !ok || cmd.Sender != "bob" || cmd.CommentID != 42 || cmd.Number != 3 || cmd.UpdatedAt.Second() != 1 || cmd.Command != github.CmdReview {
		t.Fatalf("command: %+v, %v", ev, err)
	}
	ev, err = ParseEvent("issue_comment", "d3", []byte(commentBody("created", "/aster pause", true)))
	if cmd, ok := ev.(*github.ReviewCommandEvent); err != nil || !ok || cmd.Command != github.CmdPause {
		t.Fatalf("/aster pause: %+v, %v", ev, err)
	}
	// A reply in a conversation comes as a pull request's issue_comment.
	ev, err = ParseEvent("issue_comment", "d4", []byte(commentBody("created", "/aster ignore generated\nthanks", true)))
	if tc, ok := ev.(*github.ThreadCommandEvent); err != nil || !ok || tc.Event != "issue_comment" || tc.Sender != "bob" ||
		tc.CommentID != 42 || tc.Number != 3 || tc.Action != "created" || tc.Repo.FullName() != "acme/widgets" {
		t.Fatalf("/aster ignore: %+v, %v", ev, err)
	}
	ev, err = ParseEvent("issue_comment", "d5", []byte(commentBody("edited", "/aster unignore", true)))
	if tc, ok := ev.(*github.ThreadCommandEvent); err != nil || !ok || tc.Action != "edited" {
		t.Fatalf("/aster unignore: %+v, %v", ev, err)
	}
	ignored := []struct{ event, body string }{
		{"issue_comment", commentBody("created", "/aster ignore", false)},
		{"issue_comment", commentBody("created", "/aster ignored", true)},
		{"pull_request", pullBody("closed")},
		{"pull_request", pullBody("edited")},
		{"issue_comment", commentBody("created", "looks good, /aster review later", true)},
		{"issue_comment", commentBody("created", "/aster review", false)},
		{"issue_comment", commentBody("deleted", "/aster review", true)},
		{"push", `{}`},
	}
	for _, c := range ignored {
		if ev, err := ParseEvent(c.event, "d", []byte(c.body)); err != nil {
			t.Errorf("%s: %v", c.event, err)
		} else if _, ok := ev.(*github.Ignored); !ok {
			t.Errorf("%s %.60q: %T, want ignored", c.event, c.body, ev)
		}
	}
	malformed := []struct{ event, body string }{
		{"", pullBody("opened")},
		{"pull_request", `[]`},
		{"pull_request", `{"action":"opened"}`},
		{"pull_request", strings.Replace(pullBody("opened"), shaB, "HEAD", -1)},
		{"pull_request", strings.Replace(pullBody("opened"), `"name":"widgets"`, `"name":"../x"`, -1)},
		{"issue_comment", strings.Replace(commentBody("created", "/aster review", true), `"login":"bob"`, `"login":"b o b"`, -1)},
	}
	for _, c := range malformed {
		if _, err := ParseEvent(c.event, "d", []byte(c.body)); !errors.Is(err, github.ErrMalformedPayload) {
			t.Errorf("%q %.60q: %v, want malformed", c.event, c.body, err)
		}
	}
}

// FuzzParseEvent: no body makes the parser panic, and an event it returns names a
// repository and a number safe for an API path.
func FuzzParseEvent(f *testing.F) {
	f.Add("pull_request", pullBody("opened"))
	f.Add("pull_request", pullBody("synchronized"))
	f.Add("issue_comment", commentBody("created", "/aster review", true))
	f.Add("issue_comment", commentBody("edited", "/aster resolve", true))
	f.Add("issue_comment", commentBody("created", "/aster ignore generated", true))
	f.Fuzz(func(t *testing.T, event, body string) {
		ev, err := ParseEvent(event, "d", []byte(body))
		if err != nil {
			if !errors.Is(err, github.ErrMalformedPayload) {
				t.Fatalf("error %v is not classified", err)
			}
			return
		}
		switch e := ev.(type) {
		case *github.PullRequestEvent:
			if !validName(e.Repo.Owner) || !validName(e.Repo.Name) || e.Number <= 0 || !shaPattern.MatchString(e.Head.SHA) {
				t.Fatalf("unsafe event %+v", e)
			}
		case *github.ReviewCommandEvent:
			if !validName(e.Repo.Owner) || !validName(e.Repo.Name) || e.Number <= 0 || !validName(e.Sender) {
				t.Fatalf("unsafe command %+v", e)
			}
		case *github.ThreadCommandEvent:
			if !validName(e.Repo.Owner) || !validName(e.Repo.Name) || e.Number <= 0 || e.CommentID <= 0 || !validName(e.Sender) {
				t.Fatalf("unsafe thread command %+v", e)
			}
		}
	})
}

func TestStatusState(t *testing.T) {
	cases := map[[2]string]string{
		{"in_progress", ""}: "pending", {"completed", "success"}: "success", {"completed", "failure"}: "failure",
		{"completed", "neutral"}: "warning", {"completed", "cancelled"}: "error",
	}
	for in, want := range cases {
		if got := statusState(in[0], in[1]); got != want {
			t.Errorf("%v: %s, want %s", in, got, want)
		}
	}
}

func TestNewRefusesBadSettings(t *testing.T) {
	for _, o := range []Options{
		{URL: "ftp://gitea.example", Token: []byte("t")},
		{URL: "https://user:pw@gitea.example", Token: []byte("t")},
		{URL: "https://gitea.example/?token=x", Token: []byte("t")},
		{URL: "https://gitea.example", Token: []byte(" \n")},
		{URL: "https://gitea.example", Token: []byte("two words")},
	} {
		if _, err := New(o); err == nil || strings.Contains(err.Error(), "pw") {
			t.Errorf("%q: %v", o.URL, err)
		}
	}
	f, err := New(Options{URL: "https://gitea.example/sub", Token: []byte("tok\n")})
	if err != nil || f.APIURL() != "https://gitea.example/sub/api/v1/" {
		t.Fatalf("%v %v", f, err)
	}
}
