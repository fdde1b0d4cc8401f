package mcpserver

import (
	"context"

	"github.com/asterhq/aster/internal/sandbox"
)

// Executor runs one spec in a fresh sandbox and destroys it. It is the only
// thing the execute tool needs from the sandbox layer, so the in-process
// Manager and the remote orchestrator client both fit behind it.
//
// Like sandbox.Manager.Run, the Result always carries a Status, and err is
// classified with the sandbox error classes (ErrInvalidSpec, ErrBusy, ...).
// Cancelling ctx must kill the sandbox before Execute returns.
type Executor interface {
	Execute(ctx context.Context, spec sandbox.Spec, opts ExecOptions) (sandbox.Result, error)
}

// ExecOptions are per-call hooks an Executor calls when it can.
type ExecOptions struct {
	// Admitted, when set, is called once the run holds a sandbox slot (it
	// was queued until then). Executors that cannot tell leave it uncalled.
	Admitted func()
}

// Local adapts an in-process sandbox.Manager to Executor.
type Local struct{ Manager *sandbox.Manager }

var _ Executor = Local{}

// Execute runs spec on the Manager.
func (l Local) Execute(ctx context.Context, spec sandbox.Spec, opts ExecOptions) (sandbox.Result, error) {
	return l.Manager.RunWithOptions(ctx, spec, sandbox.RunOptions{Admitted: opts.Admitted})
}
