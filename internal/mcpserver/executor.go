package mcpserver

import (
	"context"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/remote"
)

// Executor runs one spec in a fresh sandbox and destroys it. It is the only
// thing the tools need from the sandbox layer: an in-process
// *sandbox.Manager and a remote server (remote.Sandbox) both are one.
//
// Like sandbox.Manager.Run, the Result always carries a Status, and err is
// classified with the sandbox error classes (ErrInvalidSpec, ErrBusy, ...).
// Cancelling ctx must kill the sandbox before it returns. opts.Admitted,
// when set, is called once the run holds a sandbox slot (executors that
// cannot tell call it when the first output arrives, or never).
type Executor interface {
	RunWithOptions(ctx context.Context, spec sandbox.Spec, opts sandbox.RunOptions) (sandbox.Result, error)
}

var (
	_ Executor = (*sandbox.Manager)(nil)
	_ Executor = remote.Sandbox{}
)
