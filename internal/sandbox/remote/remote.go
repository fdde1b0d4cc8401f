package remote

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/client"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/units"
)

// DefaultMaxStdinBytes is Sandbox.MaxStdinBytes when zero: the default
// --max-body of `aster sandbox serve` (config.DefaultMaxBodyBytes, which a
// test in internal/config holds equal to it).
const DefaultMaxStdinBytes = 64 << 20

// Sandbox runs specs on a remote `aster sandbox serve`. It has the shape of
// sandbox.Manager's Run and RunWithOptions, so the review pipeline (a
// gate.Sandbox) and the MCP server (an mcpserver.Executor) take either: the
// process that holds secrets then never shares a kernel with the code it
// runs. Output streams back as the job writes it; cancelling ctx ends the
// request, and the server then destroys the sandbox. Limits left zero take
// the server's defaults.
type Sandbox struct {
	Client *client.Client
	// MaxStdinBytes caps the stdin sent in one request (it travels in the
	// body); zero is DefaultMaxStdinBytes.
	MaxStdinBytes int64
}

// Run runs spec on the server.
func (r Sandbox) Run(ctx context.Context, spec sandbox.Spec) (sandbox.Result, error) {
	return r.RunWithOptions(ctx, spec, sandbox.RunOptions{})
}

// RunWithOptions is Run with per-call hooks. The API does not report
// admission, so opts.Admitted is called when the first output arrives. Like
// the Manager's, the Result always has a Status and err is classified.
func (r Sandbox) RunWithOptions(ctx context.Context, spec sandbox.Spec, opts sandbox.RunOptions) (sandbox.Result, error) {
	if spec.Egress != nil || spec.Export != nil {
		// Neither travels over the API: a remote server applies its own
		// operator's egress policy (in /v1/test), and /v1/execute returns no
		// workspace. Refuse rather than run with less than was asked.
		err := fmt.Errorf("%w: egress and workspace export run on the server (POST /v1/test), not through a remote /v1/execute", sandbox.ErrInvalidSpec)
		return failed(spec, err), err
	}
	job := client.Job{
		Image:    spec.Image,
		Files:    spec.Workspace.Files,
		Snapshot: spec.Workspace.Tar,
		Env:      spec.Env,
		Workdir:  spec.Workdir,
		Limits:   WireLimits(spec.Limits),
	}
	if spec.Stdin != nil {
		max := r.MaxStdinBytes
		if max <= 0 {
			max = DefaultMaxStdinBytes
		}
		b, err := io.ReadAll(io.LimitReader(spec.Stdin, max+1))
		if err != nil {
			err = fmt.Errorf("%w: read stdin: %v", sandbox.ErrInvalidSpec, err)
			return failed(spec, err), err
		}
		if int64(len(b)) > max {
			err := fmt.Errorf("%w: stdin is over %s, the most a remote run takes", sandbox.ErrTooLarge, units.FormatBytes(max))
			return failed(spec, err), err
		}
		job.Stdin = b
	}
	if spec.OnOutput != nil || opts.Admitted != nil {
		var once sync.Once
		job.OnOutput = func(s api.Stream, b []byte) {
			if opts.Admitted != nil {
				once.Do(opts.Admitted)
			}
			if spec.OnOutput != nil {
				spec.OnOutput(s, b)
			}
		}
	}
	out, err := r.Client.Execute(ctx, client.ExecuteOptions{Argv: spec.Argv, Job: job})
	if err != nil && out.Result.ID == "" {
		return failed(spec, err), err
	}
	res, derr := sandbox.FromWire(out.Result)
	if derr != nil {
		if err == nil {
			err = fmt.Errorf("decode result: %w", derr)
		}
		return failed(spec, err), err
	}
	return res, err
}

// failed is the Result of a run that never came back: status error, the
// reason in Error.
func failed(spec sandbox.Spec, err error) sandbox.Result {
	return sandbox.Result{ID: spec.ID, Status: sandbox.StatusError, ExitCode: -1, Image: spec.Image, Error: err.Error(),
		Timings: map[string]time.Duration{}}
}
