package cli

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/store"
)

func reviewRequest(delivery string, pr int) store.ReviewRequest {
	return store.ReviewRequest{
		Delivery:       store.Delivery{ID: delivery, Event: "pull_request", Action: "opened", Repo: "acme/widgets", Number: pr, HeadSHA: "abc"},
		Pull:           store.PullKey{Owner: "acme", Repo: "widgets", Number: pr},
		InstallationID: 99, HeadSHA: "abc",
	}
}

// aster app history lists, above the finished reviews, the jobs still queued and the ones
// waiting for a retry with their last error — on the real store, in SQLite.
func TestAppHistoryShowsQueuedAndRetrying(t *testing.T) {
	db := filepath.Join(t.TempDir(), "aster.db")
	ctx := t.Context()
	st, err := store.Open(ctx, store.Options{Path: db, Queue: store.QueueOptions{
		ClientID: "history-test", RetryBase: time.Hour, RetryMax: time.Hour, PollInterval: 20 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.RequestReview(ctx, reviewRequest("d-1", 1)); err != nil {
		t.Fatal(err)
	}
	failed := make(chan struct{}, 1)
	if err := st.Start(ctx, func(ctx context.Context, j *store.Job) error {
		defer func() { failed <- struct{}{} }()
		return errors.New("github create check run: 502 Bad Gateway")
	}); err != nil {
		t.Fatal(err)
	}
	<-failed
	// The attempt is recorded once the queue has stopped: Stop waits for the running job.
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := st.Stop(sctx); err != nil {
		t.Fatal(err)
	}
	if _, err := st.RequestReview(ctx, reviewRequest("d-2", 2)); err != nil {
		t.Fatal(err)
	}
	st.Close()

	code, out, stderr := run(t, "app", "history", "--db", db)
	if code != 0 {
		t.Fatalf("history: %d %q", code, stderr)
	}
	var retrying, queued string
	for line := range strings.Lines(out) {
		switch {
		case strings.Contains(line, "acme/widgets#1"):
			retrying = line
		case strings.Contains(line, "acme/widgets#2"):
			queued = line
		}
	}
	if !strings.Contains(retrying, "retrying") || !strings.Contains(retrying, "1/8") || !strings.Contains(retrying, "502 Bad Gateway") {
		t.Errorf("retrying job line %q in:\n%s", retrying, out)
	}
	if !strings.Contains(queued, "queued") || !strings.Contains(queued, "0/8") {
		t.Errorf("queued job line %q in:\n%s", queued, out)
	}
	if !strings.Contains(out, "no reviews recorded") {
		t.Errorf("history should still say no review finished:\n%s", out)
	}

	code, out, _ = run(t, "app", "history", "--db", db, "--pending", "--json", "--pr", "1", "--repo", "acme/widgets")
	var jobs []store.PendingJob
	for line := range strings.Lines(out) {
		var j store.PendingJob
		if err := json.Unmarshal([]byte(line), &j); err != nil {
			t.Fatalf("--pending --json line %q: %v", line, err)
		}
		jobs = append(jobs, j)
	}
	if code != 0 || len(jobs) != 1 || jobs[0].State != "retryable" || jobs[0].Attempt != 1 || jobs[0].LastError != "github create check run: 502 Bad Gateway" ||
		jobs[0].ScheduledAt.Before(time.Now().Add(30*time.Minute)) {
		t.Fatalf("--pending --json: %d %+v", code, jobs)
	}
}

// --log-format picks JSON or text logs; anything else is refused before a command runs.
func TestLogFormatFlag(t *testing.T) {
	code, _, stderr := run(t, "--log-format", "jsno", "app", "history", "--db", filepath.Join(t.TempDir(), "x.db"))
	if code != ExitUsage || !strings.Contains(stderr, "--log-format") || !strings.Contains(stderr, `did you mean "json"?`) {
		t.Fatalf("--log-format jsno: %d %q", code, stderr)
	}
}
