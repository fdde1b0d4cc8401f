// Command aster-openapi-go calls Aster's sandbox API through a client that
// oapi-codegen generates from /openapi.json, as an integrator would: nothing
// of Aster's own Go code is imported. scripts/test-clients.sh generates the
// package asterapi beside this file (oapi-codegen.yaml) and runs it against a
// real server:
//
//	go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2 \
//	    -config oapi-codegen.yaml aster-openapi.json
//	go run . -server http://127.0.0.1:8080 -token-file tokens
//
// It runs a snippet with /v1/execute, a pytest suite with /v1/test, sends a
// request the server refuses to show that a typed 4xx keeps its message, and
// submits an asynchronous run to /v1/runs and reads its result back by id.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"example.com/aster-openapi-go/asterapi"
)

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "aster-openapi-go:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("aster-openapi-go", flag.ContinueOnError)
	server := fs.String("server", "http://127.0.0.1:8080", "the `URL` of aster sandbox serve")
	tokenFile := fs.String("token-file", "", "read the bearer token from the first line of this `file`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var opts []asterapi.ClientOption
	if *tokenFile != "" {
		b, err := os.ReadFile(*tokenFile)
		if err != nil {
			return err
		}
		token := strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])
		opts = append(opts, asterapi.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			req.Header.Set("Authorization", "Bearer "+token)
			return nil
		}))
	}
	c, err := asterapi.NewClientWithResponses(*server, opts...)
	if err != nil {
		return err
	}

	// /v1/execute: files inline, the result typed.
	files := asterapi.Files{"main.py": text("print(6 * 7)\n")}
	ex, err := c.ExecuteWithResponse(ctx, nil, asterapi.ExecuteRequest{
		Argv:  asterapi.Argv{"python3", "main.py"},
		Files: &files,
	})
	if err != nil {
		return err
	}
	if ex.JSON200 == nil {
		return fmt.Errorf("execute: HTTP %d: %s", ex.StatusCode(), ex.Body)
	}
	fmt.Printf("execute: status=%s exit_code=%d stdout=%q\n", ex.JSON200.Status, ex.JSON200.ExitCode, ex.JSON200.Stdout)

	// /v1/test: a pytest suite, detected from its files; no install phase.
	suite := asterapi.Files{
		"calc.py":      text("def add(a, b):\n    return a + b\n"),
		"test_calc.py": text("from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n\ndef test_wrong():\n    assert add(2, 2) == 5\n"),
	}
	noSetup := []string{}
	tr, err := c.RunTestsWithResponse(ctx, nil, asterapi.TestRequest{Files: &suite, Setup: &noSetup})
	if err != nil {
		return err
	}
	if tr.JSON200 == nil {
		return fmt.Errorf("test: HTTP %d: %s", tr.StatusCode(), tr.Body)
	}
	fmt.Printf("test: status=%s passed=%d failed=%d\n", tr.JSON200.Status, tr.JSON200.Tests.Passed, tr.JSON200.Tests.Failed)

	// A refused request: the typed 400 keeps the server's code and message.
	bad, err := c.ExecuteWithResponse(ctx, nil, asterapi.ExecuteRequest{Argv: asterapi.Argv{}})
	if err != nil {
		return err
	}
	if bad.JSON400 == nil {
		return fmt.Errorf("an empty argv: HTTP %d, want a typed 400: %s", bad.StatusCode(), bad.Body)
	}
	if bad.JSON400.Error.Message == "" {
		return errors.New("the typed 400 lost the message")
	}
	fmt.Printf("refused: code=%s message=%q\n", bad.JSON400.Error.Code, bad.JSON400.Error.Message)

	// /v1/runs: the same execute body, answered at once; the result is
	// read back by id.
	argv := asterapi.Argv{"python3", "-c", "print('async')"}
	kind := asterapi.SubmitRunParamsKind("execute")
	sub, err := c.SubmitRunWithResponse(ctx, &asterapi.SubmitRunParams{Kind: &kind}, asterapi.AsyncRunRequest{Argv: &argv})
	if err != nil {
		return err
	}
	if sub.JSON202 == nil {
		return fmt.Errorf("submit: HTTP %d: %s", sub.StatusCode(), sub.Body)
	}
	fmt.Printf("submitted: state=%s\n", sub.JSON202.State)
	for deadline := time.Now().Add(2 * time.Minute); ; {
		got, err := c.GetRunWithResponse(ctx, sub.JSON202.Id)
		if err != nil {
			return err
		}
		if got.JSON200 == nil {
			return fmt.Errorf("run %s: HTTP %d: %s", sub.JSON202.Id, got.StatusCode(), got.Body)
		}
		if st := got.JSON200.State; st == "done" || st == "error" {
			if got.JSON200.Result == nil {
				return fmt.Errorf("run %s ended %s without a result", sub.JSON202.Id, st)
			}
			res, err := got.JSON200.Result.AsExecuteResult()
			if err != nil {
				return err
			}
			fmt.Printf("async: state=%s status=%s stdout=%q\n", st, res.Status, res.Stdout)
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("run %s still %s", sub.JSON202.Id, got.JSON200.State)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return nil
}

// text is a file given as UTF-8 text (File is a oneOf: text, or content
// with an encoding).
func text(s string) asterapi.File {
	var f asterapi.File
	if err := f.FromFileText(s); err != nil {
		panic(err) // a string always marshals
	}
	return f
}
