package github_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/github"
	"github.com/asterhq/aster/internal/github/githubtest"
	"github.com/asterhq/aster/internal/publish"
)

// findings makes n comments on lines of main.go that are in PR #7's diff.
func findings(from, n int) []publish.Comment {
	out := make([]publish.Comment, 0, n)
	for i := from; i < from+n; i++ {
		out = append(out, publish.Comment{Path: "main.go", Line: i%7 + 1, Body: fmt.Sprintf("finding %d", i), ID: finding.Fingerprint("main.go", fmt.Sprintf("finding %d", i))})
	}
	return out
}

func TestPostReviewIdempotentAcrossRuns(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	bot := f.fake.BotLogin()
	post := func(cs []publish.Comment) github.PostReviewResult {
		t.Helper()
		res, err := github.PostReview(ctx, f.client, github.PostReviewOptions{
			Number: 7, CommitSHA: f.head, Body: "Aster review", Comments: cs, BotLogin: bot,
		})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	// A human pastes a marker to silence finding 39: only the bot's own markers count.
	f.fake.AddReviewComment(owner, name, githubtest.Comment{Number: 7, Author: "mallory", Path: "main.go", Line: 1,
		Body: publish.WithMarker("lol", finding.Fingerprint("main.go", "finding 39"))})

	first := post(findings(0, 40))
	if !first.Posted || len(first.Plan.Inline) != 30 || len(first.Plan.Folded) != 10 {
		t.Fatalf("first run: posted=%v inline=%d folded=%d", first.Posted, len(first.Plan.Inline), len(first.Plan.Folded))
	}
	second := post(findings(0, 40))
	if second.Posted || len(second.Plan.Skipped) != 40 {
		t.Fatalf("second run repeated itself: posted=%v skipped=%d", second.Posted, len(second.Plan.Skipped))
	}
	third := post(findings(0, 42))
	if !third.Posted || len(third.Plan.Inline) != 2 || len(third.Plan.Skipped) != 40 {
		t.Fatalf("third run: posted=%v inline=%d skipped=%d", third.Posted, len(third.Plan.Inline), len(third.Plan.Skipped))
	}

	reviews := f.fake.Reviews(owner, name, 7)
	if len(reviews) != 2 {
		t.Fatalf("%d reviews, want 2", len(reviews))
	}
	seen := map[string]int{}
	for _, r := range reviews {
		if r.Event != "COMMENT" {
			t.Errorf("review event %q", r.Event)
		}
		for _, c := range r.Comments {
			seen[strings.SplitN(c.Body, "\n", 2)[0]]++
		}
		for _, line := range strings.Split(r.Body, "\n") {
			if strings.HasPrefix(line, "- `main.go") {
				seen[strings.SplitN(strings.SplitN(line, ": ", 2)[1], " <!--", 2)[0]]++
			}
		}
	}
	for i := range 42 {
		if n := seen[fmt.Sprintf("finding %d", i)]; n != 1 {
			t.Errorf("finding %d posted %d times", i, n)
		}
	}
}

func TestPostReviewEmptyBodyGetsOne(t *testing.T) {
	t.Parallel()
	f := setup(t)
	res, err := github.PostReview(t.Context(), f.client, github.PostReviewOptions{Number: 7, CommitSHA: f.head, Comments: findings(0, 1)})
	if err != nil || !res.Posted {
		t.Fatalf("posted=%v err=%v", res.Posted, err)
	}
}

func TestUpsertSummary(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	bot := f.fake.BotLogin()
	forged := f.fake.AddIssueComment(owner, name, 7, "mallory", publish.WithSummaryMarker("fake summary"))

	steps := []struct {
		body string
		want github.SummaryResult
	}{
		{"reviewed up to abc", github.SummaryResult{Created: true}},
		{"reviewed up to def", github.SummaryResult{}},
		{"reviewed up to def", github.SummaryResult{Unchanged: true}},
	}
	var id int64
	for i, st := range steps {
		res, err := github.UpsertSummary(ctx, f.client, github.SummaryOptions{Number: 7, Body: st.body, BotLogin: bot})
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if i == 0 {
			id = res.CommentID
		}
		st.want.CommentID = id
		if diff := cmp.Diff(st.want, res); diff != "" {
			t.Errorf("step %d (-want +got):\n%s", i, diff)
		}
	}
	var bodies []string
	for _, c := range f.fake.IssueComments(owner, name, 7) {
		if c.ID == forged {
			if c.Body != publish.WithSummaryMarker("fake summary") {
				t.Error("a human's comment was edited")
			}
			continue
		}
		bodies = append(bodies, c.Body)
	}
	if diff := cmp.Diff([]string{publish.WithSummaryMarker("reviewed up to def")}, bodies); diff != "" {
		t.Errorf("summary comments (-want +got):\n%s", diff)
	}
}

func TestPublishCheckRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		n        int
		requests int
	}{
		{"no annotations", 0, 1},
		{"one batch", 50, 1},
		{"three batches", 120, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			anns := make([]github.Annotation, tc.n)
			for i := range anns {
				anns[i] = github.Annotation{Path: "main.go", StartLine: i%7 + 1, Level: "warning", Title: "rule", Message: fmt.Sprintf("m%d", i)}
			}
			run, err := github.PublishCheckRun(t.Context(), f.client, github.CheckRunOptions{
				Name: "aster", HeadSHA: f.head, Status: "completed", Conclusion: "failure", CompletedAt: time.Now(),
				Title: "3 findings", Summary: "see annotations", Annotations: anns,
			})
			if err != nil {
				t.Fatal(err)
			}
			runs := f.fake.CheckRuns(owner, name)
			if len(runs) != 1 || runs[0].ID != run.ID {
				t.Fatalf("check runs %+v", runs)
			}
			got := runs[0]
			if got.Requests != tc.requests || len(got.Annotations) != tc.n || got.Conclusion != "failure" || got.Status != "completed" {
				t.Errorf("run: requests=%d annotations=%d status=%s conclusion=%s", got.Requests, len(got.Annotations), got.Status, got.Conclusion)
			}
			for i, a := range got.Annotations {
				if a.Message != fmt.Sprintf("m%d", i) {
					t.Fatalf("annotation %d is %q: order lost", i, a.Message)
				}
			}
		})
	}
}

func TestAnnotationBatches(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 49, 50, 51, 100, 101, 237} {
		anns := make([]github.Annotation, n)
		for i := range anns {
			anns[i].StartLine = i
		}
		batches := github.AnnotationBatches(anns)
		total, next := 0, 0
		for _, b := range batches {
			if len(b) == 0 || len(b) > github.MaxAnnotationsPerRequest {
				t.Errorf("n=%d: batch of %d", n, len(b))
			}
			for _, a := range b {
				if a.StartLine != next {
					t.Fatalf("n=%d: order broken at %d", n, next)
				}
				next++
			}
			total += len(b)
		}
		if want := (n + 49) / 50; len(batches) != want || total != n {
			t.Errorf("n=%d: %d batches with %d annotations, want %d batches", n, len(batches), total, want)
		}
	}
}
