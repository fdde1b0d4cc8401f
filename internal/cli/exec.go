package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/units"
	"github.com/asterhq/aster/internal/workspace"
)

type execFlags struct {
	image     string
	limit     limitFlags
	dir       string
	files     []string
	env       []string
	stdin     string
	workdir   string
	json      bool
	server    string // run on a remote `aster sandbox serve` (exec_remote.go)
	tokenFile string
}

// execLimitUsage is the usage of each limit flag of aster exec, by the
// limit's aster.yaml name; the flag's help adds the default.
var execLimitUsage = map[string]string{
	"timeout":        "wall-clock limit, e.g. 30s, 2m",
	"memory":         "memory limit, no swap, e.g. 512m, 1g",
	"cpus":           "CPU limit, e.g. 1, 0.5",
	"pids":           "process/thread limit",
	"output_limit":   "bytes kept per output stream, head and tail",
	"output_ceiling": "per-stream bytes after which the job is ended",
	"workdir_size":   "size of the /work tmpfs",
	"tmp_size":       "size of the /tmp tmpfs",
}

func newExecCmd(g *globals) *cobra.Command {
	f := &execFlags{}
	cmd := &cobra.Command{
		Use:   "exec [flags] -- COMMAND [ARGS...]",
		Short: "Run one command in a fresh, hardened sandbox and print its result",
		Long: `Run one command in a sandbox made for it and destroyed after it.

The sandbox has no network (only loopback), no capabilities, a read-only root
filesystem, a non-root user, and caps on memory (no swap), CPU, processes,
output and wall time. /work (the workspace) and /tmp are size-capped tmpfs.
The command is executed directly — there is no implicit shell — and sees only
the environment you pass with --env, plus PATH, HOME=/tmp and LANG=C.UTF-8
where you set none; the host's never reaches it. Nothing here can turn the
isolation off.

Output: in text mode the command's stdout and stderr appear on ours as they
arrive. Past --output-limit a stream keeps its first and last halves with a
"[... aster: N bytes dropped ...]" marker; a stream that passes
--output-ceiling ends the job (status output_limit). With --json, exactly one
JSON object is printed on stdout; output that is not valid UTF-8 is base64 with
stdout_encoding/stderr_encoding set to "base64".

Exit status: the command's own (0 for ok), 124 timeout, 125 output_limit,
137 oom, 128+N killed by signal N, 126 the sandbox could not run the job,
2 bad flags (nothing was started).`,
		Example: `  aster exec -- python3 -c 'print(6*7)'
  aster exec --timeout 5s --memory 256m -- sh -c 'echo hi; sleep 10'
  aster exec --dir ./project -- python3 -m pytest -q
  aster exec --file script.py:main.py --env MODE=test -- python3 main.py
  echo '{"a":1}' | aster exec --stdin - --json -- python3 -c 'import sys,json; print(json.load(sys.stdin))'`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExec(cmd, g, f, args)
		},
	}
	fl := cmd.Flags()
	// The first word that is not a flag starts the command: without --, its
	// own flags (python3 -c) are not taken for ours, and runExec says to put
	// -- before it.
	fl.SetInterspersed(false)
	fl.StringVar(&f.image, "image", "", "sandbox image (default from config: "+config.DefaultImage+")")
	// Not given, a limit is the configuration's: the flags default to empty.
	def := config.DefaultLimitsConfig()
	f.limit.register(fl, "", config.LimitsConfig{}, func(limit string) string {
		return execLimitUsage[limit] + " (default " + *def.Field(limit) + ")"
	})
	fl.StringVar(&f.dir, "dir", "", "local directory copied into /work (symlinks are copied as links, never followed)")
	fl.StringArrayVar(&f.files, "file", nil, "local file copied into /work, as LOCAL or LOCAL:DEST (repeatable)")
	fl.StringArrayVar(&f.env, "env", nil, "environment variable K=V for the command (repeatable); nothing else of the host's is passed (PATH, HOME and LANG have defaults)")
	fl.StringVar(&f.stdin, "stdin", "", "file to feed the command's stdin, or - for ours (default: empty stdin)")
	fl.StringVar(&f.workdir, "workdir", "", "working directory: a directory of the workspace, relative to /work or under /work/ (default /work); checked before the run against --dir and --file")
	fl.BoolVar(&f.json, "json", false, "print one JSON result object instead of the command's output")
	fl.StringVar(&f.server, "server", "", "run on a remote orchestrator (aster sandbox serve) at this URL instead of the local engine; an --image or limit not given takes the server's default, not this machine's")
	fl.StringVar(&f.tokenFile, "token-file", "", "with --server: file whose first line is the bearer token")
	return cmd
}

func runExec(cmd *cobra.Command, g *globals, f *execFlags, args []string) error {
	dash := cmd.ArgsLenAtDash()
	switch {
	case len(args) == 0:
		return usageErr("no command given: put it after --, e.g. aster exec -- echo hello")
	case dash != 0:
		return usageErr("missing -- before the command: put -- between aster's flags and the command, e.g. aster exec [flags] -- %s", shellJoin(args))
	}
	c, err := g.load(cmd)
	if err != nil {
		return err
	}
	if f.server != "" {
		return runExecRemote(cmd, g, f, c, args)
	}
	if f.tokenFile != "" {
		return usageErr("--token-file needs --server")
	}
	spec, cleanup, err := f.spec(c, args, g.stdio)
	if cleanup != nil {
		defer cleanup()
	}
	if err != nil {
		return err
	}
	log := g.logger(c)
	rt, closeRT, err := startRuntime(c, log, ExitSandbox)
	if err != nil {
		return err
	}
	defer closeRT()

	mgr, err := newManager(c, rt, sandbox.ManagerOptions{
		Images:        []string{spec.Image},
		Defaults:      spec.Limits,
		MaxConcurrent: 1,
		Logger:        log,
	}, ExitSandbox)
	if err != nil {
		return err
	}
	spec, err = mgr.Normalize(spec)
	if err != nil {
		return usageErr("%v", err)
	}
	ctx := cmd.Context()
	if err := rt.Check(ctx); err != nil {
		return &exitError{code: ExitSandbox, err: err}
	}
	if _, err := rt.ImageInfo(ctx, spec.Image); err != nil {
		if errors.Is(err, sandbox.ErrUnknownImage) {
			return usageErr("%v", err)
		}
		return &exitError{code: ExitSandbox, err: err}
	}

	var live *liveOutput
	if !f.json {
		live = newLiveOutput(g.stdio.Stdout, g.stdio.Stderr, spec.Limits.OutputBytes)
		spec.OnOutput = live.write
	}
	res, runErr := mgr.RunWithOptions(ctx, spec, sandbox.RunOptions{Normalized: true})
	if runErr != nil && res.Status == "" {
		// No result: Run prints the error (as a JSON object with --json).
		return &exitError{code: ExitSandbox, err: runErr}
	}
	if f.json {
		enc := json.NewEncoder(g.stdio.Stdout)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(res.Wire()); err != nil {
			return &exitError{code: ExitSandbox, err: err}
		}
	} else {
		live.finish(res)
		if note := res.Explain(spec.Limits); note != "" {
			fmt.Fprintf(g.stdio.Stderr, "aster: %s: %s\n", res.Status, note)
		}
	}
	if code := res.CLIExitCode(); code != 0 {
		return &exitError{code: code}
	}
	return nil
}

// limits are the limit flags as given (empty: not given).
func (f *execFlags) limits() config.LimitsConfig {
	return config.LimitsConfig(f.limit)
}

// resolveFlagLimits resolves the limit flags over the configuration's limits
// (aster.yaml, ASTER_*) as config.ResolveLimits does for every surface; a
// refused flag is named as the flag (--memory), a refused configured limit as
// its key (limits.memory).
func resolveFlagLimits(c config.Config, flags config.LimitsConfig) (sandbox.Limits, error) {
	defaults, err := c.Limits.Parse()
	if err != nil {
		return defaults, usageErr("%v", trimInvalid(err))
	}
	limits, err := config.ResolveLimits(flags, defaults, sandbox.Limits{})
	var le *sandbox.LimitError
	switch {
	case errors.As(err, &le) && *flags.Field(le.Field.Name) != "":
		return limits, usageErr("%s", le.Describe(le.Field.Flag()))
	case err != nil:
		return limits, usageErr("%v", trimInvalid(err))
	}
	return limits, nil
}

// spec builds the sandbox spec from the flags over the configuration.
func (f *execFlags) spec(c config.Config, argv []string, stdio IO) (sandbox.Spec, func(), error) {
	limits, err := resolveFlagLimits(c, f.limits())
	if err != nil {
		return sandbox.Spec{}, nil, err
	}
	workdir, err := workdirRel(f.workdir)
	if err != nil {
		return sandbox.Spec{}, nil, err
	}
	spec := sandbox.Spec{Argv: argv, Limits: limits, Workdir: workdir, Env: map[string]string{}}
	spec.Image = f.image
	if spec.Image == "" && len(c.Images) > 0 {
		spec.Image = c.Images[0]
	}
	for _, kv := range f.env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return spec, nil, usageErr("--env %q: want KEY=VALUE", kv)
		}
		spec.Env[k] = v
	}
	var cleanups []func()
	cleanup := func() {
		for _, c := range cleanups {
			c()
		}
	}
	files := map[string][]byte{}
	for _, fv := range f.files {
		local, dest, ok := strings.Cut(fv, ":")
		if !ok {
			dest = filepathBase(local)
		}
		b, err := readCapped(local, limits.WorkdirBytes)
		if err != nil {
			return spec, cleanup, usageErr("--file %s: %v", local, err)
		}
		if _, err := workspace.CleanName(dest); err != nil {
			return spec, cleanup, usageErr("--file %s: destination: %v", fv, err)
		}
		files[dest] = b
	}
	if err := f.checkWorkdir(workdir, files); err != nil {
		return spec, cleanup, err
	}
	caps := workspace.Caps{MaxBytes: limits.WorkdirBytes}
	switch {
	case f.dir != "":
		if fi, err := os.Stat(f.dir); err != nil {
			return spec, cleanup, usageErr("--dir %s: %v", f.dir, pathErrText(err))
		} else if !fi.IsDir() {
			return spec, cleanup, usageErr("--dir %s: not a directory (use --file for one file)", f.dir)
		}
		tmp, err := os.CreateTemp("", "aster-workspace-*.tar")
		if err != nil {
			return spec, cleanup, &exitError{code: ExitFailure, err: err}
		}
		cleanups = append(cleanups, func() { tmp.Close(); os.Remove(tmp.Name()) })
		if _, skipped, err := workspace.PackDirWithFiles(f.dir, files, tmp, caps); err != nil {
			return spec, cleanup, usageErr("--dir %s: %s", f.dir, dirErrText(f.dir, err))
		} else if len(skipped) > 0 {
			fmt.Fprintf(stdio.Stderr, "aster: skipped %d special files (sockets, devices, FIFOs) in %s\n", len(skipped), f.dir)
		}
		if _, err := tmp.Seek(0, io.SeekStart); err != nil {
			return spec, cleanup, &exitError{code: ExitFailure, err: err}
		}
		spec.Workspace.Tar = tmp
	case len(files) > 0:
		spec.Workspace.Files = files
	}
	switch f.stdin {
	case "":
	case "-":
		spec.Stdin = stdio.Stdin
	default:
		fh, err := os.Open(f.stdin)
		if err != nil {
			return spec, cleanup, usageErr("--stdin: %v", err)
		}
		cleanups = append(cleanups, func() { fh.Close() })
		spec.Stdin = fh
	}
	return spec, cleanup, nil
}

// workdirRel turns --workdir into the path relative to /work the sandbox
// takes ("" for /work itself): relative, or absolute under /work.
func workdirRel(v string) (string, error) {
	w := strings.TrimSpace(v)
	switch {
	case w == "" || w == "/work" || w == "/work/":
		return "", nil
	case strings.HasPrefix(w, "/work/"):
		w = strings.TrimPrefix(w, "/work/")
	case strings.HasPrefix(w, "/"):
		return "", usageErr("--workdir %s: outside the workspace; give a directory relative to /work or under /work/", v)
	}
	rel, err := workspace.CleanName(w)
	if err != nil {
		return "", usageErr("--workdir %s: %v", v, err)
	}
	if rel == "." {
		return "", nil
	}
	return rel, nil
}

// checkWorkdir refuses a working directory the workspace will not have: the
// workspace is known here, on the host (the --dir tree and the --file
// destinations), so a typo fails before anything starts instead of running
// the command in an empty directory the sandbox would make.
func (f *execFlags) checkWorkdir(rel string, files map[string][]byte) error {
	if rel == "" {
		return nil
	}
	for dest := range files {
		if d, err := workspace.CleanName(dest); err == nil && strings.HasPrefix(d, rel+"/") {
			return nil
		}
	}
	if f.dir != "" {
		root, err := os.OpenRoot(f.dir)
		if err != nil {
			return usageErr("--dir %s: %v", f.dir, pathErrText(err))
		}
		defer root.Close()
		fi, err := root.Lstat(rel)
		if err == nil && fi.IsDir() {
			return nil
		}
		if err == nil {
			return usageErr("--workdir %s: %s in --dir %s is not a directory", f.workdir, rel, f.dir)
		}
		return usageErr("--workdir %s: no directory %s in --dir %s (its contents are /work; --workdir is relative to /work)", f.workdir, rel, f.dir)
	}
	if len(files) > 0 {
		return usageErr("--workdir %s: no --file is copied under /work/%s", f.workdir, rel)
	}
	return usageErr("--workdir %s: /work is empty without --dir or --file, so it has no directory %s", f.workdir, rel)
}

// pathErrText is err without the path a *fs.PathError repeats.
func pathErrText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// dirErrText is a packing error of --dir without the directory's own path,
// which the caller puts first.
func dirErrText(dir string, err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) && (pe.Path == dir || pe.Path == ".") {
		return pe.Err.Error()
	}
	msg := err.Error()
	for _, p := range []string{"open " + dir + ": ", "pack " + dir + ": "} {
		msg = strings.TrimPrefix(msg, p)
	}
	return strings.TrimSuffix(msg, " in "+dir)
}

// shellJoin quotes argv the way a POSIX shell would read it back.
func shellJoin(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:=@%+,") == "" {
			out[i] = a
			continue
		}
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}

func filepathBase(p string) string {
	p = strings.TrimRight(p, "/")
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

func readCapped(path string, limit int64) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("larger than the workspace size %s", units.FormatBytes(limit))
	}
	return b, nil
}

// liveOutput prints the job's output as it arrives, up to the head half of the
// per-stream budget, and the rest of the kept output (marker and tail) at the
// end, so the terminal shows exactly what the Result keeps.
type liveOutput struct {
	mu      sync.Mutex
	out     map[sandbox.Stream]io.Writer
	printed map[sandbox.Stream]int64
	budget  int64
}

func newLiveOutput(stdout, stderr io.Writer, limit int64) *liveOutput {
	return &liveOutput{
		out:     map[sandbox.Stream]io.Writer{sandbox.Stdout: stdout, sandbox.Stderr: stderr},
		printed: map[sandbox.Stream]int64{},
		budget:  limit / 2,
	}
}

func (l *liveOutput) write(s sandbox.Stream, p []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	room := l.budget - l.printed[s]
	if room <= 0 {
		return
	}
	if int64(len(p)) > room {
		p = p[:room]
	}
	n, _ := l.out[s].Write(p)
	l.printed[s] += int64(n)
}

func (l *liveOutput) finish(r sandbox.Result) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range []sandbox.Stream{sandbox.Stdout, sandbox.Stderr} {
		o := r.Stdout
		if s == sandbox.Stderr {
			o = r.Stderr
		}
		rest := restAfter(o, l.printed[s])
		if len(rest) > 0 {
			_, _ = l.out[s].Write(rest)
		}
	}
}

// restAfter returns the part of the kept output not yet printed live.
func restAfter(o sandbox.Output, printed int64) []byte {
	if !o.Truncated {
		if printed >= int64(len(o.Data)) {
			return nil
		}
		return o.Data[printed:]
	}
	i := strings.Index(string(o.Data), "\n[... aster: ")
	if i < 0 {
		return nil
	}
	return o.Data[i:]
}

var _ = context.Background
