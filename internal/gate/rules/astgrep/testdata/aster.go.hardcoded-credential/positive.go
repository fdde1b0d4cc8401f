package config

// ruleid: aster.go.hardcoded-credential
const dbPassword = "h7Gq2vLx9Rk"

type DB struct{ User, Password string }

func Default() DB {
	// ruleid: aster.go.hardcoded-credential
	return DB{User: "app", Password: "Zr8!kQ2pLw"}
}

func Client() string {
	// ruleid: aster.go.hardcoded-credential
	apiKey := "AKd93jfLq0wZ"
	return apiKey
}
