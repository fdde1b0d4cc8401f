package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/client"
	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/remote"
	"github.com/asterhq/aster/internal/units"
)

// runExecRemote is `aster exec --server URL`: the same flags and the same
// output, with the sandbox made by a remote `aster sandbox serve`. Limits the
// flags leave unset take the server's defaults, not this machine's config.
func runExecRemote(cmd *cobra.Command, g *globals, f *execFlags, c config.Config, args []string) error {
	spec, cleanup, err := f.spec(c, args, g.stdio)
	if cleanup != nil {
		defer cleanup()
	}
	if err != nil {
		return err
	}
	// Only the limits the flags set travel (checked by f.spec already): the
	// rest are the server's to decide. The kept-output budget always
	// travels, because the text output shows the head live and the rest
	// from the result, so the budget that splits them must be the run's.
	var limits sandbox.Limits
	asked := f.limits()
	for _, lf := range sandbox.LimitFields() {
		if *asked.Field(lf.Name) != "" {
			*lf.Of(&limits) = *lf.Of(&spec.Limits)
		}
	}
	limits.OutputBytes = spec.Limits.OutputBytes

	token := ""
	if f.tokenFile != "" {
		if token, err = client.ReadTokenFile(f.tokenFile); err != nil {
			return usageErr("%v", err)
		}
	}
	cl, err := client.New(client.Options{BaseURL: f.server, Token: token, UserAgent: "aster/" + Version()})
	if err != nil {
		return usageErr("--server: %v", err)
	}
	job := client.Job{
		Image:    f.image,
		Files:    spec.Workspace.Files,
		Snapshot: spec.Workspace.Tar,
		Env:      spec.Env,
		Workdir:  spec.Workdir,
		Limits:   remote.WireLimits(limits),
	}
	if spec.Stdin != nil {
		b, err := io.ReadAll(io.LimitReader(spec.Stdin, config.DefaultMaxBodyBytes+1))
		if err != nil {
			return usageErr("--stdin: %v", err)
		}
		if len(b) > config.DefaultMaxBodyBytes {
			return usageErr("--stdin: more than %s; a remote run's stdin travels in the request", units.FormatBytes(config.DefaultMaxBodyBytes))
		}
		job.Stdin = b
	}
	var live *liveOutput
	if !f.json {
		live = newLiveOutput(g.stdio.Stdout, g.stdio.Stderr, limits.OutputBytes)
		job.OnOutput = live.write
	}
	out, runErr := cl.Execute(cmd.Context(), client.ExecuteOptions{Argv: args, Job: job})
	if runErr != nil && out.Result.ID == "" {
		return remoteExecErr(runErr)
	}
	res, err := sandbox.FromWire(out.Result)
	if err != nil {
		return &exitError{code: ExitSandbox, err: fmt.Errorf("decode result: %w", err)}
	}
	if f.json {
		enc := json.NewEncoder(g.stdio.Stdout)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(out.Result); err != nil {
			return &exitError{code: ExitSandbox, err: err}
		}
	} else {
		live.finish(res)
		sayStatus(g.stdio.Stderr, res)
	}
	return resultExit(res)
}

// sayStatus tells, on w, how a remote run ended when it did not end by itself
// (a timeout, an OOM kill, an output limit, an error).
func sayStatus(w io.Writer, res sandbox.Result) {
	switch res.Status {
	case sandbox.StatusOK, sandbox.StatusExitNonzero:
	default:
		fmt.Fprintf(w, "aster: %s: %s\n", res.Status, res.Error)
	}
}

// resultExit is the exit status aster gives a run's result (the command's own,
// 124 on timeout, 137 when OOM-killed, ...).
func resultExit(res sandbox.Result) error {
	if code := res.CLIExitCode(); code != 0 {
		return &exitError{code: code}
	}
	return nil
}

// remoteExecErr gives a refused remote run the exit status a local one
// would have: 2 for a bad request, 126 when no sandbox could run it.
func remoteExecErr(err error) error {
	var ae *client.APIError
	msg := err.Error()
	if errors.As(err, &ae) {
		msg = ae.Message
		if ae.RetryAfter > 0 {
			msg += fmt.Sprintf(" (the server says retry in %s)", ae.RetryAfter)
		}
	}
	msg = strings.TrimPrefix(msg, sandbox.ErrInvalidSpec.Error()+": ")
	switch {
	case errors.Is(err, sandbox.ErrInvalidSpec), errors.Is(err, sandbox.ErrUnknownImage), errors.Is(err, sandbox.ErrTooLarge):
		return usageErr("%s", msg)
	case errors.Is(err, api.ErrUnauthorized), errors.Is(err, api.ErrForbidden):
		// Nothing ran; exit 1 would read as the command's own failure.
		return usageErr("--server refused the request: %s (pass --token-file with a token the server accepts)", msg)
	}
	return &exitError{code: ExitSandbox, err: errors.New(msg)}
}
