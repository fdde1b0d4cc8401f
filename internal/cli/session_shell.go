package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/asterhq/aster/client"
)

func sessionShellCmd(g *globals, f *sessionFlags) *cobra.Command {
	var (
		cols, rows int
		name       string
	)
	cmd := &cobra.Command{
		Use:   "shell ID",
		Short: "Open an interactive terminal (a login shell) in a session",
		Long: `Open an interactive terminal in a session: a login shell (bash where the image has
it, else sh) on a terminal allocated inside the sandbox, as the session's user.
When standard input is a terminal it is put in raw mode (every key goes to the
sandbox, Ctrl-C included) and the remote terminal follows the local one's size.
Otherwise standard input is typed into the shell as it is, so a script can be
piped in: end it with 'exit' (at the end of the input aster types Ctrl-D, which
ends a shell idle at its prompt, but a Ctrl-D typed ahead while a command runs
reaches the shell as a plain byte).

aster exits with the shell's exit status once it exits; closing the terminal
ends every process it started (one started with setsid lives on in the session).

  aster session shell $id
  printf 'cd src && make\nexit\n' | aster session shell $id`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := f.client()
			if err != nil {
				return err
			}
			return runShell(cmd.Context(), g, cl, args[0], client.TerminalOptions{Cols: cols, Rows: rows, Name: name})
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&cols, "cols", 0, "columns of the terminal (default: the local terminal's, else 80)")
	fl.IntVar(&rows, "rows", 0, "rows of the terminal (default: the local terminal's, else 24)")
	fl.StringVar(&name, "name", "", "name the terminal (for POST .../pty/resize from elsewhere)")
	return cmd
}

// runShell relays a session's terminal to this process's stdio until the
// shell exits, and returns its exit status.
func runShell(ctx context.Context, g *globals, cl *client.Client, id string, o client.TerminalOptions) error {
	in, _ := g.stdio.Stdin.(*os.File)
	tty := in != nil && term.IsTerminal(int(in.Fd()))
	if tty && (o.Cols == 0 || o.Rows == 0) {
		if c, r, err := term.GetSize(int(in.Fd())); err == nil {
			o.Cols, o.Rows = max(o.Cols, c), max(o.Rows, r)
		}
	}
	t, err := cl.OpenTerminal(ctx, id, o)
	if err != nil {
		return remoteExecErr(err)
	}
	defer t.Close()
	if tty {
		old, err := term.MakeRaw(int(in.Fd()))
		if err != nil {
			return fmt.Errorf("raw mode for the terminal: %w", err)
		}
		defer term.Restore(int(in.Fd()), old)
		winch := make(chan os.Signal, 1)
		signal.Notify(winch, syscall.SIGWINCH)
		defer signal.Stop(winch)
		go func() {
			for range winch {
				if c, r, err := term.GetSize(int(in.Fd())); err == nil {
					_ = t.Resize(ctx, c, r)
				}
			}
		}()
	}
	go func() {
		if _, err := io.Copy(t, g.stdio.Stdin); err == nil && !tty {
			// The terminal's end-of-file: it ends a shell waiting at its
			// prompt (typed ahead of a running command it is a plain byte).
			_, _ = t.Write([]byte{4})
		}
	}()
	if _, err := io.Copy(g.stdio.Stdout, t); err != nil {
		return fmt.Errorf("terminal: %w", err)
	}
	reason := t.CloseReason()
	if code, ok := strings.CutPrefix(reason, "exit "); ok {
		if n, err := strconv.Atoi(code); err == nil {
			if n == 0 {
				return nil
			}
			return &exitError{code: n}
		}
	}
	return &exitError{code: ExitSandbox, err: fmt.Errorf("the terminal ended: %s", reason)}
}
