package store

import (
	"context"
	"database/sql"
	"fmt"
)

func ByName(db *sql.DB, name string) (*sql.Rows, error) {
	// ruleid: aster.go.sql-injection
	return db.Query(fmt.Sprintf("SELECT id FROM users WHERE name = '%s'", name))
}

func Delete(ctx context.Context, db *sql.DB, id string) error {
	// ruleid: aster.go.sql-injection
	_, err := db.ExecContext(ctx, "DELETE FROM sessions WHERE id = "+id)
	return err
}

func Search(db *sql.DB, term string) (*sql.Rows, error) {
	// ruleid: aster.go.sql-injection
	q := fmt.Sprintf("SELECT id FROM items WHERE title LIKE '%%%s%%'", term)
	return db.Query(q)
}
