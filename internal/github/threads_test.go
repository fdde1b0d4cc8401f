package github_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/github"
	"github.com/asterhq/aster/internal/github/githubtest"
	"github.com/asterhq/aster/internal/publish"
)

// TestReviewThreads: the client reads every thread through GraphQL (past one page), names
// the App's bot as REST does, replies in a thread and resolves it; the fake validates each
// document against GitHub's published schema.
func TestReviewThreads(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	bot := f.fake.BotLogin()
	id := finding.Fingerprint("finding")
	res, err := github.PostReview(ctx, f.client, github.PostReviewOptions{Number: 7, CommitSHA: f.head, Body: "Aster review",
		Comments: []publish.Comment{{Path: "main.go", Line: 5, Body: "check this", ID: id}}, BotLogin: bot})
	if err != nil || len(res.Plan.Inline) != 1 {
		t.Fatalf("post: %v, %+v", err, res.Plan)
	}
	// 120 human threads: the listing needs two pages of 100.
	for i := range 120 {
		f.fake.AddReviewComment(owner, name, githubtest.Comment{Number: 7, Author: "octocat", Path: "main.go", Line: 5, Body: fmt.Sprint("note ", i)})
	}
	threads, err := f.client.ListReviewThreads(ctx, 7)
	if err != nil {
		t.Fatal(err)
	}
	if len(threads) != 121 {
		t.Fatalf("%d threads, want 121", len(threads))
	}
	ours := threads[0]
	if ours.Resolved || len(ours.Comments) != 1 || ours.Comments[0].Author != bot || !slices.Equal(publish.Markers(ours.Comments[0].Body), []string{id}) {
		t.Fatalf("Aster's thread: %+v", ours)
	}
	if threads[1].Comments[0].Author != "octocat" {
		t.Errorf("human thread author %q", threads[1].Comments[0].Author)
	}
	if _, err := f.client.ReplyToReviewComment(ctx, 7, ours.Comments[0].ID, "fixed"); err != nil {
		t.Fatal(err)
	}
	if err := f.client.ResolveReviewThread(ctx, ours.ID); err != nil {
		t.Fatal(err)
	}
	if err := f.client.ResolveReviewThread(ctx, ours.ID); err != nil {
		t.Errorf("resolving a resolved thread: %v", err)
	}
	threads, err = f.client.ListReviewThreads(ctx, 7)
	if err != nil {
		t.Fatal(err)
	}
	if got := threads[0]; !got.Resolved || got.ResolvedBy != bot || len(got.Comments) != 2 || got.Comments[1].Body != "fixed" || got.Comments[1].Author != bot {
		t.Errorf("after reply and resolve: %+v", got)
	}
	if err := f.client.ResolveReviewThread(ctx, "PRRT_nope"); !errors.Is(err, github.ErrNotFound) {
		t.Errorf("unknown thread: %v, want ErrNotFound", err)
	}
}
