package github_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/github"
	"github.com/asterhq/aster/internal/github/githubtest"
)

func countOp(f *fixture, op string) int {
	n := 0
	for _, r := range f.fake.Requests() {
		if r.Operation == op {
			n++
		}
	}
	return n
}

func TestRetries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		faults   []githubtest.Fault
		wantErr  error
		requests int           // pulls/get requests the fake saw
		minWait  time.Duration // the client must have waited at least this long
	}{
		{name: "secondary rate limit 403 Retry-After", faults: []githubtest.Fault{githubtest.SecondaryRateLimit("pulls/get", 0)}, requests: 2},
		{name: "secondary rate limit 429 Retry-After 1s", faults: []githubtest.Fault{githubtest.TooManyRequests("pulls/get", time.Second)},
			requests: 2, minWait: time.Second},
		{name: "primary rate limit reset", faults: []githubtest.Fault{githubtest.PrimaryRateLimit("pulls/get", time.Now().Add(time.Second))},
			requests: 2, minWait: 100 * time.Millisecond},
		{name: "5xx once", faults: []githubtest.Fault{githubtest.ServerError("pulls/get", http.StatusInternalServerError)}, requests: 2},
		{name: "5xx then 429 then 502", faults: []githubtest.Fault{
			githubtest.ServerError("pulls/get", http.StatusServiceUnavailable),
			githubtest.TooManyRequests("pulls/get", 0),
			githubtest.ServerError("pulls/get", http.StatusBadGateway)}, requests: 4},
		{name: "5xx past the budget", faults: []githubtest.Fault{{Operation: "pulls/get", Status: http.StatusBadGateway, Times: 100}},
			wantErr: github.ErrUnavailable, requests: 5},
		{name: "404 reported", faults: []githubtest.Fault{githubtest.NotFound("pulls/get")}, wantErr: github.ErrNotFound, requests: 1},
		{name: "403 without rate-limit signals reported", faults: []githubtest.Fault{githubtest.Forbidden("pulls/get")},
			wantErr: github.ErrForbidden, requests: 1},
		{name: "rate limit longer than the budget returned", faults: []githubtest.Fault{githubtest.SecondaryRateLimit("pulls/get", time.Hour)},
			wantErr: github.ErrRateLimited, requests: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			for _, fl := range tc.faults {
				f.fake.InjectFault(fl)
			}
			start := time.Now()
			_, err := f.client.GetPullRequest(t.Context(), 7)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if got := countOp(f, "pulls/get"); got != tc.requests {
				t.Errorf("%d requests, want %d", got, tc.requests)
			}
			if waited := time.Since(start); waited < tc.minWait {
				t.Errorf("returned after %v, before the %v GitHub asked for", waited, tc.minWait)
			}
		})
	}
}

func TestRateLimitErrorCarriesRetryAfter(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.fake.InjectFault(githubtest.SecondaryRateLimit("pulls/create-review", 10*time.Minute))
	_, err := f.client.CreateReview(t.Context(), 7, github.NewReview{CommitSHA: f.head, Body: "x"})
	var apiErr *github.APIError
	if !errors.As(err, &apiErr) || apiErr.RetryAfter < 9*time.Minute || apiErr.Status != http.StatusForbidden {
		t.Fatalf("got %#v, want an APIError with RetryAfter ≈ 10m", err)
	}
	if len(f.fake.Reviews(owner, name, 7)) != 0 {
		t.Error("a rate-limited review was stored")
	}
}

func TestRetryWaitStopsOnCancel(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.fake.InjectFault(githubtest.TooManyRequests("pulls/get", 60*time.Second))
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := f.client.GetPullRequest(ctx, 7)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the context's deadline", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v to notice the cancel", d)
	}
}

func TestTokenExchangeFailureReported(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.fake.InjectFault(githubtest.Fault{Operation: "apps/create-installation-access-token", Status: http.StatusForbidden})
	_, err := f.client.GetPullRequest(t.Context(), 7)
	if !errors.Is(err, github.ErrForbidden) {
		t.Fatalf("err = %v, want ErrForbidden from the token exchange", err)
	}
	if countOp(f, "pulls/get") != 0 {
		t.Error("an API call went out without a token")
	}
}

func TestTokenExchangeRetries5xx(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.fake.InjectFault(githubtest.ServerError("apps/create-installation-access-token", http.StatusBadGateway))
	if _, err := f.client.GetPullRequest(t.Context(), 7); err != nil {
		t.Fatal(err)
	}
}

// TestCreatesAreNotResentAfter5xx: a 5xx on a create may come after GitHub stored it, so the
// client reports it instead of posting a second review; a rate limit is still waited out.
func TestCreatesAreNotResentAfter5xx(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.fake.InjectFault(githubtest.ServerError("pulls/create-review", http.StatusBadGateway))
	_, err := f.client.CreateReview(t.Context(), 7, github.NewReview{CommitSHA: f.head, Body: "x"})
	if !errors.Is(err, github.ErrUnavailable) || countOp(f, "pulls/create-review") != 1 {
		t.Fatalf("err = %v after %d requests, want ErrUnavailable after 1", err, countOp(f, "pulls/create-review"))
	}
	f.fake.InjectFault(githubtest.SecondaryRateLimit("pulls/create-review", 0))
	if _, err := f.client.CreateReview(t.Context(), 7, github.NewReview{CommitSHA: f.head, Body: "x"}); err != nil {
		t.Fatalf("rate-limited create not retried: %v", err)
	}
	if n := len(f.fake.Reviews(owner, name, 7)); n != 1 {
		t.Errorf("%d reviews stored, want 1", n)
	}
}

// TestCheckRunWritesThatAddAreNotResent: creating a check run, and an update that adds
// annotations (GitHub appends them), are not sent again after a 5xx; an update without
// annotations, which GitHub applies the same way twice, is.
func TestCheckRunWritesThatAddAreNotResent(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.fake.InjectFault(githubtest.ServerError("checks/create", http.StatusBadGateway))
	opts := github.CheckRunOptions{Name: "aster", HeadSHA: f.head, Status: "in_progress"}
	if _, err := f.client.CreateCheckRun(t.Context(), opts); !errors.Is(err, github.ErrUnavailable) || countOp(f, "checks/create") != 1 {
		t.Fatalf("create: err = %v after %d requests, want ErrUnavailable after 1", err, countOp(f, "checks/create"))
	}
	run, err := f.client.CreateCheckRun(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	add := github.CheckRunOptions{Name: "aster", Title: "t", Summary: "s",
		Annotations: []github.Annotation{{Path: "main.go", StartLine: 6, Level: "notice", Message: "m"}}}
	f.fake.InjectFault(githubtest.ServerError("checks/update", http.StatusBadGateway))
	if _, err := f.client.UpdateCheckRun(t.Context(), run.ID, add); !errors.Is(err, github.ErrUnavailable) || countOp(f, "checks/update") != 1 {
		t.Fatalf("update with annotations: err = %v after %d requests, want ErrUnavailable after 1", err, countOp(f, "checks/update"))
	}
	f.fake.InjectFault(githubtest.ServerError("checks/update", http.StatusBadGateway))
	done := github.CheckRunOptions{Name: "aster", Status: "completed", Conclusion: "success"}
	if _, err := f.client.UpdateCheckRun(t.Context(), run.ID, done); err != nil || countOp(f, "checks/update") != 3 {
		t.Fatalf("update without annotations: err = %v after %d requests in all, want success after 3", err, countOp(f, "checks/update"))
	}
}
