// Package runstore keeps the asynchronous runs of the HTTP API (POST /v1/runs):
// each run's owner, state and, once it ended, its result, on disk in SQLite
// (the default, one file) or in PostgreSQL, so that a result outlives the
// request that asked for it and a restart of the server. A run the server was
// running or holding when it stopped is marked failed at the next start with
// that reason: never lost, never left "running".
package runstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the PostgreSQL driver, registered as "pgx"
	_ "modernc.org/sqlite"             // the pure-Go SQLite driver, registered as "sqlite"
)

// Defaults of the store's retention.
const (
	// DefaultRetention is how long a finished run's result is kept.
	DefaultRetention = 24 * time.Hour
	// DefaultMaxBytes bounds the results kept in all; past it the oldest
	// finished runs go first.
	DefaultMaxBytes = 1 << 30
	// MaxList bounds one listing.
	MaxList = 1000
)

// State is where a run is.
type State string

// The states of a run: queued (accepted, waiting for a slot), running, done
// (a result, whatever the job's own status) and error (no result: refused
// after it was accepted, or the server stopped).
const (
	StateQueued  State = "queued"
	StateRunning State = "running"
	StateDone    State = "done"
	StateError   State = "error"
)

// ReasonServerStopped is the error of a run the server stopped holding.
const ReasonServerStopped = "the server stopped while the run was queued or running; submit it again"

// Run is one asynchronous run.
type Run struct {
	ID    string
	Owner string // who may read it: the hash of the caller's token ("" without tokens)
	Kind  string // execute or test
	State State
	// Result is the answer the synchronous route would have given (the
	// same JSON), once done.
	Result json.RawMessage
	// ErrorCode and ErrorMessage say why a run ended in StateError.
	ErrorCode    string
	ErrorMessage string
	CallbackURL  string
	Created      time.Time
	Started      time.Time // zero until it runs
	Finished     time.Time // zero until it ends
}

// Options configure a Store.
type Options struct {
	// Path is the SQLite file (created with mode 0600); ignored when
	// PostgresURL is set.
	Path string
	// PostgresURL, when set, keeps the runs in that database instead.
	PostgresURL string
	// Retention and MaxBytes bound what is kept (defaults DefaultRetention
	// and DefaultMaxBytes).
	Retention time.Duration
	MaxBytes  int64
}

// Store is the runs' table.
type Store struct {
	db   *sql.DB
	opts Options
}

// Open opens (and creates when needed) the store, then marks every run left
// queued or running by an earlier server as failed (ReasonServerStopped).
func Open(ctx context.Context, o Options) (*Store, error) {
	if o.Retention <= 0 {
		o.Retention = DefaultRetention
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	var db *sql.DB
	var err error
	if o.PostgresURL != "" {
		db, err = sql.Open("pgx", o.PostgresURL)
		if err != nil {
			return nil, errors.New("runstore: postgres: the database URL does not parse")
		}
	} else {
		if o.Path == "" {
			return nil, errors.New("runstore: no database file")
		}
		if err := os.MkdirAll(filepath.Dir(o.Path), 0o700); err != nil {
			return nil, fmt.Errorf("runstore: %w", err)
		}
		q := url.Values{}
		q.Add("_pragma", "busy_timeout(10000)")
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous(FULL)")
		q.Set("_txlock", "immediate")
		if db, err = sql.Open("sqlite", "file:"+o.Path+"?"+q.Encode()); err != nil {
			return nil, fmt.Errorf("runstore: open %s: %w", o.Path, err)
		}
		db.SetMaxOpenConns(1) // one writer at a time
	}
	s := &Store{db: db, opts: o}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if o.PostgresURL == "" {
		_ = os.Chmod(o.Path, 0o600)
	}
	if _, err := s.db.ExecContext(ctx, `UPDATE aster_runs SET state = $1, error_code = $2, error_message = $3, finished_at = $4
		WHERE state = $5 OR state = $6`, StateError, "internal", ReasonServerStopped, time.Now().UnixMilli(), StateQueued, StateRunning); err != nil {
		db.Close()
		return nil, fmt.Errorf("runstore: recover runs: %w", err)
	}
	return s, nil
}

func (s *Store) migrate(ctx context.Context) error {
	_, err := s.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS aster_runs (
		id TEXT PRIMARY KEY,
		owner TEXT NOT NULL,
		kind TEXT NOT NULL,
		state TEXT NOT NULL,
		result TEXT,
		size BIGINT NOT NULL DEFAULT 0,
		error_code TEXT NOT NULL DEFAULT '',
		error_message TEXT NOT NULL DEFAULT '',
		callback_url TEXT NOT NULL DEFAULT '',
		created_at BIGINT NOT NULL,
		started_at BIGINT NOT NULL DEFAULT 0,
		finished_at BIGINT NOT NULL DEFAULT 0
	)`)
	if err == nil {
		_, err = s.db.ExecContext(ctx, `CREATE INDEX IF NOT EXISTS aster_runs_owner ON aster_runs (owner, created_at)`)
	}
	if err != nil {
		return fmt.Errorf("runstore: create table: %w", err)
	}
	return nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// ErrNotFound is a run that does not exist or belongs to someone else.
var ErrNotFound = errors.New("no such run")

// Create records a new queued run.
func (s *Store) Create(ctx context.Context, r Run) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO aster_runs (id, owner, kind, state, callback_url, created_at) VALUES ($1, $2, $3, $4, $5, $6)`,
		r.ID, r.Owner, r.Kind, StateQueued, r.CallbackURL, r.Created.UnixMilli())
	if err != nil {
		return fmt.Errorf("runstore: create run: %w", err)
	}
	return nil
}

// Start marks a run running.
func (s *Store) Start(ctx context.Context, id string, at time.Time) error {
	_, err := s.db.ExecContext(ctx, `UPDATE aster_runs SET state = $1, started_at = $2 WHERE id = $3 AND state = $4`, StateRunning, at.UnixMilli(), id, StateQueued)
	if err != nil {
		return fmt.Errorf("runstore: start run: %w", err)
	}
	return nil
}

// Finish records a run's end: a result (StateDone) or an error (StateError),
// then drops what retention no longer keeps.
func (s *Store) Finish(ctx context.Context, r Run) error {
	var result any
	if r.Result != nil {
		result = string(r.Result)
	}
	_, err := s.db.ExecContext(ctx, `UPDATE aster_runs SET state = $1, result = $2, size = $3, error_code = $4, error_message = $5, finished_at = $6 WHERE id = $7`,
		r.State, result, len(r.Result), r.ErrorCode, r.ErrorMessage, r.Finished.UnixMilli(), r.ID)
	if err != nil {
		return fmt.Errorf("runstore: finish run: %w", err)
	}
	return s.prune(ctx, time.Now())
}

// prune drops finished runs older than the retention, then the oldest
// finished runs while the results kept add up to more than MaxBytes.
func (s *Store) prune(ctx context.Context, now time.Time) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM aster_runs WHERE finished_at > 0 AND finished_at < $1`, now.Add(-s.opts.Retention).UnixMilli()); err != nil {
		return fmt.Errorf("runstore: prune: %w", err)
	}
	var total int64
	if err := s.db.QueryRowContext(ctx, `SELECT COALESCE(SUM(size), 0) FROM aster_runs`).Scan(&total); err != nil {
		return fmt.Errorf("runstore: prune: %w", err)
	}
	for total > s.opts.MaxBytes {
		var id string
		var size int64
		err := s.db.QueryRowContext(ctx, `SELECT id, size FROM aster_runs WHERE finished_at > 0 ORDER BY finished_at, id LIMIT 1`).Scan(&id, &size)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("runstore: prune: %w", err)
		}
		if _, err := s.db.ExecContext(ctx, `DELETE FROM aster_runs WHERE id = $1`, id); err != nil {
			return fmt.Errorf("runstore: prune: %w", err)
		}
		total -= size
	}
	return nil
}

const columns = `id, owner, kind, state, result, error_code, error_message, callback_url, created_at, started_at, finished_at`

func scan(sc interface{ Scan(...any) error }) (Run, error) {
	var r Run
	var result sql.NullString
	var created, started, finished int64
	var state string
	if err := sc.Scan(&r.ID, &r.Owner, &r.Kind, &state, &result, &r.ErrorCode, &r.ErrorMessage, &r.CallbackURL, &created, &started, &finished); err != nil {
		return r, err
	}
	r.State = State(state)
	if result.Valid {
		r.Result = json.RawMessage(result.String)
	}
	r.Created = time.UnixMilli(created)
	if started > 0 {
		r.Started = time.UnixMilli(started)
	}
	if finished > 0 {
		r.Finished = time.UnixMilli(finished)
	}
	return r, nil
}

// Get returns owner's run id; ErrNotFound when there is none (or it is
// someone else's: the two are not told apart).
func (s *Store) Get(ctx context.Context, owner, id string) (Run, error) {
	r, err := scan(s.db.QueryRowContext(ctx, `SELECT `+columns+` FROM aster_runs WHERE id = $1 AND owner = $2`, id, owner))
	if errors.Is(err, sql.ErrNoRows) {
		return r, ErrNotFound
	}
	if err != nil {
		return r, fmt.Errorf("runstore: get run: %w", err)
	}
	return r, nil
}

// List returns owner's most recent runs, newest first, without their results
// (at most limit, at most MaxList).
func (s *Store) List(ctx context.Context, owner string, limit int) ([]Run, error) {
	if limit <= 0 || limit > MaxList {
		limit = MaxList
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+strings.Replace(columns, "result", "NULL", 1)+` FROM aster_runs WHERE owner = $1 ORDER BY created_at DESC, id DESC LIMIT $2`, owner, limit)
	if err != nil {
		return nil, fmt.Errorf("runstore: list runs: %w", err)
	}
	defer rows.Close()
	out := []Run{}
	for rows.Next() {
		r, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("runstore: list runs: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
