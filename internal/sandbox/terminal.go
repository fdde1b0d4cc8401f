package sandbox

import (
	"context"
	"io"
	"maps"
	"time"

	"github.com/asterhq/aster/internal/initproto"
)

// TermSize is a terminal's size in character cells (1 to
// initproto.MaxTermSize each way).
type TermSize = initproto.TermSize

// Terminal is the terminal of a job: aster-init allocates it inside the
// sandbox, so the host only ever relays bytes. Its output arrives as stdout
// (Job.OnOutput), Job.Stdin is typed into it, and every size sent on Resize
// is passed on while the job runs.
type Terminal struct {
	Size   TermSize
	Resize <-chan TermSize
}

// TerminalSpec asks for an interactive terminal in a session.
type TerminalSpec struct {
	// Argv is the command on the terminal; empty means a login shell (bash
	// where the image has it, else sh).
	Argv []string
	// Env is added to the session's; TERM defaults to xterm-256color.
	Env     map[string]string
	Workdir string
	Size    TermSize
	// Input is typed into the terminal; its EOF closes the input side only.
	Input io.Reader
	// Output gets the terminal's output as it comes. It may block: the
	// terminal's programs then block on their writes, so a flood is paced
	// by the reader, never buffered on the host.
	Output func([]byte)
	// Resize carries later sizes.
	Resize <-chan TermSize
}

// terminalCapture is how much of a terminal's output the Result keeps: the
// output is streamed, not gathered.
const terminalCapture = 4 << 10

// terminalCeiling is a terminal job's output ceiling: none (init does not
// apply one to a terminal), kept far from overflow in the host's check.
const terminalCeiling = 1 << 62

// Terminal runs a command on a terminal in the session until it exits, ctx
// ends (the terminal's process session is then ended) or the session ends.
// It counts as one of the session's running commands. The Result says how
// the command ended, as an exec's does.
func (s *Sandbox) Terminal(ctx context.Context, t TerminalSpec) (Result, error) {
	if err := t.Size.Validate(); err != nil {
		err = Invalidf("%v", err)
		return failedExec(s, err), err
	}
	if err := checkEnv(t.Env); err != nil {
		return failedExec(s, err), err
	}
	argv := t.Argv
	if len(argv) == 0 {
		argv = []string{"/bin/sh", "-c", "if command -v bash >/dev/null; then exec bash -l; fi; exec sh -l"}
	}
	env := maps.Clone(s.env)
	if env == nil {
		env = map[string]string{}
	}
	env["TERM"] = "xterm-256color"
	maps.Copy(env, t.Env)
	l := s.limits
	// The terminal lives as long as the session may; the session's end
	// ends it before this deadline.
	l.TimeoutMS = max(s.expires.Sub(s.m.clock()).Milliseconds(), 1) + time.Second.Milliseconds()
	l.OutputBytes = terminalCapture
	l.OutputCeilingBytes = terminalCeiling
	job := Job{Argv: argv, Env: env, Workdir: t.Workdir, Stdin: t.Input, Limits: l,
		Terminal: &Terminal{Size: t.Size, Resize: t.Resize}}
	if t.Output != nil {
		job.OnOutput = func(_ Stream, b []byte) { t.Output(b) }
	}
	if _, err := JobHeader(job); err != nil {
		return failedExec(s, err), err
	}
	// A terminal is a command of the session: the same way out as an exec.
	job, release := s.withEgress(job)
	defer release()
	return s.exec(ctx, job)
}
