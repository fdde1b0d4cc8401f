// Command aster runs untrusted code in throwaway hardened sandboxes and reviews
// pull requests with them. See `aster --help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/asterhq/aster/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], cli.IO{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, Environ: os.Environ})
	stop()
	os.Exit(code)
}
