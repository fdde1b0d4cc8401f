package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/client"
)

// Run a Python snippet in a fresh sandbox on a server started with
// `aster sandbox serve`, with a two-second timeout and 256 MiB of memory.
func ExampleClient_Execute() {
	c, err := client.New(client.Options{BaseURL: "http://127.0.0.1:8080", Token: os.Getenv("ASTER_TOKEN")})
	if err != nil {
		log.Fatal(err)
	}
	res, err := c.Execute(context.Background(), client.ExecuteOptions{
		Argv: []string{"python3", "main.py"},
		Job: client.Job{
			Files:  map[string][]byte{"main.py": []byte("print(6 * 7)\n")},
			Limits: api.Limits{Timeout: "2s", Memory: "256m"},
		},
	})
	switch {
	case errors.Is(err, api.ErrBusy):
		log.Fatal("the server is at capacity; try again later")
	case err != nil:
		log.Fatal(err)
	}
	fmt.Printf("%s (exit %d): %s", res.Result.Status, res.Result.ExitCode, res.Stdout)
}
