package review

import (
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/depcache"
)

// Issue 35: `aster review` caches a branch's install for that branch only;
// the head is in the default scope only when it is the default branch's tip
// (origin/HEAD's branch, else main), so its content is that branch's.
func TestFromGitCacheScope(t *testing.T) {
	r := newGitRepo(t, "scopes")
	r.commit("one", map[string]string{"go.mod": "module m\n"})
	r.commit("two", map[string]string{"main.go": "package main\n"})
	r.branch("feature")
	r.commit("feature", map[string]string{"scripts/install.sh": "echo evil\n"})
	gitRun(t, r.dir, "branch", "empty", "main") // a branch with no commit of its own
	scope := func(base, head string) string {
		t.Helper()
		ch, err := FromGit(t.Context(), GitOptions{Dir: r.dir, Base: base, Head: head})
		if err != nil {
			t.Fatal(err)
		}
		return ch.CacheScope
	}
	featureSHA, err := gitOutput(t.Context(), r.dir, 256, "rev-parse", "feature")
	if err != nil {
		t.Fatal(err)
	}
	featureSHA = strings.TrimSpace(featureSHA)
	for _, c := range []struct{ base, head, want string }{
		{"main", "feature", "ref:refs/heads/feature"},
		{"main", "", "ref:refs/heads/feature"}, // HEAD, checked out on feature
		{"main~1", "main", depcache.DefaultScope},
		{"main~1", "empty", depcache.DefaultScope}, // the default branch's content
		{"main", featureSHA, "rev:" + featureSHA},
	} {
		if got := scope(c.base, c.head); got != c.want {
			t.Errorf("head %q: scope %q, want %q", c.head, got, c.want)
		}
	}
	// origin/HEAD names the default branch when there is one.
	gitRun(t, r.dir, "update-ref", "refs/remotes/origin/trunk", "feature")
	gitRun(t, r.dir, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/trunk")
	if got := scope("main", "feature"); got != depcache.DefaultScope {
		t.Errorf("the tip of origin's default branch: scope %q", got)
	}
	if got := scope("main~1", "main"); got != "ref:refs/heads/main" {
		t.Errorf("main when origin's default branch is trunk: scope %q", got)
	}
}
