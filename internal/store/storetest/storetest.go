// Package storetest gives tests a database for internal/store: Postgres when
// ASTER_TEST_POSTGRES_URL is set (scripts/postgres-test.sh starts a throwaway server and
// prints it), each test in a schema of its own.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// PostgresEnv names the variable holding the test server's URL.
const PostgresEnv = "ASTER_TEST_POSTGRES_URL"

// PostgresURL returns a URL to a fresh schema of the database named by
// ASTER_TEST_POSTGRES_URL, dropped when the test ends; without the variable the test is
// skipped.
func PostgresURL(t testing.TB) string {
	t.Helper()
	base := os.Getenv(PostgresEnv)
	if base == "" {
		if os.Getenv("CI") != "" {
			t.Fatal(PostgresEnv + " not set under CI (scripts/postgres-test.sh starts a throwaway server; make test sets it)")
		}
		t.Skip(PostgresEnv + " not set (scripts/postgres-test.sh starts a throwaway server)")
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "aster_test_" + hex.EncodeToString(b)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("postgres: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			return
		}
		defer c.Close(ctx)
		_, _ = c.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
