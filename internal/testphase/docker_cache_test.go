package testphase

import (
	"context"
	"strings"
	"testing"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/depcache"
	"github.com/asterhq/aster/internal/egress"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
	"github.com/asterhq/aster/internal/testrun"
)

// Issue 35, through the real test phase on the engine: a setup script
// (.aster.yml's tests.setup) leaves a marker naming its tree and a nonce of
// its own run, the tests print it, so each run shows whose install its
// dependencies come from.
//   - two branches of one repository that differ only in scripts/install.sh
//     never get each other's dependencies;
//   - an entry written for a pull request is never restored for the default
//     branch or another pull request, only for itself;
//   - an entry written from the default branch is reused by a pull request.
func TestDockerCacheScopes(t *testing.T) {
	mgr := engine(t)
	requireRelay(t, mgr)
	cache, err := depcache.Open(depcache.Options{Dir: t.TempDir(), MaxBytes: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	// The install reaches nothing; the allow list only lets it run.
	r := &Runner{Policy: &egress.Policy{Allow: []egress.Rule{{Host: "registry.invalid", Port: 443}}}, Cache: cache,
		Digest: func(ctx context.Context, image string) (string, error) {
			info, err := mgr.Runtime().ImageInfo(ctx, image)
			return info.Digest, err
		}}
	plan, err := testrun.Custom([]string{"cat", ".aster/marker"}, testrun.FormatNone, "")
	if err != nil {
		t.Fatal(err)
	}
	tree := func(who string) map[string]string {
		return map[string]string{
			"package.json":       `{"name":"p","private":true}`,
			"scripts/install.sh": "mkdir -p .aster && printf '%s %s' " + who + " \"$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \\n')\" > .aster/marker\n",
			"README.md":          "the same on every branch",
		}
	}
	// run tests tree in scope and returns what the tests printed and the cache's answer.
	run := func(who, scope string) (string, string) {
		t.Helper()
		in, err := testrun.Setup([]string{"sh", "scripts/install.sh"}, []string{"package.json", "scripts/install.sh", "README.md"})
		if err != nil {
			t.Fatal(err)
		}
		job := Job{Image: sandboxtest.Image(), Plan: plan, Install: &in, Limits: limits(), Open: packed(t, tree(who)),
			Env: map[string]string{"HOME": "/tmp"}, Repo: "github:org/widgets", Scope: scope}
		out, err := r.Run(t.Context(), job, runWith(mgr, nil))
		if err != nil {
			t.Fatal(err)
		}
		if out.Phase != PhaseTest || out.Result.Status != sandbox.StatusOK {
			t.Fatalf("%s in %s: phase %s, %s, install %+v\n%s", who, scope, out.Phase, out.Result.Status, out.Install, out.Result.Stderr.Data)
		}
		marker := string(out.Result.Stdout.Data)
		if !strings.HasPrefix(marker, who+" ") && out.Install.Cache == api.CacheMiss {
			t.Fatalf("%s in %s: the install left %q", who, scope, marker)
		}
		t.Logf("%-6s %-22s cache %-4s marker %q", who, scope, out.Install.Cache, marker)
		return marker, out.Install.Cache
	}

	// A branch changes only scripts/install.sh; the default branch's review
	// that follows runs its own install.
	evil, c := run("evil", "ref:refs/heads/evil")
	if c != api.CacheMiss {
		t.Fatalf("first run: cache %s", c)
	}
	main1, c := run("main", depcache.DefaultScope)
	if c != api.CacheMiss || !strings.HasPrefix(main1, "main ") {
		t.Fatalf("the default branch got %q (cache %s) after the branch wrote %q", main1, c, evil)
	}
	// The default branch's entry serves a pull request on the same tree.
	got, c := run("main", "pr:7")
	if c != api.CacheHit || got != main1 {
		t.Fatalf("pull request 7 on the default branch's tree: %q (cache %s), want the default entry %q", got, c, main1)
	}

	// A pull request's entry serves itself only.
	pr1, c := run("feature", "pr:1")
	if c != api.CacheMiss {
		t.Fatalf("pull request 1: cache %s", c)
	}
	if got, c := run("feature", "pr:2"); c != api.CacheMiss || got == pr1 {
		t.Fatalf("pull request 2 got pull request 1's dependencies %q (cache %s)", got, c)
	}
	def, c := run("feature", depcache.DefaultScope)
	if c != api.CacheMiss || def == pr1 {
		t.Fatalf("the default branch got pull request 1's dependencies %q (cache %s)", def, c)
	}
	// Its own entry comes before the default one of the same tree.
	if got, c := run("feature", "pr:1"); c != api.CacheHit || got != pr1 {
		t.Fatalf("pull request 1 again: %q (cache %s), want its own %q", got, c, pr1)
	}
}
