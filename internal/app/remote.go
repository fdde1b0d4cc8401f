package app

import (
	"context"
	"fmt"
	"io"

	"github.com/asterhq/aster/client"
	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/remote"
)

// RemoteSandbox runs the pipeline's sandboxes on a remote `aster sandbox serve`
// (--sandbox-url): the process holding the App's key then never shares a host kernel with
// the repository's code. Limits left zero take the server's defaults.
type RemoteSandbox struct {
	Client *client.Client
}

var _ gate.Sandbox = RemoteSandbox{}

// Run implements gate.Sandbox.
func (r RemoteSandbox) Run(ctx context.Context, spec sandbox.Spec) (sandbox.Result, error) {
	job := client.Job{
		Image: spec.Image, Files: spec.Workspace.Files, Snapshot: spec.Workspace.Tar, Env: spec.Env,
		Workdir: spec.Workdir, Limits: remote.WireLimits(spec.Limits), OnOutput: spec.OnOutput,
	}
	if spec.Stdin != nil {
		b, err := io.ReadAll(io.LimitReader(spec.Stdin, config.DefaultMaxBodyBytes+1))
		if err != nil {
			return sandbox.Result{Status: sandbox.StatusError}, fmt.Errorf("%w: read stdin: %v", sandbox.ErrInvalidSpec, err)
		}
		if len(b) > config.DefaultMaxBodyBytes {
			return sandbox.Result{Status: sandbox.StatusError}, fmt.Errorf("%w: stdin over %d bytes", sandbox.ErrTooLarge, config.DefaultMaxBodyBytes)
		}
		job.Stdin = b
	}
	out, err := r.Client.Execute(ctx, client.ExecuteOptions{Argv: spec.Argv, Job: job})
	res, cerr := sandbox.FromWire(out.Result)
	if cerr != nil && err == nil {
		err = fmt.Errorf("decode result: %w", cerr)
	}
	if err != nil && res.Status == "" {
		res.Status = sandbox.StatusError
		res.Error = err.Error()
	}
	return res, err
}
