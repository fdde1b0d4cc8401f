// Command aster-client-example runs a Python snippet in a fresh sandbox on an
// Aster server (`aster sandbox serve`) through the public Go client. It is a
// module of its own, so it can only use what another project could:
// github.com/asterhq/aster/client and github.com/asterhq/aster/api.
//
//	go run . -server http://127.0.0.1:8080 -token-file tokens 'print(6 * 7)'
//
// The token is the first line of -token-file, or $ASTER_TOKEN.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/client"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	code, err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "aster-client-example:", err)
	}
	os.Exit(code)
}

// run executes the snippet and returns the process exit code: the
// snippet's own, 2 for a bad request, 3 when the server is busy or down.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("aster-client-example", flag.ContinueOnError)
	fs.SetOutput(stderr)
	server := fs.String("server", "http://127.0.0.1:8080", "the `URL` of aster sandbox serve")
	tokenFile := fs.String("token-file", "", "read the bearer token from this `file` (default: $ASTER_TOKEN)")
	timeout := fs.String("timeout", "10s", "the run's wall-clock limit")
	memory := fs.String("memory", "256m", "the run's memory limit")
	if err := fs.Parse(args); err != nil {
		return 2, err
	}
	snippet := "print(6 * 7)"
	if fs.NArg() > 0 {
		snippet = fs.Arg(0)
	}
	token := os.Getenv("ASTER_TOKEN")
	if *tokenFile != "" {
		t, err := client.ReadTokenFile(*tokenFile)
		if err != nil {
			return 2, err
		}
		token = t
	}
	c, err := client.New(client.Options{BaseURL: *server, Token: token, UserAgent: "aster-client-example"})
	if err != nil {
		return 2, err
	}
	res, err := c.Execute(ctx, client.ExecuteOptions{
		Argv: []string{"python3", "main.py"},
		Job: client.Job{
			Files:  map[string][]byte{"main.py": []byte(snippet + "\n")},
			Limits: api.Limits{Timeout: api.Quantity(*timeout), Memory: api.Quantity(*memory)},
		},
	})
	switch {
	case errors.Is(err, api.ErrInvalidSpec), errors.Is(err, api.ErrTooLarge), errors.Is(err, api.ErrUnauthorized):
		return 2, err
	case client.IsRetryable(err):
		return 3, fmt.Errorf("%w (try again later)", err)
	case err != nil:
		return 1, err
	}
	stdout.Write(res.Stdout)
	stderr.Write(res.Stderr)
	fmt.Fprintf(stderr, "run %s: %s in %dms\n", res.RunID, res.Result.Status, res.Result.DurationMS)
	if res.Result.Status != api.StatusOK {
		if res.Result.ExitCode > 0 {
			return res.Result.ExitCode, nil
		}
		return 1, fmt.Errorf("the run ended %s", res.Result.Status)
	}
	return 0, nil
}
