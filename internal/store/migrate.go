package store

import (
	"context"
	"fmt"
	"strings"
)

// migration is one step of Aster's own schema, with its text for each database. Only the
// identity column differs; everything else is SQL both accept.
type migration struct {
	version int
	name    string
	sql     func(identity string) string
}

var migrations = []migration{
	{version: 1, name: "deliveries, installations, pulls, runs, reviews", sql: func(identity string) string {
		return `
CREATE TABLE aster_deliveries (
	delivery_id TEXT PRIMARY KEY,
	event       TEXT NOT NULL,
	action      TEXT NOT NULL DEFAULT '',
	repo        TEXT NOT NULL DEFAULT '',
	number      INTEGER NOT NULL DEFAULT 0,
	head_sha    TEXT NOT NULL DEFAULT '',
	sender      TEXT NOT NULL DEFAULT '',
	outcome     TEXT NOT NULL,
	job_id      BIGINT,
	received_at BIGINT NOT NULL
);
CREATE INDEX aster_deliveries_received ON aster_deliveries (received_at);
CREATE TABLE aster_installations (
	installation_id BIGINT PRIMARY KEY,
	account         TEXT NOT NULL,
	action          TEXT NOT NULL,
	repositories    TEXT NOT NULL,
	sender          TEXT NOT NULL,
	updated_at      BIGINT NOT NULL
);
CREATE TABLE aster_pulls (
	owner             TEXT NOT NULL,
	repo              TEXT NOT NULL,
	number            INTEGER NOT NULL,
	installation_id   BIGINT NOT NULL,
	requested_sha     TEXT NOT NULL DEFAULT '',
	cause             TEXT NOT NULL DEFAULT '',
	force_seq         INTEGER NOT NULL DEFAULT 0,
	force_done        INTEGER NOT NULL DEFAULT 0,
	force_by          TEXT NOT NULL DEFAULT '',
	waiting_job       BIGINT,
	running_job       BIGINT,
	lease_owner       TEXT NOT NULL DEFAULT '',
	lease_until       BIGINT NOT NULL DEFAULT 0,
	last_reviewed_sha TEXT NOT NULL DEFAULT '',
	updated_at        BIGINT NOT NULL,
	PRIMARY KEY (owner, repo, number)
);
CREATE INDEX aster_pulls_lease ON aster_pulls (lease_owner);
CREATE TABLE aster_runs (
	owner         TEXT NOT NULL,
	repo          TEXT NOT NULL,
	number        INTEGER NOT NULL,
	head_sha      TEXT NOT NULL,
	since_sha     TEXT NOT NULL DEFAULT '',
	job_id        BIGINT NOT NULL DEFAULT 0,
	result        TEXT,
	check_run_id  BIGINT NOT NULL DEFAULT 0,
	review_posted INTEGER NOT NULL DEFAULT 0,
	review_id     BIGINT NOT NULL DEFAULT 0,
	summary_id    BIGINT NOT NULL DEFAULT 0,
	check_done    INTEGER NOT NULL DEFAULT 0,
	started_at    BIGINT NOT NULL,
	updated_at    BIGINT NOT NULL,
	PRIMARY KEY (owner, repo, number, head_sha)
);
CREATE TABLE aster_reviews (
	id              ` + identity + `,
	owner           TEXT NOT NULL,
	repo            TEXT NOT NULL,
	number          INTEGER NOT NULL,
	head_sha        TEXT NOT NULL DEFAULT '',
	base_sha        TEXT NOT NULL DEFAULT '',
	since_sha       TEXT NOT NULL DEFAULT '',
	cause           TEXT NOT NULL DEFAULT '',
	outcome         TEXT NOT NULL,
	conclusion      TEXT NOT NULL DEFAULT '',
	findings        INTEGER NOT NULL DEFAULT 0,
	reported        INTEGER NOT NULL DEFAULT 0,
	comments        INTEGER NOT NULL DEFAULT 0,
	inline_comments INTEGER NOT NULL DEFAULT 0,
	input_tokens    BIGINT NOT NULL DEFAULT 0,
	output_tokens   BIGINT NOT NULL DEFAULT 0,
	cost_usd        DOUBLE PRECISION NOT NULL DEFAULT 0,
	durations       TEXT NOT NULL DEFAULT '{}',
	reason          TEXT NOT NULL DEFAULT '',
	job_id          BIGINT NOT NULL DEFAULT 0,
	attempt         INTEGER NOT NULL DEFAULT 0,
	started_at      BIGINT NOT NULL,
	finished_at     BIGINT NOT NULL
);
CREATE INDEX aster_reviews_pull ON aster_reviews (owner, repo, number, finished_at);
CREATE INDEX aster_reviews_finished ON aster_reviews (finished_at)`
	}},
	{version: 2, name: "review commands by comment, running head, case-insensitive delivery ids", sql: func(string) string {
		// Keep one row per delivery id up to case (the byte-wise smallest), then lower-case
		// them all, so the id compares case-insensitively from now on.
		return `
DELETE FROM aster_deliveries WHERE EXISTS (SELECT 1 FROM aster_deliveries d2
	WHERE lower(d2.delivery_id) = lower(aster_deliveries.delivery_id) AND d2.delivery_id < aster_deliveries.delivery_id);
UPDATE aster_deliveries SET delivery_id = lower(delivery_id) WHERE delivery_id <> lower(delivery_id);
CREATE TABLE aster_commands (
	comment_id  BIGINT NOT NULL,
	updated_at  BIGINT NOT NULL,
	owner       TEXT NOT NULL,
	repo        TEXT NOT NULL,
	number      INTEGER NOT NULL,
	delivery_id TEXT NOT NULL,
	sender      TEXT NOT NULL DEFAULT '',
	received_at BIGINT NOT NULL,
	PRIMARY KEY (comment_id, updated_at)
);
ALTER TABLE aster_pulls ADD COLUMN running_sha TEXT NOT NULL DEFAULT ''`
	}},
	{version: 3, name: "deliveries by job", sql: func(string) string {
		// A claim asks whether any pull_request delivery chose its job.
		return `CREATE INDEX aster_deliveries_job ON aster_deliveries (job_id)`
	}},
	{version: 4, name: "dismissed findings", sql: func(string) string {
		return `
CREATE TABLE aster_dismissals (
	owner      TEXT NOT NULL,
	repo       TEXT NOT NULL,
	finding_id TEXT NOT NULL,
	number     INTEGER NOT NULL DEFAULT 0,
	path       TEXT NOT NULL DEFAULT '',
	by_login   TEXT NOT NULL,
	reason     TEXT NOT NULL DEFAULT '',
	created_at BIGINT NOT NULL,
	PRIMARY KEY (owner, repo, finding_id)
)`
	}},
	{version: 5, name: "paused pull requests, pull request commands, resolved threads", sql: func(string) string {
		// Commands stored before are review commands, handled through force_seq: done.
		return `
ALTER TABLE aster_pulls ADD COLUMN paused_by TEXT NOT NULL DEFAULT '';
ALTER TABLE aster_pulls ADD COLUMN paused_at BIGINT NOT NULL DEFAULT 0;
ALTER TABLE aster_pulls ADD COLUMN threads_seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE aster_pulls ADD COLUMN threads_done INTEGER NOT NULL DEFAULT 0;
ALTER TABLE aster_commands ADD COLUMN name TEXT NOT NULL DEFAULT '';
ALTER TABLE aster_commands ADD COLUMN done INTEGER NOT NULL DEFAULT 1;
CREATE INDEX aster_commands_pull ON aster_commands (owner, repo, number, done)`
	}},
}

func (s *Store) identity() string {
	if s.kind == KindPostgres {
		return "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY"
	}
	return "INTEGER PRIMARY KEY AUTOINCREMENT"
}

// migrate brings River's tables and Aster's to the current version, once per database even
// when replicas start together.
func (s *Store) migrate(ctx context.Context) error {
	unlock, err := s.e.lockMigrations(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if err := s.e.migrateRiver(ctx); err != nil {
		return err
	}
	if _, err := s.db.Exec(ctx, `CREATE TABLE IF NOT EXISTS aster_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`); err != nil {
		return fmt.Errorf("migrations table: %w", err)
	}
	return s.e.inTx(ctx, func(t *txn) error {
		var current int
		if err := t.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM aster_migrations`).Scan(&current); err != nil {
			return fmt.Errorf("schema version: %w", err)
		}
		if current > migrations[len(migrations)-1].version {
			return fmt.Errorf("database schema version %d is newer than this aster knows (%d): upgrade aster",
				current, migrations[len(migrations)-1].version)
		}
		for _, m := range migrations {
			if m.version <= current {
				continue
			}
			for _, stmt := range strings.Split(m.sql(s.identity()), ";\n") {
				if strings.TrimSpace(stmt) == "" {
					continue
				}
				if _, err := t.Exec(ctx, stmt); err != nil {
					return fmt.Errorf("migration %d (%s): %w", m.version, m.name, err)
				}
			}
			if _, err := t.Exec(ctx, `INSERT INTO aster_migrations (version, name, applied_at) VALUES ($1, $2, $3)`,
				m.version, m.name, nowMS()); err != nil {
				return fmt.Errorf("migration %d: %w", m.version, err)
			}
		}
		return nil
	})
}
