package github_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/asterhq/aster/internal/github"
	"github.com/asterhq/aster/internal/github/githubtest"
	"github.com/asterhq/aster/internal/testkit"
	"github.com/asterhq/aster/internal/workspace/workspacetest"
)

const (
	owner = "acme"
	name  = "widgets"
)

// syncBuffer collects output from many goroutines while the test reads it.
type syncBuffer = testkit.SyncBuffer

type fixture struct {
	fake       *githubtest.Server
	git        *githubtest.GitRepo
	app        *github.App
	client     *github.Client
	logs       *syncBuffer
	base, head string
}

const mainV1 = "package main\n\nfunc main() {}\n"
const mainV2 = "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hi\")\n}\n"

// setup starts the fake with one repository and pull request #7 (base → head changes main.go
// and tries to switch review off in .aster.yml), and an App client for it.
func setup(t *testing.T) *fixture {
	t.Helper()
	fake := githubtest.New(t, githubtest.Options{})
	g := githubtest.NewGitRepo(t)
	base := g.Commit("", "base", map[string]string{".aster.yml": "severity: warning\n", "main.go": mainV1, "docs/a.md": "a\n"})
	head := g.Commit(base, "head", map[string]string{".aster.yml": "severity: none\n", "main.go": mainV2})
	g.Branch("feature", head)
	fake.AddRepo(githubtest.Repository{Owner: owner, Name: name, Git: g})
	fake.AddPullRequest(owner, name, githubtest.PullRequest{
		Number: 7, Title: "Say hi", Body: "please review", BaseRef: "main", BaseSHA: base, HeadRef: "feature", HeadSHA: head,
	})
	logs := &syncBuffer{}
	app, err := github.NewApp(github.AppOptions{
		AppID: fake.AppID(), PrivateKey: fake.PrivateKeyPEM(), BaseURL: fake.URL(),
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Retry:  github.RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	c, err := app.Client(github.ClientOptions{InstallationID: fake.InstallationID(), Owner: owner, Repo: name})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{fake: fake, git: g, app: app, client: c, logs: logs, base: base, head: head}
}

func TestTokenIsScopedToOneRepositoryAndMinimumPermissions(t *testing.T) {
	t.Parallel()
	f := setup(t)
	if _, err := f.client.GetPullRequest(t.Context(), 7); err != nil {
		t.Fatal(err)
	}
	if _, err := f.client.GetPullRequest(t.Context(), 7); err != nil {
		t.Fatal(err)
	}
	grants := f.fake.Tokens()
	if len(grants) != 1 {
		t.Fatalf("issued %d tokens for two calls, want 1 (cached)", len(grants))
	}
	g := grants[0]
	if diff := cmp.Diff([]string{name}, g.Repositories); diff != "" {
		t.Errorf("token repositories (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(github.TokenPermissions(), g.Permissions); diff != "" {
		t.Errorf("token permissions (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(g.Token, "ghs_") {
		t.Errorf("token %q does not look like an installation token", g.Token[:4])
	}
}

func TestTokenRefreshedAfterExpiry(t *testing.T) {
	t.Parallel()
	f := setup(t)
	if _, err := f.client.GetPullRequest(t.Context(), 7); err != nil {
		t.Fatal(err)
	}
	// The client believes its token is good for an hour; GitHub says 401 (revoked, clock
	// skew): the client mints a new token and the call still succeeds.
	f.fake.ExpireTokens()
	if _, err := f.client.CreateIssueComment(t.Context(), 7, "after refresh"); err != nil {
		t.Fatal(err)
	}
	if n := len(f.fake.Tokens()); n != 2 {
		t.Errorf("%d tokens issued, want 2", n)
	}
	if got := f.fake.IssueComments(owner, name, 7); len(got) != 1 || got[0].Body != "after refresh" {
		t.Errorf("comments after refresh: %+v", got)
	}
}

func TestTokenOtherRepositoryInvisible(t *testing.T) {
	t.Parallel()
	f := setup(t)
	other := githubtest.NewGitRepo(t)
	other.Commit("", "x", map[string]string{"x": "x"})
	f.fake.AddRepo(githubtest.Repository{Owner: owner, Name: "secret", Git: other})
	f.fake.AddPullRequest(owner, "secret", githubtest.PullRequest{Number: 1, BaseSHA: "main", HeadSHA: "main"})
	if _, err := f.client.GetPullRequest(t.Context(), 7); err != nil {
		t.Fatal(err)
	}
	// Reuse the widgets token against the other repository, as a confused deputy would.
	tok := f.fake.Tokens()[0].Token
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, f.fake.URL()+"repos/acme/secret/pulls/1", nil)
	req.Header.Set("Authorization", "token "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("widgets token on acme/secret: status %d, want 404", resp.StatusCode)
	}
}

func TestGetPullRequest(t *testing.T) {
	t.Parallel()
	f := setup(t)
	pr, err := f.client.GetPullRequest(t.Context(), 7)
	if err != nil {
		t.Fatal(err)
	}
	want := github.PullRequest{
		Number: 7, Title: "Say hi", Body: "please review", State: "open", Author: "octocat",
		Head:         github.Branch{SHA: f.head, Ref: "feature", Repo: pr.Base.Repo},
		Base:         github.Branch{SHA: f.base, Ref: "main", Repo: pr.Base.Repo},
		ChangedFiles: 2, Additions: 6, Deletions: 2,
	}
	if diff := cmp.Diff(want, pr); diff != "" {
		t.Errorf("pull request (-want +got):\n%s", diff)
	}
	if pr.Base.Repo.Owner != owner || pr.Base.Repo.Name != name {
		t.Errorf("base repo %+v", pr.Base.Repo)
	}
}

func TestGetPullRequestFork(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.fake.AddPullRequest(owner, name, githubtest.PullRequest{Number: 8, Title: "from a fork", BaseRef: "main", BaseSHA: f.base,
		HeadRef: "patch-1", HeadSHA: f.head, HeadOwner: "mallory", HeadName: "widgets", Author: "mallory"})
	pr, err := f.client.GetPullRequest(t.Context(), 8)
	if err != nil {
		t.Fatal(err)
	}
	if !pr.Fork || pr.Head.Repo.Owner != "mallory" {
		t.Fatalf("fork not detected: %+v", pr)
	}
	// The fork's head is fetched from the base repository, where GitHub keeps it.
	var buf bytes.Buffer
	if _, err := f.client.DownloadTarball(t.Context(), &buf, github.TarballOptions{Ref: pr.Head.SHA}); err != nil {
		t.Fatal(err)
	}
}

func TestGetDiff(t *testing.T) {
	t.Parallel()
	f := setup(t)
	third := f.git.Commit(f.head, "more", map[string]string{"docs/a.md": "a\nb\n"})
	tests := []struct {
		name      string
		opts      github.DiffOptions
		contains  []string
		absent    []string
		truncated bool
	}{
		{name: "pull request", opts: github.DiffOptions{Number: 7},
			contains: []string{"diff --git a/main.go b/main.go", "+\tfmt.Println(\"hi\")", "+severity: none"}},
		{name: "compare incremental", opts: github.DiffOptions{Base: f.head, Head: third},
			contains: []string{"diff --git a/docs/a.md b/docs/a.md", "+b"}, absent: []string{"main.go"}},
		{name: "capped", opts: github.DiffOptions{Number: 7, MaxBytes: 40}, truncated: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := f.client.GetDiff(t.Context(), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if d.Truncated != tc.truncated {
				t.Errorf("truncated = %v, want %v", d.Truncated, tc.truncated)
			}
			if tc.truncated && int64(len(d.Text)) != tc.opts.MaxBytes {
				t.Errorf("kept %d bytes, want %d", len(d.Text), tc.opts.MaxBytes)
			}
			for _, s := range tc.contains {
				if !bytes.Contains(d.Text, []byte(s)) {
					t.Errorf("diff lacks %q:\n%s", s, d.Text)
				}
			}
			for _, s := range tc.absent {
				if bytes.Contains(d.Text, []byte(s)) {
					t.Errorf("diff has %q:\n%s", s, d.Text)
				}
			}
		})
	}
}

func tarNames(t *testing.T, data []byte) map[string]string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range workspacetest.Entries(t, zr) {
		if e.Typeflag == tar.TypeReg {
			out[e.Name] = e.Data
		}
	}
	return out
}

func TestDownloadTarball(t *testing.T) {
	t.Parallel()
	f := setup(t)
	var buf bytes.Buffer
	res, err := f.client.DownloadTarball(t.Context(), &buf, github.TarballOptions{Ref: f.head})
	if err != nil {
		t.Fatal(err)
	}
	if res.Bytes != int64(buf.Len()) {
		t.Errorf("reported %d bytes, wrote %d", res.Bytes, buf.Len())
	}
	files := tarNames(t, buf.Bytes())
	prefix := "acme-widgets-" + f.head[:7] + "/"
	want := map[string]string{prefix + ".aster.yml": "severity: none\n", prefix + "main.go": mainV2, prefix + "docs/a.md": "a\n"}
	if diff := cmp.Diff(want, files); diff != "" {
		t.Errorf("tarball files (-want +got):\n%s", diff)
	}
	// The archive link's own token never reaches logs or the request log as a credential.
	for _, r := range f.fake.Requests() {
		if r.Auth == "link" && r.Status != http.StatusOK {
			t.Errorf("archive download: %+v", r)
		}
	}
}

func TestDownloadTarballCapped(t *testing.T) {
	t.Parallel()
	f := setup(t)
	var buf bytes.Buffer
	_, err := f.client.DownloadTarball(t.Context(), &buf, github.TarballOptions{Ref: f.head, MaxBytes: 64})
	if !errors.Is(err, github.ErrTooLarge) {
		t.Fatalf("got %v, want ErrTooLarge", err)
	}
	if strings.Contains(err.Error(), "token=") {
		t.Errorf("error leaks the archive link: %v", err)
	}
}

func TestDownloadTarballRetriesArchive5xx(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.fake.InjectFault(githubtest.ServerError("codeload", http.StatusBadGateway))
	var buf bytes.Buffer
	if _, err := f.client.DownloadTarball(t.Context(), &buf, github.TarballOptions{Ref: f.head}); err != nil {
		t.Fatal(err)
	}
	if len(tarNames(t, buf.Bytes())) != 3 {
		t.Error("tarball incomplete after retry")
	}
}

func TestGetFile(t *testing.T) {
	t.Parallel()
	f := setup(t)
	tests := []struct {
		name    string
		opts    github.FileOptions
		want    string
		absent  bool
		wantErr error
	}{
		{name: "base revision config", opts: github.FileOptions{Path: ".aster.yml", Ref: f.base}, want: "severity: warning\n"},
		{name: "head revision config", opts: github.FileOptions{Path: ".aster.yml", Ref: f.head}, want: "severity: none\n"},
		{name: "nested", opts: github.FileOptions{Path: "docs/a.md", Ref: f.base}, want: "a\n"},
		{name: "absent", opts: github.FileOptions{Path: "nope.yml", Ref: f.base}, absent: true},
		{name: "directory", opts: github.FileOptions{Path: "docs", Ref: f.base}, wantErr: github.ErrInvalid},
		{name: "too large", opts: github.FileOptions{Path: "main.go", Ref: f.base, MaxBytes: 4}, wantErr: github.ErrTooLarge},
		{name: "traversal", opts: github.FileOptions{Path: "../x", Ref: f.base}, wantErr: github.ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := f.client.GetFile(t.Context(), tc.opts)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if got.Absent != tc.absent || string(got.Content) != tc.want {
				t.Errorf("got absent=%v content=%q, want absent=%v content=%q", got.Absent, got.Content, tc.absent, tc.want)
			}
		})
	}
}

func TestGetPermission(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for user, role := range map[string]string{"ada": "admin", "max": "maintain", "wes": "write", "tri": "triage", "rea": "read"} {
		f.fake.SetPermission(owner, name, user, role)
	}
	tests := []struct {
		user    string
		level   string
		trigger bool
	}{
		{"ada", "admin", true}, {"max", "write", true}, {"wes", "write", true},
		{"tri", "read", false}, {"rea", "read", false}, {"stranger", "none", false},
	}
	for _, tc := range tests {
		t.Run(tc.user, func(t *testing.T) {
			p, err := f.client.GetPermission(t.Context(), tc.user)
			if err != nil {
				t.Fatal(err)
			}
			if p.Level != tc.level || p.CanTrigger() != tc.trigger {
				t.Errorf("got %+v (trigger %v), want level %s trigger %v", p, p.CanTrigger(), tc.level, tc.trigger)
			}
		})
	}
}

func TestListCommentsPaginates(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for i := range 250 {
		f.fake.AddIssueComment(owner, name, 7, "someone", strings.Repeat("x", i%7+1))
		f.fake.AddReviewComment(owner, name, githubtest.Comment{Number: 7, Author: "someone", Body: "c", Path: "main.go", Line: 5})
	}
	ic, err := f.client.ListIssueComments(t.Context(), 7)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := f.client.ListReviewComments(t.Context(), 7)
	if err != nil {
		t.Fatal(err)
	}
	if len(ic) != 250 || len(rc) != 250 {
		t.Fatalf("got %d issue and %d review comments, want 250 each", len(ic), len(rc))
	}
	ids := map[int64]bool{}
	for _, c := range ic {
		ids[c.ID] = true
	}
	if len(ids) != 250 {
		t.Errorf("pages overlap: %d distinct ids", len(ids))
	}
	if pages := f.fake.Calls("issues/list-comments"); pages != 3 {
		t.Errorf("%d page requests, want 3 (100 a page)", pages)
	}
}

func TestCreateReviewIsAlwaysComment(t *testing.T) {
	t.Parallel()
	f := setup(t)
	rev, err := f.client.CreateReview(t.Context(), 7, github.NewReview{
		CommitSHA: f.head, Body: "Looks fine.",
		Comments: []github.InlineComment{
			{Path: "main.go", Line: 6, Body: "prints to stdout"},
			{Path: "main.go", StartLine: 5, Line: 7, Body: "a range"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := f.fake.Reviews(owner, name, 7)
	if len(got) != 1 || got[0].ID != rev.ID {
		t.Fatalf("reviews on the fake: %+v", got)
	}
	if got[0].Event != "COMMENT" || got[0].State != "COMMENTED" || got[0].Author != f.fake.BotLogin() {
		t.Errorf("review %+v, want a COMMENT by the bot", got[0])
	}
	var lines []int
	for _, c := range got[0].Comments {
		lines = append(lines, c.Line)
	}
	if diff := cmp.Diff([]int{6, 7}, lines); diff != "" {
		t.Errorf("inline lines (-want +got):\n%s", diff)
	}
}

func TestCreateReviewOutsideDiffIsInvalid(t *testing.T) {
	t.Parallel()
	f := setup(t)
	_, err := f.client.CreateReview(t.Context(), 7, github.NewReview{CommitSHA: f.head, Body: "x",
		Comments: []github.InlineComment{{Path: "docs/a.md", Line: 1, Body: "not in the diff"}}})
	if !errors.Is(err, github.ErrInvalid) {
		t.Fatalf("got %v, want ErrInvalid (GitHub's 422)", err)
	}
}

func TestIssueCommentCreateEdit(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c, err := f.client.CreateIssueComment(t.Context(), 7, "first")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.client.EditIssueComment(t.Context(), c.ID, "second"); err != nil {
		t.Fatal(err)
	}
	got := f.fake.IssueComments(owner, name, 7)
	if len(got) != 1 || got[0].Body != "second" {
		t.Fatalf("comments %+v", got)
	}
	human := f.fake.AddIssueComment(owner, name, 7, "octocat", "mine")
	if _, err := f.client.EditIssueComment(t.Context(), human, "hijack"); !errors.Is(err, github.ErrForbidden) {
		t.Errorf("editing a human's comment: %v, want ErrForbidden", err)
	}
}

func TestCheckRunCreateUpdate(t *testing.T) {
	t.Parallel()
	f := setup(t)
	run, err := f.client.CreateCheckRun(t.Context(), github.CheckRunOptions{Name: "aster", HeadSHA: f.head, Status: "in_progress",
		StartedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.client.UpdateCheckRun(t.Context(), run.ID, github.CheckRunOptions{Name: "aster", Status: "completed",
		Conclusion: "success", CompletedAt: time.Now(), Title: "No findings", Summary: "ok",
		Annotations: []github.Annotation{{Path: "main.go", StartLine: 6, Level: "notice", Message: "m"}}})
	if err != nil {
		t.Fatal(err)
	}
	runs := f.fake.CheckRuns(owner, name)
	if len(runs) != 1 || runs[0].Conclusion != "success" || len(runs[0].Annotations) != 1 || runs[0].Annotations[0].EndLine != 6 {
		t.Fatalf("check runs %+v", runs)
	}
	if got, err := f.client.GetCheckRun(t.Context(), run.ID); err != nil || got.Status != "completed" || got.Annotations != 1 {
		t.Fatalf("get check run: %+v, %v (want completed with 1 annotation)", got, err)
	}
	if _, err := f.client.GetCheckRun(t.Context(), run.ID+1000); !errors.Is(err, github.ErrNotFound) {
		t.Fatalf("get a check run that does not exist: %v, want ErrNotFound", err)
	}
	tooMany := make([]github.Annotation, 51)
	if _, err := f.client.CreateCheckRun(t.Context(), github.CheckRunOptions{Name: "aster", HeadSHA: f.head, Title: "t", Annotations: tooMany}); !errors.Is(err, github.ErrInvalid) {
		t.Errorf("51 annotations in one request: %v, want ErrInvalid before sending", err)
	}
}

// TestListCheckRuns lists every run of one name on one commit, newest first, over pages,
// with the external id each was created with; runs on other commits or of other names are
// left out.
func TestListCheckRuns(t *testing.T) {
	t.Parallel()
	f := setup(t)
	var want []int64
	for i := range 120 {
		run, err := f.client.CreateCheckRun(t.Context(), github.CheckRunOptions{Name: "aster", HeadSHA: f.head, Status: "in_progress",
			ExternalID: fmt.Sprint(i)})
		if err != nil {
			t.Fatal(err)
		}
		want = append([]int64{run.ID}, want...)
	}
	for _, o := range []github.CheckRunOptions{{Name: "aster", HeadSHA: f.base}, {Name: "other", HeadSHA: f.head}} {
		if _, err := f.client.CreateCheckRun(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}
	runs, err := f.client.ListCheckRuns(t.Context(), f.head, "aster")
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != len(want) {
		t.Fatalf("%d runs, want %d", len(runs), len(want))
	}
	for i, r := range runs {
		if r.ID != want[i] || r.ExternalID != fmt.Sprint(len(want)-1-i) || r.Status != "in_progress" {
			t.Fatalf("run %d: %+v, want id %d, external id %d", i, r, want[i], len(want)-1-i)
		}
	}
	if pages := f.fake.Calls("checks/list-for-ref"); pages != 2 {
		t.Errorf("%d page requests, want 2 (100 a page)", pages)
	}
}

func TestBotLogin(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for range 2 {
		login, err := f.app.BotLogin(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if login != f.fake.BotLogin() {
			t.Errorf("bot login %q, want %q", login, f.fake.BotLogin())
		}
	}
	if n := f.fake.Calls("apps/get-authenticated"); n != 1 {
		t.Errorf("GET /app called %d times, want 1 (cached)", n)
	}
}

func TestEveryRequestWasAnOperation(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	if _, err := f.client.GetPullRequest(ctx, 7); err != nil {
		t.Fatal(err)
	}
	if _, err := f.client.GetDiff(ctx, github.DiffOptions{Number: 7}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.client.GetFile(ctx, github.FileOptions{Path: ".aster.yml", Ref: f.base}); err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, r := range f.fake.Requests() {
		ops = append(ops, r.Operation)
	}
	sort.Strings(ops)
	want := []string{"apps/create-installation-access-token", "pulls/get", "pulls/get", "repos/get-content"}
	if diff := cmp.Diff(want, ops); diff != "" {
		t.Errorf("operations (-want +got):\n%s", diff)
	}
}
