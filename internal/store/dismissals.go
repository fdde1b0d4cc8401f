package store

import (
	"context"
	"fmt"
	"time"
)

// Dismissal is a finding a person with write access dismissed on a repository (an
// "/aster ignore" reply in its thread, or resolving its thread while the finding was still
// there): later reviews of that repository mark it suppressed and never post it again.
type Dismissal struct {
	Owner, Repo string
	// FindingID is the finding's identity on pull requests (the marker id of its comment).
	FindingID string
	Number    int    // the pull request it was dismissed on
	Path      string // the finding's file, for the operator's listing
	By        string
	Reason    string
	At        time.Time
}

// MaxDismissalReasonBytes caps the reason kept with a dismissal (it is a person's comment).
const MaxDismissalReasonBytes = 500

// Dismiss records a dismissal; dismissing a dismissed finding again keeps the first record.
// It reports whether the dismissal is new.
func (s *Store) Dismiss(ctx context.Context, d Dismissal) (bool, error) {
	if d.Owner == "" || d.Repo == "" || d.FindingID == "" || d.By == "" {
		return false, fmt.Errorf("dismiss: repository, finding and who are required")
	}
	if len(d.Reason) > MaxDismissalReasonBytes {
		d.Reason = d.Reason[:MaxDismissalReasonBytes]
	}
	if d.At.IsZero() {
		d.At = time.Now()
	}
	n, err := s.db.Exec(ctx, `INSERT INTO aster_dismissals (owner, repo, finding_id, number, path, by_login, reason, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (owner, repo, finding_id) DO NOTHING`,
		d.Owner, d.Repo, d.FindingID, d.Number, d.Path, d.By, d.Reason, d.At.UnixMilli())
	if err != nil {
		return false, fmt.Errorf("dismiss: %w", err)
	}
	return n > 0, nil
}

// Undismiss removes a dismissal and reports whether there was one.
func (s *Store) Undismiss(ctx context.Context, owner, repo, findingID string) (bool, error) {
	n, err := s.db.Exec(ctx, `DELETE FROM aster_dismissals WHERE owner = $1 AND repo = $2 AND finding_id = $3`, owner, repo, findingID)
	if err != nil {
		return false, fmt.Errorf("undismiss: %w", err)
	}
	return n > 0, nil
}

// Dismissals lists the dismissals of one repository, or of every repository when owner
// and repo are empty, oldest first.
func (s *Store) Dismissals(ctx context.Context, owner, repo string) ([]Dismissal, error) {
	rows, err := s.db.Query(ctx, `SELECT owner, repo, finding_id, number, path, by_login, reason, created_at FROM aster_dismissals
		WHERE ($1 = '' OR owner = $1) AND ($2 = '' OR repo = $2) ORDER BY created_at, owner, repo, finding_id`, owner, repo)
	if err != nil {
		return nil, fmt.Errorf("list dismissals: %w", err)
	}
	defer rows.Close()
	var out []Dismissal
	for rows.Next() {
		var d Dismissal
		var at int64
		if err := rows.Scan(&d.Owner, &d.Repo, &d.FindingID, &d.Number, &d.Path, &d.By, &d.Reason, &at); err != nil {
			return nil, fmt.Errorf("list dismissals: %w", err)
		}
		d.At = fromMS(at)
		out = append(out, d)
	}
	return out, rows.Err()
}
