package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"
	_ "modernc.org/sqlite" // the pure-Go SQLite driver, registered as "sqlite"
)

// engine is one database with its River client: the same operations over SQLite
// (*sql.Tx) and Postgres (pgx.Tx), whose transaction types differ.
type engine interface {
	pool() dbtx
	// inTx runs fn in one transaction; jobs inserted through t commit with it.
	inTx(ctx context.Context, fn func(t *txn) error) error
	// completeTx runs fn and marks the River job completed in the same transaction.
	completeTx(ctx context.Context, job *river.Job[reviewArgs], fn func(t *txn) error) error
	// lockMigrations serialises start-ups that migrate (several replicas on one Postgres).
	lockMigrations(ctx context.Context) (func(), error)
	migrateRiver(ctx context.Context) error
	client() riverClient
	// rescue makes running jobs available again (their process is known to be gone).
	rescue(ctx context.Context, jobs []*rivertype.JobRow) error
	close()
}

// riverClient is what the store uses of a River client, whatever its transaction type.
type riverClient interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
	StopAndCancel(ctx context.Context) error
	JobList(ctx context.Context, params *river.JobListParams) (*river.JobListResult, error)
	JobRetry(ctx context.Context, id int64) (*rivertype.JobRow, error)
}

// txn is a transaction: the store's SQL plus the River calls that must commit with it.
type txn struct {
	dbtx
	insertJob func(ctx context.Context, args reviewArgs, opts *river.InsertOpts) (int64, error)
	jobState  func(ctx context.Context, id int64) (rivertype.JobState, bool, error)
	retryJob  func(ctx context.Context, id int64) error
}

type riverEngine[TTx any] struct {
	rc       *river.Client[TTx]
	db       dbtx
	begin    func(context.Context) (TTx, error)
	commit   func(context.Context, TTx) error
	rollback func(context.Context, TTx) error
	wrap     func(TTx) dbtx
	complete func(context.Context, TTx, *river.Job[reviewArgs]) error
	migrator *rivermigrate.Migrator[TTx]
	lock     func(context.Context) (func(), error)
	closeFn  func()
}

func (e *riverEngine[TTx]) pool() dbtx { return e.db }

func (e *riverEngine[TTx]) txnOf(tx TTx) *txn {
	return &txn{
		dbtx: e.wrap(tx),
		insertJob: func(ctx context.Context, args reviewArgs, opts *river.InsertOpts) (int64, error) {
			if e.rc == nil {
				return 0, ErrNotStarted
			}
			res, err := e.rc.InsertTx(ctx, tx, args, opts)
			if err != nil {
				return 0, err
			}
			return res.Job.ID, nil
		},
		jobState: func(ctx context.Context, id int64) (rivertype.JobState, bool, error) {
			if e.rc == nil {
				return "", false, ErrNotStarted
			}
			row, err := e.rc.JobGetTx(ctx, tx, id)
			if errors.Is(err, river.ErrNotFound) {
				return "", false, nil
			}
			if err != nil {
				return "", false, err
			}
			return row.State, true, nil
		},
		retryJob: func(ctx context.Context, id int64) error {
			if e.rc == nil {
				return ErrNotStarted
			}
			_, err := e.rc.JobRetryTx(ctx, tx, id)
			if errors.Is(err, river.ErrNotFound) {
				return nil
			}
			return err
		},
	}
}

func (e *riverEngine[TTx]) inTx(ctx context.Context, fn func(t *txn) error) error {
	return e.withTx(ctx, fn, nil)
}

func (e *riverEngine[TTx]) completeTx(ctx context.Context, job *river.Job[reviewArgs], fn func(t *txn) error) error {
	return e.withTx(ctx, fn, func(tx TTx) error {
		if err := e.complete(ctx, tx, job); err != nil {
			return fmt.Errorf("complete job: %w", err)
		}
		return nil
	})
}

// withTx runs fn, then finish (when set), in one transaction, and commits it;
// on any error the transaction is rolled back, even when ctx is cancelled.
func (e *riverEngine[TTx]) withTx(ctx context.Context, fn func(t *txn) error, finish func(tx TTx) error) (err error) {
	tx, err := e.begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() {
		if err != nil {
			_ = e.rollback(context.WithoutCancel(ctx), tx)
		}
	}()
	if err = fn(e.txnOf(tx)); err != nil {
		return err
	}
	if finish != nil {
		if err = finish(tx); err != nil {
			return err
		}
	}
	if err = e.commit(ctx, tx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

func (e *riverEngine[TTx]) lockMigrations(ctx context.Context) (func(), error) {
	if e.lock == nil {
		return func() {}, nil
	}
	return e.lock(ctx)
}

func (e *riverEngine[TTx]) migrateRiver(ctx context.Context) error {
	if _, err := e.migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("river migrations: %w", err)
	}
	return nil
}

func (e *riverEngine[TTx]) client() riverClient {
	if e.rc == nil {
		return nil
	}
	return anyClient[TTx]{e.rc}
}

func (e *riverEngine[TTx]) close() { e.closeFn() }

// anyClient erases a River client's transaction type.
type anyClient[TTx any] struct{ *river.Client[TTx] }

func (e *riverEngine[TTx]) rescue(ctx context.Context, jobs []*rivertype.JobRow) error {
	if len(jobs) == 0 {
		return nil
	}
	now := time.Now().UTC()
	p := &riverdriver.JobRescueManyParams{StuckHorizon: now.Add(time.Second)}
	for _, j := range jobs {
		errData, err := json.Marshal(rivertype.AttemptError{At: now, Attempt: max(j.Attempt, 0),
			Error: "interrupted: the process working this job stopped (restart after a crash)"})
		if err != nil {
			return err
		}
		p.ID = append(p.ID, j.ID)
		p.Error = append(p.Error, errData)
		p.FinalizedAt = append(p.FinalizedAt, nil)
		p.ScheduledAt = append(p.ScheduledAt, now)
		p.State = append(p.State, string(rivertype.JobStateAvailable))
	}
	if _, err := e.rc.Driver().GetExecutor().JobRescueMany(ctx, p); err != nil {
		return fmt.Errorf("rescue jobs: %w", err)
	}
	return nil
}

// --- SQLite ---------------------------------------------------------------------------------

func sqliteDSN(path string, readOnly bool) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "foreign_keys(1)")
	if readOnly {
		q.Set("mode", "ro")
	} else {
		q.Add("_pragma", "journal_mode(WAL)")
		// FULL: a commit is on disk before the webhook is answered 202.
		q.Add("_pragma", "synchronous(FULL)")
		q.Set("_txlock", "immediate")
	}
	return "file:" + path + "?" + q.Encode()
}

func openSQLite(ctx context.Context, path string, readOnly bool, q QueueOptions, w *reviewWorker, log *slog.Logger) (engine, error) {
	db, err := sql.Open("sqlite", sqliteDSN(path, readOnly))
	if err != nil {
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	// SQLite takes one writer at a time; one connection avoids SQLITE_BUSY inside the
	// process (River's advice for its SQLite driver).
	db.SetMaxOpenConns(1)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	if !readOnly {
		_ = chmodIfExists(path, 0o600)
	}
	driver := riversqlite.New(db)
	e := &riverEngine[*sql.Tx]{
		db:       sqlDB{db},
		begin:    func(ctx context.Context) (*sql.Tx, error) { return db.BeginTx(ctx, nil) },
		commit:   func(_ context.Context, tx *sql.Tx) error { return tx.Commit() },
		rollback: func(_ context.Context, tx *sql.Tx) error { return tx.Rollback() },
		wrap:     func(tx *sql.Tx) dbtx { return sqlDB{tx} },
		complete: func(ctx context.Context, tx *sql.Tx, job *river.Job[reviewArgs]) error {
			_, err := river.JobCompleteTx[*riversqlite.Driver](ctx, tx, job)
			return err
		},
		closeFn: func() { db.Close() },
	}
	if readOnly {
		// A client that never starts: it lists the queue's jobs for history.
		return e.attach(driver, &river.Config{Logger: quiet(log)}, false, log)
	}
	return e.attach(driver, q.riverConfig(w, log), true, log)
}

// --- Postgres -------------------------------------------------------------------------------

func openPostgres(ctx context.Context, rawURL string, q QueueOptions, w *reviewWorker, log *slog.Logger) (engine, error) {
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		// pgx quotes the URL in its parse errors; it may hold a password.
		return nil, errors.New("postgres: database URL does not parse")
	}
	if cfg.MaxConns < 8 {
		cfg.MaxConns = 8
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: %w", err)
	}
	driver := riverpgxv5.New(pool)
	e := &riverEngine[pgx.Tx]{
		db:       pgDB{pool},
		begin:    func(ctx context.Context) (pgx.Tx, error) { return pool.Begin(ctx) },
		commit:   func(ctx context.Context, tx pgx.Tx) error { return tx.Commit(ctx) },
		rollback: func(ctx context.Context, tx pgx.Tx) error { return tx.Rollback(ctx) },
		wrap:     func(tx pgx.Tx) dbtx { return pgDB{tx} },
		complete: func(ctx context.Context, tx pgx.Tx, job *river.Job[reviewArgs]) error {
			_, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
			return err
		},
		lock:    func(ctx context.Context) (func(), error) { return pgAdvisoryLock(ctx, pool) },
		closeFn: pool.Close,
	}
	return e.attach(driver, q.riverConfig(w, log), true, log)
}

// attach gives e its River client over driver (configured by cfg) and, when migrate, the
// migrator of River's schema; on an error it closes e's database.
func (e *riverEngine[TTx]) attach(driver riverdriver.Driver[TTx], cfg *river.Config, migrate bool, log *slog.Logger) (engine, error) {
	var err error
	if migrate {
		if e.migrator, err = rivermigrate.New(driver, &rivermigrate.Config{Logger: quiet(log)}); err != nil {
			e.closeFn()
			return nil, err
		}
	}
	if e.rc, err = river.NewClient(driver, cfg); err != nil {
		e.closeFn()
		return nil, fmt.Errorf("river client: %w", err)
	}
	return e, nil
}

// pgAdvisoryLock holds a session advisory lock on one pooled connection until the returned
// function runs, so replicas starting together migrate one after another.
func pgAdvisoryLock(ctx context.Context, pool *pgxpool.Pool) (func(), error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	h := fnv.New64a()
	h.Write([]byte("aster migrations"))
	key := int64(h.Sum64())
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, key); err != nil {
		conn.Release()
		return nil, fmt.Errorf("postgres migration lock: %w", err)
	}
	return func() {
		_, _ = conn.Exec(context.Background(), `SELECT pg_advisory_unlock($1)`, key)
		conn.Release()
	}, nil
}

// quiet passes River's own logging through at warn level and above.
func quiet(log *slog.Logger) *slog.Logger {
	return slog.New(levelFilter{h: log.Handler(), min: slog.LevelWarn}).With("component", "river")
}

type levelFilter struct {
	h   slog.Handler
	min slog.Level
}

func (f levelFilter) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= f.min && f.h.Enabled(ctx, l)
}
func (f levelFilter) Handle(ctx context.Context, r slog.Record) error { return f.h.Handle(ctx, r) }
func (f levelFilter) WithAttrs(a []slog.Attr) slog.Handler {
	return levelFilter{h: f.h.WithAttrs(a), min: f.min}
}
func (f levelFilter) WithGroup(n string) slog.Handler {
	return levelFilter{h: f.h.WithGroup(n), min: f.min}
}
