package app

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/asterhq/aster/internal/review"
	"github.com/asterhq/aster/internal/workspace"
	"github.com/asterhq/aster/internal/workspace/workspacetest"
)

// recordTests is a review.TestRunner that keeps the change it was given.
type recordTests struct{ got *review.Change }

func (r *recordTests) RunTests(_ context.Context, req review.TestRequest) review.TestsReport {
	r.got = req.Change
	return review.TestsReport{Status: review.TestsSkipped, Reason: "recorded", Command: []string{}}
}

// Issue 35: the App's test step caches per pull request: the scope is the
// pull request's number, within the repository (a fork's author apart).
func TestPipelineCacheScopeIsThePullRequest(t *testing.T) {
	snap := workspacetest.Tar(t, map[string]string{"main.go": "package main\n"}, workspace.Caps{})
	for _, c := range []struct {
		fork        bool
		number      int
		repo, scope string
	}{
		{false, 12, "github:acme/widgets", "pr:12"},
		{true, 13, "github:acme/widgets#fork:stranger", "pr:13"},
	} {
		rec := &recordTests{}
		p := NewPipelineReviewer(PipelineOptions{Tests: rec, TempDir: t.TempDir()})
		in := ReviewInput{Repository: "acme/widgets", Number: c.number, Author: "stranger", Fork: c.fork, Tests: true,
			Base:         review.Revision{Ref: "main", SHA: "1111111111111111111111111111111111111111"},
			Head:         review.Revision{Ref: "patch", SHA: "2222222222222222222222222222222222222222"},
			Diff:         []byte("diff --git a/main.go b/main.go\n--- a/main.go\n+++ b/main.go\n@@ -0,0 +1 @@\n+package main\n"),
			OpenSnapshot: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(snap)), nil }}
		if _, err := p.Review(t.Context(), in); err != nil {
			t.Fatal(err)
		}
		if rec.got == nil || rec.got.CacheID != c.repo || rec.got.CacheScope != c.scope {
			t.Fatalf("fork=%v: change %+v, want cache %s scope %s", c.fork, rec.got, c.repo, c.scope)
		}
	}
}
