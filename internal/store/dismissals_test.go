package store

import (
	"strings"
	"testing"
)

// TestDismissals: a dismissal is kept once per repository and finding, with who and why,
// listed per repository or for all, and removed on request; on SQLite and PostgreSQL.
func TestDismissals(t *testing.T) {
	backends(t, func(t *testing.T, open func(Options) *Store) {
		s := open(Options{})
		ctx := t.Context()
		d := Dismissal{Owner: "acme", Repo: "widgets", FindingID: "f1", Number: 3, Path: "run.sh", By: "octocat", Reason: strings.Repeat("r", 600)}
		if isNew, err := s.Dismiss(ctx, d); err != nil || !isNew {
			t.Fatalf("dismiss: %v %v", isNew, err)
		}
		again := d
		again.By = "mallory"
		if isNew, err := s.Dismiss(ctx, again); err != nil || isNew {
			t.Fatalf("dismiss again: %v %v, want kept as first recorded", isNew, err)
		}
		if _, err := s.Dismiss(ctx, Dismissal{Owner: "acme", Repo: "gadgets", FindingID: "f1", By: "octocat"}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Dismiss(ctx, Dismissal{Owner: "acme", Repo: "widgets", FindingID: "f2"}); err == nil {
			t.Error("a dismissal without who was kept")
		}
		got, err := s.Dismissals(ctx, "acme", "widgets")
		if err != nil || len(got) != 1 || got[0].By != "octocat" || len(got[0].Reason) != MaxDismissalReasonBytes || got[0].Path != "run.sh" || got[0].At.IsZero() {
			t.Fatalf("dismissals of widgets: %+v, %v", got, err)
		}
		if all, err := s.Dismissals(ctx, "", ""); err != nil || len(all) != 2 {
			t.Fatalf("all dismissals: %+v, %v", all, err)
		}
		if ok, err := s.Undismiss(ctx, "acme", "widgets", "f1"); err != nil || !ok {
			t.Fatalf("undismiss: %v %v", ok, err)
		}
		if ok, _ := s.Undismiss(ctx, "acme", "widgets", "f1"); ok {
			t.Error("undismissed twice")
		}
		if got, _ := s.Dismissals(ctx, "acme", "widgets"); len(got) != 0 {
			t.Errorf("after undismiss: %+v", got)
		}
	})
}
