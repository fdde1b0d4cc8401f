package gate

import (
	"bytes"
	"slices"
	"testing"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/workspace"
)

// kics analyses Dockerfiles and Kubernetes manifests; any other YAML file of a
// change (a workflow, a compose file, settings) is declined, not counted as read.
func TestKicsSniffDeclinesYAMLThatIsNoManifest(t *testing.T) {
	files := map[string]string{
		"deploy/app.yaml":           "# the service\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\n",
		"deploy/multi.yml":          "---\napiVersion: v1\nkind: Service\n---\napiVersion: v1\nkind: Pod\n",
		".github/workflows/ci.yml":  "name: ci\non: push\njobs:\n  t:\n    runs-on: ubuntu-latest\n",
		"config/settings.yaml":      "kind: of a setting\ndebug: true\n",      // no apiVersion
		"docs/example.yaml":         "spec:\n  apiVersion: v1\n  kind: Pod\n", // nested, not top level
		"Dockerfile":                "FROM debian\n",
		"images/web/Dockerfile.dev": "FROM debian\n",
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	snap, err := SpoolSnapshot(bytes.NewReader(tarOf(t, files)), t.TempDir(), workspace.Caps{})
	if err != nil {
		t.Fatal(err)
	}
	a := kicsAnalyzer()
	keep, declined, err := a.Sniff.targets(snap, names)
	if err != nil {
		t.Fatal(err)
	}
	wantKeep := []string{"Dockerfile", "deploy/app.yaml", "deploy/multi.yml", "images/web/Dockerfile.dev"}
	wantDeclined := []string{".github/workflows/ci.yml", "config/settings.yaml", "docs/example.yaml"}
	if !slices.Equal(keep, wantKeep) || !slices.Equal(declined, wantDeclined) {
		t.Errorf("kept %v, declined %v; want %v and %v", keep, declined, wantKeep, wantDeclined)
	}
}

// A change whose only YAML file is a workflow starts no kics sandbox, and the
// workflow beside a manifest is declined, not counted as read by kics.
func TestRunnerSkipsKicsWithoutManifest(t *testing.T) {
	snap := testSnapshot(t, map[string]string{
		".github/workflows/ci.yml": "name: ci\non: push\n",
		"k8s/pod.yaml":             "apiVersion: v1\nkind: Pod\n",
	})
	fake := newFake(func(spec sandbox.Spec) (sandbox.Result, error) {
		return ok(`{"kics_version":"2.1.0","queries":[]}`, 0), nil
	})
	r := NewRunner(fake, RunnerOptions{})
	res := r.Run(t.Context(), Request{Snapshot: snap, Analyzers: []Analyzer{kicsAnalyzer()}, Changed: []string{".github/workflows/ci.yml"}})
	got := res.Analyzers[0]
	if got.Status != StatusSkipped || got.Reason != "skipped: not a Kubernetes manifest (1 file)" || fake.specs["sh"].Argv != nil {
		t.Errorf("workflow only: %+v; kics ran: %v", got, fake.specs["sh"].Argv != nil)
	}
	res = r.Run(t.Context(), Request{Snapshot: snap, Analyzers: []Analyzer{kicsAnalyzer()}, Changed: []string{".github/workflows/ci.yml", "k8s/pod.yaml"}})
	got = res.Analyzers[0]
	if got.Status != StatusOK || !slices.Equal(got.Declined, []string{".github/workflows/ci.yml"}) {
		t.Errorf("workflow and manifest: %+v", got)
	}
}
