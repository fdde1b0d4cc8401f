package cli

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/client"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/units"
	"github.com/asterhq/aster/internal/workspace"
)

var _ = func() bool { extraCommands = append(extraCommands, newSessionCmd); return true }()

// sessionFlags are the flags every `aster session` command shares.
type sessionFlags struct {
	server, tokenFile string
	json              bool
}

func (f *sessionFlags) add(cmd *cobra.Command, getenv func(string) string) {
	fl := cmd.PersistentFlags()
	fl.StringVar(&f.server, "server", getenv("ASTER_SERVER"), "URL of the orchestrator (aster sandbox serve) that holds the sessions (default $ASTER_SERVER)")
	fl.StringVar(&f.tokenFile, "token-file", getenv("ASTER_TOKEN_FILE"), "file whose first line is the bearer token (default $ASTER_TOKEN_FILE)")
	fl.BoolVar(&f.json, "json", false, "print the server's JSON answer instead of text")
}

func (f *sessionFlags) client() (*client.Client, error) {
	if f.server == "" {
		return nil, usageErr("sessions live on a server: pass --server URL (or set ASTER_SERVER), e.g. --server http://127.0.0.1:8080 for `aster sandbox serve`")
	}
	token := ""
	if f.tokenFile != "" {
		var err error
		if token, err = client.ReadTokenFile(f.tokenFile); err != nil {
			return nil, usageErr("%v", err)
		}
	}
	cl, err := client.New(client.Options{BaseURL: f.server, Token: token, UserAgent: "aster/" + Version()})
	if err != nil {
		return nil, usageErr("--server: %v", err)
	}
	return cl, nil
}

func newSessionCmd(g *globals) *cobra.Command {
	f := &sessionFlags{}
	cmd := &cobra.Command{
		Use:   "session",
		Short: "Keep a sandbox alive across commands on an orchestrator: create, exec, put, get, ls, rm",
		Long: `A session is a sandbox that lives across calls: write a file in one command, run
it in the next, and the files and state under /work and /tmp are still there.
It has every limit and isolation of a one-shot run (no network, a non-root user,
capped memory, CPU, processes and disk) and ends at 'aster session rm', its TTL,
or its idle timeout. Sessions live on an orchestrator ('aster sandbox serve');
the commands below talk to it over its HTTP API (docs/sessions.md).

  export ASTER_SERVER=http://127.0.0.1:8080
  id=$(aster session create --ttl 30m)
  aster session put $id main.py
  aster session exec $id -- python3 main.py
  aster session get $id out.txt -
  aster session ls $id
  aster session push $id ./project src      # a local directory into /work/src
  snap=$(aster session snapshot $id)         # /work kept on the server
  fork=$(aster session create --from-snapshot $snap)
  aster session pause $id                    # frozen; any call resumes it
  aster session shell $id                    # an interactive terminal
  aster session rm $id`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	getenv := g.stdio.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	f.add(cmd, getenv)
	cmd.AddCommand(sessionCreateCmd(g, f), sessionListCmd(g, f), sessionExecCmd(g, f), sessionPutCmd(g, f),
		sessionGetCmd(g, f), sessionLsCmd(g, f), sessionRmCmd(g, f), sessionPushCmd(g, f), sessionPullCmd(g, f),
		sessionStateCmd(g, f, "pause"), sessionStateCmd(g, f, "resume"), sessionSnapshotCmd(g, f), sessionShellCmd(g, f))
	return cmd
}

func (f *sessionFlags) printJSON(g *globals, v any) error {
	enc := json.NewEncoder(g.stdio.Stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func sessionCreateCmd(g *globals, f *sessionFlags) *cobra.Command {
	var (
		image, ttl, idle string
		fromSnapshot     string
		env, files       []string
		memory, timeout  string
	)
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Open a session and print its id",
		Long: `Open a session on the server and print its id (with --json, the whole answer).

  aster session create --ttl 1h --idle-timeout 10m --env MODE=test --file main.py --file lib/util.py=./util.py`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := f.client()
			if err != nil {
				return err
			}
			req := api.SessionRequest{Image: image, TTL: api.Quantity(ttl), IdleTimeout: api.Quantity(idle), FromSnapshot: fromSnapshot,
				Limits: api.Limits{Memory: api.Quantity(memory), Timeout: api.Quantity(timeout)}}
			if req.Env, err = parseEnvPairs(env); err != nil {
				return err
			}
			if len(files) > 0 {
				req.Files = map[string]api.File{}
				for _, spec := range files {
					name, data, err := readFileArg(spec)
					if err != nil {
						return err
					}
					req.Files[name] = api.BinaryFile(data)
				}
			}
			s, err := cl.CreateSession(cmd.Context(), req)
			if err != nil {
				return remoteExecErr(err)
			}
			if f.json {
				return f.printJSON(g, s)
			}
			fmt.Fprintln(g.stdio.Stdout, s.ID)
			fmt.Fprintf(g.stdio.Stderr, "aster: session %s on %s (image %s); ends %s or after %s idle\n",
				s.ID, s.Runtime, s.Image, s.ExpiresAt.Local().Format(time.DateTime), units.FormatDuration(time.Duration(s.IdleTimeoutMS)*time.Millisecond))
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&image, "image", "", "image from the server's allowlist (default: the server's first)")
	fl.StringVar(&fromSnapshot, "from-snapshot", "", "start with the /work of this snapshot (from 'aster session snapshot'); --file files go over it")
	fl.StringVar(&ttl, "ttl", "", "the session's whole life, e.g. 30m (default: the server's)")
	fl.StringVar(&idle, "idle-timeout", "", "end the session after this long without a call, e.g. 10m (default: the server's)")
	fl.StringVar(&memory, "memory", "", "memory for all the session's commands together, e.g. 512m")
	fl.StringVar(&timeout, "timeout", "", "each command's wall-clock limit unless exec sets its own, e.g. 30s")
	fl.StringArrayVar(&env, "env", nil, "KEY=VALUE added to every command's environment (repeatable)")
	fl.StringArrayVar(&files, "file", nil, "LOCAL or NAME=LOCAL: a file placed under /work at the start (repeatable)")
	return cmd
}

// readFileArg reads "LOCAL" or "NAME=LOCAL"; the name under /work defaults to
// the local file's base name.
func readFileArg(spec string) (string, []byte, error) {
	name, local, ok := strings.Cut(spec, "=")
	if !ok {
		name, local = path.Base(spec), spec
	}
	data, err := os.ReadFile(local)
	if err != nil {
		return "", nil, usageErr("--file %s: %v", spec, err)
	}
	return name, data, nil
}

func parseEnvPairs(pairs []string) (map[string]string, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	env := make(map[string]string, len(pairs))
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, usageErr("--env %q: want KEY=VALUE", p)
		}
		env[k] = v
	}
	return env, nil
}

func sessionListCmd(g *globals, f *sessionFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List your token's sessions",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := f.client()
			if err != nil {
				return err
			}
			all, err := cl.Sessions(cmd.Context())
			if err != nil {
				return remoteExecErr(err)
			}
			if f.json {
				return f.printJSON(g, api.SessionList{Sessions: all})
			}
			tw := tabwriter.NewWriter(g.stdio.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tIMAGE\tRUNTIME\tRUNNING\tLAST USED\tEXPIRES")
			for _, s := range all {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", s.ID, s.Image, s.Runtime, s.Running,
					s.LastUsedAt.Local().Format(time.DateTime), s.ExpiresAt.Local().Format(time.DateTime))
			}
			return tw.Flush()
		},
	}
}

func sessionExecCmd(g *globals, f *sessionFlags) *cobra.Command {
	var (
		env              []string
		workdir, timeout string
		stdin            bool
	)
	cmd := &cobra.Command{
		Use:   "exec ID -- COMMAND [ARG...]",
		Short: "Run a command in a session; its output and exit status are the command's",
		Long: `Run a command in a session. Its stdout and stderr are printed as they are in the
result, and aster exits with the command's exit status (124 on timeout, 137 when
OOM-killed, as aster exec). The session lives on whatever the command did.

  aster session exec $id -- python3 -m pytest -q
  echo 'print(1)' | aster session exec --stdin $id -- python3 -`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := f.client()
			if err != nil {
				return err
			}
			req := api.SessionExecRequest{Argv: args[1:], Workdir: workdir, Timeout: api.Quantity(timeout)}
			if req.Env, err = parseEnvPairs(env); err != nil {
				return err
			}
			if stdin {
				b, err := io.ReadAll(io.LimitReader(g.stdio.Stdin, 8<<20+1))
				if err != nil {
					return usageErr("--stdin: %v", err)
				}
				if len(b) > 8<<20 {
					return usageErr("--stdin: more than 8 MiB; put a large input with 'aster session put' instead")
				}
				req.Stdin = string(b)
				req.StdinEncoding = "utf-8"
				if !utf8.Valid(b) {
					req.Stdin, req.StdinEncoding = base64.StdEncoding.EncodeToString(b), "base64"
				}
			}
			out, err := cl.SessionExec(cmd.Context(), args[0], req)
			if err != nil && out.ID == "" {
				return remoteExecErr(err)
			}
			if f.json {
				if err := f.printJSON(g, out); err != nil {
					return err
				}
			}
			res, err := sandbox.FromWire(out)
			if err != nil {
				return &exitError{code: ExitSandbox, err: fmt.Errorf("decode result: %w", err)}
			}
			if !f.json {
				g.stdio.Stdout.Write(res.Stdout.Data)
				g.stdio.Stderr.Write(res.Stderr.Data)
				for _, o := range []struct {
					name string
					out  sandbox.Output
				}{{"stdout", res.Stdout}, {"stderr", res.Stderr}} {
					if o.out.Truncated {
						fmt.Fprintf(g.stdio.Stderr, "aster: %s truncated: %s of %s kept\n", o.name, units.FormatBytes(int64(len(o.out.Data))), units.FormatBytes(o.out.TotalBytes))
					}
				}
				sayStatus(g.stdio.Stderr, res)
			}
			return resultExit(res)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&env, "env", nil, "KEY=VALUE added to the session's environment for this command (repeatable)")
	fl.StringVar(&workdir, "workdir", "", "working directory relative to /work")
	fl.StringVar(&timeout, "timeout", "", "this command's wall-clock limit, e.g. 2m (default: the session's)")
	fl.BoolVar(&stdin, "stdin", false, "feed this process's standard input to the command (at most 8 MiB)")
	return cmd
}

func sessionPutCmd(g *globals, f *sessionFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "put ID LOCAL [PATH]",
		Short: "Copy a local file into a session's /work (PATH defaults to the file's name; LOCAL - is stdin)",
		Args:  cobra.RangeArgs(2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := f.client()
			if err != nil {
				return err
			}
			local, dest := args[1], path.Base(args[1])
			if len(args) == 3 {
				dest = args[2]
			}
			var data []byte
			if local == "-" {
				if len(args) < 3 {
					return usageErr("put from stdin needs the PATH to write in the session")
				}
				data, err = io.ReadAll(g.stdio.Stdin)
			} else {
				data, err = os.ReadFile(local)
			}
			if err != nil {
				return usageErr("%s: %v", local, err)
			}
			if err := cl.PutFile(cmd.Context(), args[0], dest, data); err != nil {
				return remoteExecErr(err)
			}
			fmt.Fprintf(g.stdio.Stderr, "aster: wrote /work/%s (%s)\n", strings.TrimPrefix(dest, "/work/"), units.FormatBytes(int64(len(data))))
			return nil
		},
	}
}

func sessionGetCmd(g *globals, f *sessionFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "get ID PATH [LOCAL]",
		Short: "Copy a file out of a session (LOCAL defaults to the file's name in this directory; - is stdout)",
		Args:  cobra.RangeArgs(2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := f.client()
			if err != nil {
				return err
			}
			data, err := cl.GetFile(cmd.Context(), args[0], args[1])
			if err != nil {
				return remoteExecErr(err)
			}
			local := path.Base(args[1])
			if len(args) == 3 {
				local = args[2]
			}
			if local == "-" {
				_, err := g.stdio.Stdout.Write(data)
				return err
			}
			// Never over an existing file that is not a regular one, never through a link.
			if fi, err := os.Lstat(local); err == nil && !fi.Mode().IsRegular() {
				return usageErr("%s exists and is not a regular file", local)
			}
			if err := os.WriteFile(local, data, 0o644); err != nil {
				return &exitError{code: ExitFailure, err: err}
			}
			fmt.Fprintf(g.stdio.Stderr, "aster: wrote %s (%s)\n", local, units.FormatBytes(int64(len(data))))
			return nil
		},
	}
}

func sessionLsCmd(g *globals, f *sessionFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "ls ID [DIR]",
		Short: "List a directory of a session's /work",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := f.client()
			if err != nil {
				return err
			}
			dir := ""
			if len(args) == 2 {
				dir = args[1]
			}
			l, err := cl.ListFiles(cmd.Context(), args[0], dir)
			if err != nil {
				return remoteExecErr(err)
			}
			if f.json {
				return f.printJSON(g, l)
			}
			tw := tabwriter.NewWriter(g.stdio.Stdout, 0, 4, 2, ' ', 0)
			for _, e := range l.Entries {
				name := e.Name
				if e.Type == "dir" {
					name += "/"
				}
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", e.Type, e.Size, e.ModTime.Local().Format(time.DateTime), name)
			}
			return tw.Flush()
		},
	}
}

func sessionRmCmd(g *globals, f *sessionFlags) *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "rm ID",
		Short: "End a session (its sandbox is destroyed with everything in it), or with --file remove one path",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := f.client()
			if err != nil {
				return err
			}
			if file != "" {
				if err := cl.DeleteFile(cmd.Context(), args[0], file); err != nil {
					return remoteExecErr(err)
				}
				return nil
			}
			if err := cl.DeleteSession(cmd.Context(), args[0]); err != nil {
				return remoteExecErr(err)
			}
			fmt.Fprintf(g.stdio.Stderr, "aster: session %s ended\n", args[0])
			return nil
		},
	}
	cmd.Flags().StringVar(&file, "file", "", "remove this file or directory of the session instead of ending it")
	return cmd
}

func sessionPushCmd(g *globals, f *sessionFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "push ID LOCALDIR [DIR]",
		Short: "Copy a local directory into a session (into /work, or /work/DIR), replacing files of the same names",
		Long: `Copy a local directory's tree into a session as one archive: into /work, or into
/work/DIR. Files of the same names are replaced; nothing else is removed.
Links are copied as links (the server refuses one that leaves the tree);
devices, sockets and FIFOs are skipped.`,
		Args: cobra.RangeArgs(2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := f.client()
			if err != nil {
				return err
			}
			dir := ""
			if len(args) == 3 {
				dir = args[2]
			}
			var buf bytes.Buffer
			st, _, err := workspace.PackDir(args[1], &buf, workspace.Caps{})
			if err != nil {
				return usageErr("%s: %v", args[1], err)
			}
			if err := cl.PutArchive(cmd.Context(), args[0], dir, &buf); err != nil {
				return remoteExecErr(err)
			}
			fmt.Fprintf(g.stdio.Stderr, "aster: copied %d entries (%s) into /work/%s\n", st.Files, units.FormatBytes(st.Bytes), dir)
			return nil
		},
	}
}

func sessionPullCmd(g *globals, f *sessionFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "pull ID [DIR] ARCHIVE.tar",
		Short: "Save a directory of a session (/work, or /work/DIR) as a tar archive (- is stdout)",
		Args:  cobra.RangeArgs(2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := f.client()
			if err != nil {
				return err
			}
			dir, out := "", args[1]
			if len(args) == 3 {
				dir, out = args[1], args[2]
			}
			b, err := cl.GetArchive(cmd.Context(), args[0], dir)
			if err != nil {
				return remoteExecErr(err)
			}
			if out == "-" {
				_, err := g.stdio.Stdout.Write(b)
				return err
			}
			if fi, err := os.Lstat(out); err == nil && !fi.Mode().IsRegular() {
				return usageErr("%s exists and is not a regular file", out)
			}
			if err := os.WriteFile(out, b, 0o644); err != nil {
				return &exitError{code: ExitFailure, err: err}
			}
			fmt.Fprintf(g.stdio.Stderr, "aster: wrote %s (%s)\n", out, units.FormatBytes(int64(len(b))))
			return nil
		},
	}
}

// sessionStateCmd is pause or resume.
func sessionStateCmd(g *globals, f *sessionFlags, op string) *cobra.Command {
	short := "Freeze a session: its processes get no CPU and keep their memory; any later call resumes it"
	if op == "resume" {
		short = "Thaw a paused session"
	}
	return &cobra.Command{
		Use:   op + " ID",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := f.client()
			if err != nil {
				return err
			}
			call := cl.PauseSession
			if op == "resume" {
				call = cl.ResumeSession
			}
			s, err := call(cmd.Context(), args[0])
			if err != nil {
				return remoteExecErr(err)
			}
			if f.json {
				return f.printJSON(g, s)
			}
			state := "running"
			if s.Paused {
				state = "paused"
			}
			fmt.Fprintf(g.stdio.Stderr, "aster: session %s is %s\n", s.ID, state)
			return nil
		},
	}
}

func sessionSnapshotCmd(g *globals, f *sessionFlags) *cobra.Command {
	var memory bool
	cmd := &cobra.Command{
		Use:   "snapshot [--memory] [ID]",
		Short: "Keep a session's /work (or, --memory, its whole sandbox) on the server and print the snapshot's id; with no ID, list your snapshots",
		Long: `Store a copy of a session's /work on the server (not its processes, memory or
/tmp) and print its id; 'aster session create --from-snapshot ID' starts any
number of sessions from it. Only your token can use it. The server keeps a
bounded amount of snapshots and drops the least recently used first.

With --memory (a server of the gvisor runtime) the snapshot is a checkpoint
of the whole running sandbox: every process with its memory, /work and /tmp.
Each session created from it starts where the original was — a python
REPL with its variables, a server with its caches — and goes its own way.
The session runs on after the checkpoint; it is refused while commands run.

  snap=$(aster session snapshot --memory $id)
  a=$(aster session create --from-snapshot $snap)
  b=$(aster session create --from-snapshot $snap)`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := f.client()
			if err != nil {
				return err
			}
			if len(args) == 0 {
				all, err := cl.Snapshots(cmd.Context())
				if err != nil {
					return remoteExecErr(err)
				}
				if f.json {
					return f.printJSON(g, api.SessionSnapshotList{Snapshots: all})
				}
				tw := tabwriter.NewWriter(g.stdio.Stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tSESSION\tKIND\tSIZE\tCREATED")
				for _, sn := range all {
					kind := "work"
					if sn.Memory {
						kind = "memory"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", sn.ID, sn.Session, kind, units.FormatBytes(sn.SizeBytes), sn.CreatedAt.Local().Format(time.DateTime))
				}
				return tw.Flush()
			}
			take := cl.SnapshotSession
			if memory {
				take = cl.SnapshotSessionMemory
			}
			sn, err := take(cmd.Context(), args[0])
			if err != nil {
				return remoteExecErr(err)
			}
			if f.json {
				return f.printJSON(g, sn)
			}
			fmt.Fprintln(g.stdio.Stdout, sn.ID)
			kind := "snapshot"
			if sn.Memory {
				kind = "memory snapshot"
			}
			fmt.Fprintf(g.stdio.Stderr, "aster: %s of %s: %s\n", kind, sn.Session, units.FormatBytes(sn.SizeBytes))
			return nil
		},
	}
	cmd.Flags().BoolVar(&memory, "memory", false, "checkpoint the whole running sandbox (processes and memory; gvisor runtime only)")
	return cmd
}
