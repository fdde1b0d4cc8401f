// Package store is the GitHub App's durable state: the job queue (River, on SQLite by default
// or on Postgres when several replicas share the work), webhook delivery ids, the per-pull-
// request coalescing and lease that keep at most one running and one waiting review per pull
// request, the posting progress of each review (so a retried job never posts twice), and the
// review history. Both databases run the same SQL for Aster's own tables.
package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Errors of the store. ErrDuplicateDelivery is returned for a delivery id already stored.
var (
	ErrDuplicateDelivery = errors.New("duplicate delivery")
	// ErrDuplicateCommand: the review command comment (at that edit time) is already stored,
	// under another delivery id.
	ErrDuplicateCommand = errors.New("review command already handled")
	// ErrPullBusy: another job of the same pull request holds its lease. The worker snoozes.
	ErrPullBusy = errors.New("another review of this pull request is running")
	// ErrLeaseLost: the job's lease on its pull request expired or was taken over.
	ErrLeaseLost = errors.New("lease on the pull request lost")
	// ErrLocked: another process serves from the same SQLite database.
	ErrLocked = errors.New("database in use by another aster app serve")
	// ErrNotStarted: a worker-side call on a store opened without a queue.
	ErrNotStarted = errors.New("store has no queue")
)

// Database kinds.
const (
	KindSQLite   = "sqlite"
	KindPostgres = "postgres"
)

// Options configure Open.
type Options struct {
	// Path is the SQLite database file (created with its directory, mode 0600).
	Path string
	// URL is a postgres:// URL; when set it replaces Path.
	URL string
	// ReadOnly opens an existing database for reading history: no migrations, no lock,
	// no queue.
	ReadOnly bool
	// Queue configures the job queue; its zero value has working defaults.
	Queue  QueueOptions
	Logger *slog.Logger
}

// Store is the app's database. Safe for concurrent use.
type Store struct {
	kind   string
	e      engine
	db     dbtx
	log    *slog.Logger
	q      QueueOptions
	unlock func()
	queue  *queueState
}

// Open connects, takes the single-writer lock of a SQLite database, and (unless ReadOnly)
// runs River's migrations and Aster's own.
func Open(ctx context.Context, opts Options) (*Store, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	q := opts.Queue.withDefaults()
	s := &Store{log: log, q: q, unlock: func() {}}
	w := &reviewWorker{s: s}
	var err error
	switch {
	case opts.URL != "":
		s.kind = KindPostgres
		s.e, err = openPostgres(ctx, opts.URL, q, w, log)
	case opts.Path != "":
		s.kind = KindSQLite
		if strings.ContainsAny(opts.Path, "?#") {
			return nil, fmt.Errorf("sqlite path %q: ? and # are not allowed", opts.Path)
		}
		if !opts.ReadOnly {
			if err := os.MkdirAll(filepath.Dir(opts.Path), 0o700); err != nil {
				return nil, fmt.Errorf("sqlite directory: %w", err)
			}
			if s.unlock, err = lockFile(opts.Path + ".lock"); err != nil {
				return nil, err
			}
		} else if _, err := os.Stat(opts.Path); err != nil {
			return nil, fmt.Errorf("sqlite database: %w", err)
		}
		s.e, err = openSQLite(ctx, opts.Path, opts.ReadOnly, q, w, log)
	default:
		return nil, errors.New("store: need a SQLite path or a postgres URL")
	}
	if err != nil {
		s.unlock()
		return nil, err
	}
	s.db = s.e.pool()
	if !opts.ReadOnly {
		if err := s.migrate(ctx); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// Kind is KindSQLite or KindPostgres.
func (s *Store) Kind() string { return s.kind }

// Close stops the queue if it runs and closes the database.
func (s *Store) Close() error {
	if s.queue != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = s.Stop(ctx)
		cancel()
	}
	s.e.close()
	s.unlock()
	return nil
}

// Ping checks the database answers.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.db.QueryRow(ctx, `SELECT 1`).Scan(&one); err != nil {
		return fmt.Errorf("store ping: %w", err)
	}
	return nil
}

func nowMS() int64 { return time.Now().UnixMilli() }

func fromMS(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
