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

const columns = "id, name, created"

func Insert(db *sql.DB, id, name string) error {
	_, err := db.Exec(`INSERT INTO users (`+columns+`) VALUES ($1, $2, now())`, id, name)
	return err
}
