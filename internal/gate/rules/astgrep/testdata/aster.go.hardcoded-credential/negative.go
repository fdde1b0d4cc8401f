package config

import "os"

const passwordEnv = "DB_PASSWORD"

type DB struct{ User, Password string }

func FromEnv() DB {
	return DB{User: "app", Password: os.Getenv(passwordEnv)}
}

func Empty() DB {
	return DB{Password: ""}
}
