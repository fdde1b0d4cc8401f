package github_test

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/github"
	"github.com/asterhq/aster/internal/github/githubtest"
)

// TestSecretsNeverInLogsOrErrors drives every client operation through successes and failures
// (rate limits, 5xx past the budget, 404, 403, oversized archives, a refused token exchange, a
// bad key, rejected webhooks) and greps everything logged and every error string for
// installation tokens, PEM keys, archive-link tokens and the webhook secret.
func TestSecretsNeverInLogsOrErrors(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	var errs []string
	note := func(_ any, err error) {
		if err != nil {
			errs = append(errs, err.Error())
		}
	}

	note(f.client.GetPullRequest(ctx, 7))
	f.fake.InjectFault(githubtest.Fault{Operation: "pulls/get", Status: http.StatusBadGateway, Times: 5})
	note(f.client.GetPullRequest(ctx, 7))
	note(f.client.GetPullRequest(ctx, 404))
	f.fake.InjectFault(githubtest.Forbidden("pulls/create-review"))
	note(f.client.CreateReview(ctx, 7, github.NewReview{Body: "x"}))
	var buf bytes.Buffer
	note(f.client.DownloadTarball(ctx, &buf, github.TarballOptions{Ref: f.head, MaxBytes: 10}))
	f.fake.InjectFault(githubtest.Fault{Operation: "codeload", Status: http.StatusInternalServerError, Times: 10})
	note(f.client.DownloadTarball(ctx, &buf, github.TarballOptions{Ref: f.head}))
	note(f.client.EditIssueComment(ctx, f.fake.AddIssueComment(owner, name, 7, "octocat", "x"), "y"))
	note(f.client.CreateReview(ctx, 7, github.NewReview{Body: "x", Comments: []github.InlineComment{{Path: "nope", Line: 1, Body: "x"}}}))
	// Last: a long secondary limit blocks this client's later calls, as GitHub means it to.
	f.fake.InjectFault(githubtest.SecondaryRateLimit("repos/get-content", time.Hour))
	note(f.client.GetFile(ctx, github.FileOptions{Path: ".aster.yml", Ref: f.base}))

	// A client whose token exchange fails.
	f.fake.InjectFault(githubtest.Fault{Operation: "apps/create-installation-access-token", Status: http.StatusUnauthorized})
	c2, err := f.app.Client(github.ClientOptions{InstallationID: f.fake.InstallationID(), Owner: owner, Repo: name})
	if err != nil {
		t.Fatal(err)
	}
	note(c2.GetPullRequest(ctx, 7))
	// An App with a damaged key.
	pemKey := f.fake.PrivateKeyPEM()
	broken := bytes.Replace(pemKey, []byte("\n"), []byte("\n!"), 3)
	note(github.NewApp(github.AppOptions{AppID: 1, PrivateKey: broken}))

	// Rejected and accepted webhooks, logged.
	whLogs := &syncBuffer{}
	h, err := github.NewWebhookHandler(github.WebhookOptions{Secret: secret, Sink: &recordingSink{err: errors.New("store down")},
		Logger: slog.New(slog.NewTextHandler(whLogs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	body := withInstallation(t, exampleFor(t, "pull_request", "opened"), 1)
	r := githubtest.DeliveryRequest([]byte("wrong"), "pull_request", "d1", body)
	serve(h, r)
	serve(h, githubtest.DeliveryRequest(secret, "pull_request", "d2", body))

	if len(errs) < 10 {
		t.Fatalf("only %d errors collected: the failure paths did not run", len(errs))
	}
	haystack := strings.Join(errs, "\n") + "\n" + f.logs.String() + "\n" + whLogs.String()
	needles := []string{"ghs_", "ghp_", "-----BEGIN", "PRIVATE KEY", "token=", string(secret)}
	for _, g := range f.fake.Tokens() {
		needles = append(needles, g.Token)
	}
	needles = append(needles, strings.Split(string(pemKey), "\n")[1:4]...)
	for _, n := range needles {
		if n != "" && strings.Contains(haystack, n) {
			t.Errorf("found %q in logs or errors", n)
		}
	}
	if !strings.Contains(f.logs.String(), "github retry") {
		t.Error("retries were not logged: the test did not see the log path")
	}
	t.Logf("%d errors, %d bytes of logs checked:\n%s", len(errs), len(haystack), strings.Join(errs, "\n"))
}

func TestRedactionOfTokenShapedText(t *testing.T) {
	t.Parallel()
	f := setup(t)
	// GitHub echoing a token in an error message must not carry it into ours.
	f.fake.InjectFault(githubtest.Fault{Operation: "pulls/get", Status: http.StatusUnprocessableEntity})
	_, err := f.client.GetPullRequest(t.Context(), 7)
	var apiErr *github.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %v", err)
	}
	apiErr.Message = "bad token ghs_abcdefghijklmnopqrstuvwxyz0123456789 and -----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY----- url?token=abc"
	msg := apiErr.Error()
	for _, n := range []string{"ghs_", "BEGIN", "MIIE", "token=abc"} {
		if strings.Contains(msg, n) {
			t.Errorf("%q survives in %q", n, msg)
		}
	}
}
