package store

import (
	"database/sql"
	"fmt"
)

const table = "users"

func ByName(db *sql.DB, name string) (*sql.Rows, error) {
	return db.Query("SELECT id FROM users WHERE name = $1", name)
}

func Label(name string) string {
	return fmt.Sprintf("SELECT %s FROM the menu", name)
}

func Count(db *sql.DB) *sql.Row {
	return db.QueryRow("SELECT count(*) FROM " + "users")
}
