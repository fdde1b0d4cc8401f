package mcpserver

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/client"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/remote"
)

// Remote adapts the orchestrator client (a remote `aster sandbox serve`) to
// Executor. Output streams back as the job writes it; cancelling ctx ends
// the request, and the orchestrator then destroys the sandbox.
type Remote struct {
	Client *client.Client
	// MaxStdinBytes caps the stdin sent in one request (it travels in the
	// body); zero means 64 MiB.
	MaxStdinBytes int64
}

var _ Executor = Remote{}

// Execute runs spec on the orchestrator. The API does not report admission,
// so Admitted is called when the first output arrives.
func (r Remote) Execute(ctx context.Context, spec sandbox.Spec, opts ExecOptions) (sandbox.Result, error) {
	job := client.Job{
		Image:    spec.Image,
		Files:    spec.Workspace.Files,
		Snapshot: spec.Workspace.Tar,
		Env:      spec.Env,
		Workdir:  spec.Workdir,
		Limits:   remote.WireLimits(spec.Limits),
	}
	if spec.Stdin != nil {
		max := r.MaxStdinBytes
		if max <= 0 {
			max = 64 << 20
		}
		b, err := io.ReadAll(io.LimitReader(spec.Stdin, max+1))
		if err != nil {
			return failedResult(spec, err), err
		}
		if int64(len(b)) > max {
			err := fmt.Errorf("%w: stdin is over %s, the most a remote run takes", sandbox.ErrTooLarge, humanBytes(max))
			return failedResult(spec, err), err
		}
		job.Stdin = b
	}
	var once sync.Once
	job.OnOutput = func(s api.Stream, b []byte) {
		if opts.Admitted != nil {
			once.Do(opts.Admitted)
		}
		if spec.OnOutput != nil {
			spec.OnOutput(s, b)
		}
	}
	out, err := r.Client.Execute(ctx, client.ExecuteOptions{Argv: spec.Argv, Job: job})
	if err != nil && out.Result.ID == "" {
		return failedResult(spec, err), err
	}
	res, cerr := sandbox.FromWire(out.Result)
	if cerr != nil && err == nil {
		err = fmt.Errorf("decode result: %w", cerr)
	}
	return res, err
}

func failedResult(spec sandbox.Spec, err error) sandbox.Result {
	return sandbox.Result{ID: spec.ID, Status: sandbox.StatusError, ExitCode: -1, Image: spec.Image, Error: err.Error()}
}
