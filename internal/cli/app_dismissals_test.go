package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/store"
)

// aster app dismissals lists what people dismissed and removes a dismissal, on the real
// store.
func TestAppDismissals(t *testing.T) {
	db := filepath.Join(t.TempDir(), "aster.db")
	st, err := store.Open(t.Context(), store.Options{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []store.Dismissal{
		{Owner: "acme", Repo: "widgets", FindingID: "aaaa", Number: 4, Path: "run.sh", By: "octocat", Reason: "the directory always exists"},
		{Owner: "acme", Repo: "gadgets", FindingID: "bbbb", By: "hubot"},
	} {
		if _, err := st.Dismiss(t.Context(), d); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	code, out, stderr := run(t, "app", "dismissals", "list", "--db", db)
	if code != 0 || !strings.Contains(out, "acme/widgets") || !strings.Contains(out, "the directory always exists") || !strings.Contains(out, "acme/gadgets") {
		t.Fatalf("list: %d %q %q", code, out, stderr)
	}
	code, out, _ = run(t, "app", "dismissals", "list", "--db", db, "--repo", "acme/widgets", "--json")
	var d store.Dismissal
	if code != 0 || strings.Count(out, "\n") != 1 || json.Unmarshal([]byte(out), &d) != nil || d.FindingID != "aaaa" || d.By != "octocat" {
		t.Fatalf("list --json: %d %q", code, out)
	}
	if code, out, _ = run(t, "app", "dismissals", "remove", "--db", db, "--repo", "acme/widgets", "aaaa"); code != 0 || !strings.Contains(out, "removed") {
		t.Fatalf("remove: %d %q", code, out)
	}
	if code, _, stderr = run(t, "app", "dismissals", "remove", "--db", db, "--repo", "acme/widgets", "aaaa"); code != ExitFailure || !strings.Contains(stderr, "no dismissal") {
		t.Errorf("remove again: %d %q", code, stderr)
	}
	if code, _, stderr = run(t, "app", "dismissals", "remove", "--db", db, "--repo", "widgets", "aaaa"); code != ExitUsage {
		t.Errorf("bad --repo: %d %q", code, stderr)
	}
	if code, out, _ = run(t, "app", "dismissals", "list", "--db", db, "--repo", "acme/widgets"); code != 0 || !strings.Contains(out, "no dismissed findings") {
		t.Errorf("after remove: %d %q", code, out)
	}
}
