package store

import (
	"context"
	"database/sql"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// dbtx is the little SQL surface the store's own tables need, the same over SQLite
// (database/sql) and Postgres (pgx), inside a transaction or not. Statements use $1-style
// placeholders, which both databases accept, and only SQL both understand.
type dbtx interface {
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	Query(ctx context.Context, query string, args ...any) (rows, error)
	QueryRow(ctx context.Context, query string, args ...any) row
}

type rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

type row interface {
	Scan(dest ...any) error
}

// errNoRows is what row.Scan returns for an empty result, whichever the database.
var errNoRows = errors.New("no rows")

// --- SQLite through database/sql -----------------------------------------------------------

type sqlExecutor interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

type sqlDB struct{ x sqlExecutor }

func (d sqlDB) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	res, err := d.x.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (d sqlDB) Query(ctx context.Context, q string, args ...any) (rows, error) {
	r, err := d.x.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{r}, nil
}

func (d sqlDB) QueryRow(ctx context.Context, q string, args ...any) row {
	return sqlRow{d.x.QueryRowContext(ctx, q, args...)}
}

type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { _ = r.Rows.Close() }

type sqlRow struct{ r *sql.Row }

func (r sqlRow) Scan(dest ...any) error {
	err := r.r.Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return errNoRows
	}
	return err
}

// --- Postgres through pgx ------------------------------------------------------------------

type pgxExecutor interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

type pgDB struct{ x pgxExecutor }

func (d pgDB) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	tag, err := d.x.Exec(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

func (d pgDB) Query(ctx context.Context, q string, args ...any) (rows, error) {
	r, err := d.x.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return r, nil
}

func (d pgDB) QueryRow(ctx context.Context, q string, args ...any) row {
	return pgRow{d.x.QueryRow(ctx, q, args...)}
}

type pgRow struct{ r pgx.Row }

func (r pgRow) Scan(dest ...any) error {
	err := r.r.Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return errNoRows
	}
	return err
}

var (
	_ dbtx = sqlDB{}
	_ dbtx = pgDB{}
)
