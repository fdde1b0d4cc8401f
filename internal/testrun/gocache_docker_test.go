package testrun

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
)

// A Go plan starts with the image's warm build cache of the standard library
// in its writable GOCACHE, so `go test` does not compile the standard library
// first; the command a person sees is still their own.
func TestGoPlanSeedsBuildCache(t *testing.T) {
	mgr := sandboxtest.Manager(t, sandboxtest.Docker(t), 1)
	p := GoPlan()
	if got := strings.Join(p.Command(), " "); got != "go test -json ./..." {
		t.Fatalf("Command() = %q", got)
	}
	// The plan's wrapper with a probe in place of go test: count the files
	// the run finds in its cache before anything compiled.
	argv := append(p.Argv[:5:5], "sh", "-c", `find "$GOCACHE" -type f | wc -l`)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := mgr.Run(ctx, sandbox.Spec{Argv: argv, Env: p.Env,
		Limits: sandbox.Limits{TimeoutMS: 60_000, TmpBytes: p.TmpBytes(64<<20, 0)}})
	if err != nil || res.Status != sandbox.StatusOK {
		t.Fatalf("run: %v %s %s", err, res.Status, res.Stderr.Data)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(res.Stdout.Data)))
	if err != nil || n < 100 {
		t.Fatalf("GOCACHE holds %q files, want the image's cache (hundreds)", res.Stdout.Data)
	}
}
