package bench_test

import (
	"testing"
	"testing/fstest"

	"github.com/asterhq/aster/internal/bench"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
)

// TestSuiteScoresSitesInTests runs a labelled suite through the real gate: a
// vulnerable site in a file the path-class policy counts as a test (a
// suite's upstream may keep its examples there) is still read and scored,
// since a suite is reviewed with no class suppressing anything.
func TestSuiteScoresSitesInTests(t *testing.T) {
	mgr := sandboxtest.Manager(t, sandboxtest.Docker(t), 4)
	corpus := t.TempDir()
	vuln := "import os\nfrom flask import request\n\n\ndef test_run():\n    os.system(\"ls \" + request.args[\"q\"])\n"
	makeBundle(t, corpus, "intests", map[string]string{"tests/test_views.py": vuln, "app/views.py": vuln})
	labels := fstest.MapFS{"intests.json": {Data: []byte(`{"name": "intests", "upstream": "u", "commit": "c", "licence": "l", "sites": [
		{"path": "tests/test_views.py", "line": 6, "category": "command-injection", "vulnerable": true, "why": "w"},
		{"path": "app/views.py", "line": 6, "category": "command-injection", "vulnerable": true, "why": "w"}]}`)}}
	rep, err := bench.RunSuites(t.Context(), bench.SuitesConfig{Dir: corpus, Labels: labels,
		Gate: gate.NewRunner(mgr, gate.RunnerOptions{Image: sandboxtest.Image()}), TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Suites) != 1 || rep.Suites[0].Error != "" {
		t.Fatalf("suites %+v", rep.Suites)
	}
	for _, cs := range rep.Total.Categories {
		if cs.Category != "command-injection" {
			continue
		}
		if r := cs.Systems[bench.SystemTaintPython]; r.TP != 2 {
			t.Errorf("taint-python found %d of the 2 sites: %+v", r.TP, r)
		}
		return
	}
	t.Errorf("no command-injection score: %+v", rep.Total)
}
