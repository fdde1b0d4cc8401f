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

// TestResolveThreadsOnce: each resolution's thread gets one reply and is resolved, however
// often it runs and wherever an earlier run stopped; a thread a person opened with a copied
// marker, or resolved before Aster did, is left alone.
func TestResolveThreadsOnce(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	bot := f.fake.BotLogin()
	ids := []string{finding.Fingerprint("a"), finding.Fingerprint("b"), finding.Fingerprint("c")}
	var cs []publish.Comment
	for i, id := range ids {
		cs = append(cs, publish.Comment{Path: "main.go", Line: 5 + i, Body: "finding " + id, ID: id})
	}
	if _, err := github.PostReview(ctx, f.client, github.PostReviewOptions{Number: 7, CommitSHA: f.head, Body: "Aster", Comments: cs, BotLogin: bot}); err != nil {
		t.Fatal(err)
	}
	// mallory opens a thread carrying the marker of a: it is not Aster's to resolve.
	forged := f.fake.AddReviewComment(owner, name, githubtest.Comment{Number: 7, Author: "mallory", Path: "main.go", Line: 5,
		Body: publish.WithMarker("mine", ids[0])})
	threads := f.fake.Threads(owner, name, 7)
	f.fake.ResolveThread(owner, name, threads[2].Comments[0].ID, "octocat") // c: a person resolved it
	var rs []publish.Resolution
	for _, id := range ids {
		rs = append(rs, publish.Resolution{ID: id, Reply: publish.WithResolvedMarker("fixed in abc", id)})
	}
	rs = append(rs, publish.Resolution{ID: finding.Fingerprint("never posted"), Reply: "x"})
	// An earlier run replied in b's thread and stopped before resolving it.
	if _, err := f.client.ReplyToReviewComment(ctx, 7, threads[1].Comments[0].ID, rs[1].Reply); err != nil {
		t.Fatal(err)
	}
	opts := github.ResolveOptions{Number: 7, Resolutions: rs, BotLogin: bot}
	res, err := github.ResolveThreads(ctx, f.client, opts)
	if err != nil {
		t.Fatal(err)
	}
	if want := (github.ResolveResult{Replied: 1, Resolved: 2, NoThread: 1, LeftToHuman: 1}); res != want {
		t.Errorf("first run %+v, want %+v", res, want)
	}
	if res, err = github.ResolveThreads(ctx, f.client, opts); err != nil || res != (github.ResolveResult{NoThread: 1, LeftToHuman: 1}) {
		t.Errorf("second run %+v, %v: want nothing done", res, err)
	}
	for i, th := range f.fake.Threads(owner, name, 7) {
		switch {
		case i < 2 && (!th.Resolved || len(th.Comments) != 2):
			t.Errorf("thread %d: %+v, want resolved with one reply", i, th)
		case i == 2 && (th.ResolvedBy != "octocat" || len(th.Comments) != 1):
			t.Errorf("thread a person resolved: %+v", th)
		case th.Comments[0].ID == forged && (th.Resolved || len(th.Comments) != 1):
			t.Errorf("mallory's thread touched: %+v", th)
		}
	}
}
