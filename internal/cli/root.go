// Package cli holds Aster's cobra commands. Commands turn flags into
// configuration and call the packages that do the work; no business logic
// lives here.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/asterhq/aster/internal/config"
)

// IO is what a command reads and writes, so every command is testable.
type IO struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
	// Environ lists the environment (os.Environ's form), for the check of
	// ASTER_* names; nil with Getenv set checks nothing.
	Environ func() []string
}

// Run executes the aster command line and returns the process exit code.
func Run(ctx context.Context, args []string, stdio IO) int {
	if stdio.Getenv == nil {
		stdio.Getenv = os.Getenv
		if stdio.Environ == nil {
			stdio.Environ = os.Environ
		}
	}
	root := newRoot(stdio)
	root.SetArgs(args)
	root.SetIn(stdio.Stdin)
	root.SetOut(stdio.Stdout)
	root.SetErr(stdio.Stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	code, shown := ExitUsage, err
	var ee *exitError
	if errors.As(err, &ee) {
		code, shown = ee.code, ee.err
	}
	if shown == nil {
		return code // the command's own exit status; its result is printed
	}
	if stdio.Environ != nil {
		shown = withHint(shown, stdio.Environ())
	} else {
		shown = withHint(shown, nil)
	}
	fmt.Fprintf(stdio.Stderr, "aster: %v\n", shown)
	if ee == nil && !strings.Contains(err.Error(), "--help") {
		// Anything else is a usage error from cobra or flag parsing.
		fmt.Fprintln(stdio.Stderr, "Run 'aster --help' for usage.")
	}
	if wantsJSON(root, args) {
		writeJSONError(stdio.Stdout, code, shown)
	}
	return code
}

// wantsJSON reports whether the command line asked for JSON output: a
// program reading our stdout then gets a JSON error object, even when the
// flags were refused before they were all parsed.
func wantsJSON(root *cobra.Command, args []string) bool {
	cmd, _, err := root.Find(args)
	if err != nil || cmd.Flags().Lookup("json") == nil {
		return false
	}
	if on, err := cmd.Flags().GetBool("json"); err == nil && on {
		return true
	}
	for _, a := range args {
		if a == "--" {
			break
		}
		if v, ok := strings.CutPrefix(a, "--json="); ok {
			on, err := strconv.ParseBool(v)
			return err == nil && on
		}
		if a == "--json" {
			return true
		}
	}
	return false
}

// jsonError is what --json prints when aster itself refuses or fails: the
// shape of the HTTP API's error body, plus the exit status.
type jsonError struct {
	Error struct {
		Code     string `json:"code"`
		Message  string `json:"message"`
		ExitCode int    `json:"exit_code"`
	} `json:"error"`
}

func writeJSONError(w io.Writer, code int, err error) {
	var je jsonError
	je.Error.Code = map[int]string{ExitUsage: "usage", ExitSandbox: "sandbox_error"}[code]
	if je.Error.Code == "" {
		je.Error.Code = "failure"
	}
	je.Error.Message, je.Error.ExitCode = err.Error(), code
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(je)
}

// Exit codes of aster itself (as opposed to a sandboxed command's).
const (
	ExitUsage   = 2   // bad flags or arguments; nothing was started
	ExitFailure = 1   // a command of aster's own failed
	ExitSandbox = 126 // the sandbox could not run the job (status "error")
)

// exitError carries an exit code through cobra; err, when set, is printed.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func usageErr(format string, args ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, args...)}
}

// changedSetter returns a function that copies a flag's value over a
// configuration field, but only when the flag was given: flags override the
// environment and aster.yaml, never the other way round.
func changedSetter(flags *pflag.FlagSet) func(name string, dst *string, v string) {
	return func(name string, dst *string, v string) {
		if flags.Changed(name) {
			*dst = v
		}
	}
}

// globals are the flags every command shares.
type globals struct {
	stdio         IO
	configPath    string
	logLevel      string
	logFormat     string
	runtime       string
	dockerHost    string
	initPath      string
	engineRuntime string
	ociRuntime    string
	runsc         string
	gvisorPlat    string
}

// load reads the configuration and applies the global flags over it.
func (g *globals) load(cmd *cobra.Command) (config.Config, error) {
	if g.stdio.Environ != nil {
		if err := config.CheckEnv(g.stdio.Environ()); err != nil {
			return config.Config{}, usageErr("%v", err)
		}
	}
	c, err := config.Load(g.configPath, g.stdio.Getenv)
	if err != nil {
		return c, usageErr("%v", err)
	}
	flags := cmd.Flags()
	if flags.Changed("log-level") {
		if _, err := config.ParseLogLevel(g.logLevel); err != nil {
			return c, usageErr("--log-level: %v", err)
		}
	}
	if flags.Changed("log-format") {
		if _, err := config.ParseLogFormat(g.logFormat); err != nil {
			return c, usageErr("--log-format: %v", err)
		}
	}
	override := changedSetter(flags)
	override("log-level", &c.LogLevel, g.logLevel)
	override("log-format", &c.LogFormat, g.logFormat)
	override("runtime", &c.Runtime, g.runtime)
	override("docker-host", &c.DockerHost, g.dockerHost)
	override("init-path", &c.InitPath, g.initPath)
	override("engine-runtime", &c.EngineRuntime, g.engineRuntime)
	override("oci-runtime", &c.OCI.Runtime, g.ociRuntime)
	override("runsc", &c.GVisor.Runsc, g.runsc)
	override("gvisor-platform", &c.GVisor.Platform, g.gvisorPlat)
	if flags.Changed("gvisor-platform") {
		if err := c.GVisor.Validate(); err != nil {
			return c, usageErr("--gvisor-platform: %v", err)
		}
	}
	overrideKubernetesFlags(flags, &c.Kubernetes)
	g.sayConfig(c)
	return c, nil
}

// sayConfig tells, on stderr, which configuration file is in use, and that an
// aster.yaml in the working directory was ignored: one line each, as log
// records with --log-format json, within the log level. Never on stdout: aster
// mcp speaks its protocol there.
func (g *globals) sayConfig(c config.Config) {
	if f, _ := config.ParseLogFormat(c.LogFormat); f == "json" {
		log := g.logger(c)
		log.Info(c.Source.Line(), "file", c.Source.File, "named_by", c.Source.NamedBy)
		if w := c.Source.Warning(); w != "" {
			log.Warn(w, "ignored", c.Source.IgnoredWorkdir)
		}
		return
	}
	level, _ := config.ParseLogLevel(c.LogLevel)
	if level <= slog.LevelInfo {
		fmt.Fprintf(g.stdio.Stderr, "aster: %s\n", c.Source.Line())
	}
	if w := c.Source.Warning(); w != "" && level <= slog.LevelWarn {
		fmt.Fprintf(g.stdio.Stderr, "aster: warning: %s\n", w)
	}
}

// loadApp is load and the app: section (ASTER_* applied) of the `aster app`
// commands.
func (g *globals) loadApp(cmd *cobra.Command) (config.Config, config.AppConfig, error) {
	c, err := g.load(cmd)
	if err != nil {
		return c, config.AppConfig{}, err
	}
	ac, err := c.AppSection(g.stdio.Getenv)
	if err != nil {
		return c, ac, usageErr("%v", err)
	}
	return c, ac, nil
}

func (g *globals) logger(c config.Config) *slog.Logger {
	// load has refused an unknown level; the zero value is info.
	level, _ := config.ParseLogLevel(c.LogLevel)
	opts := &slog.HandlerOptions{Level: level}
	if f, _ := config.ParseLogFormat(c.LogFormat); f == "json" {
		opts.ReplaceAttr = readableDurations
		return slog.New(slog.NewJSONHandler(g.stdio.Stderr, opts))
	}
	return slog.New(slog.NewTextHandler(g.stdio.Stderr, opts))
}

func newRoot(stdio IO) *cobra.Command {
	g := &globals{stdio: stdio}
	root := &cobra.Command{
		Use:   "aster",
		Short: "Aster runs untrusted code in throwaway hardened sandboxes, and reviews pull requests with it",
		Long: `Aster runs untrusted code — tests, analyzers, snippets an agent wants to try —
in a container made for that one request: no network, capped memory, CPU,
processes, disk, output and time, destroyed afterwards. On top of that sandbox
it reviews pull requests: a cheap static gate first, tests when asked, a model
last, one review posted.

Start here:
  aster exec -- python3 -c 'print("hello from the sandbox")'
  aster exec --json --timeout 5s -- sh -c 'echo out; echo err >&2; exit 3'
  aster review --base main .
  aster sandbox reap --dry-run

Configuration comes from flags, then ASTER_* environment variables, then one
aster.yaml, then defaults. The file is --config FILE, else $ASTER_CONFIG, else
the user's $XDG_CONFIG_HOME/aster/aster.yaml (by default
~/.config/aster/aster.yaml), else /etc/aster/aster.yaml; never one in the
working directory. Settings that name a host program or an endpoint that
receives a secret are taken only from a file that you or root own and no one
else can write.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       Version(),
	}
	root.SetVersionTemplate("aster {{.Version}}\n")
	pf := root.PersistentFlags()
	pf.StringVar(&g.configPath, "config", "", "configuration file (default $ASTER_CONFIG, else $XDG_CONFIG_HOME/aster/aster.yaml, i.e. ~/.config/aster/aster.yaml, else /etc/aster/aster.yaml; never ./aster.yaml)")
	pf.StringVar(&g.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	pf.StringVar(&g.logFormat, "log-format", "text", "log format: text (key=value lines) or json (one object per line, for log collectors)")
	pf.StringVar(&g.runtime, "runtime", "docker", "sandbox runtime: docker (any Docker-compatible engine), oci (crun/runc directly, no daemon per sandbox: images are exported once from the Docker engine; needs root), gvisor (the oci runtime on gVisor's runsc: its own kernel per sandbox; needs root), kubernetes (one Pod per run) or microvm (one QEMU microVM per run, its own kernel; needs root)")
	pf.StringVar(&g.dockerHost, "docker-host", "", "Docker engine address, also where the oci, gvisor and microvm runtimes export images from (default DOCKER_HOST or unix:///var/run/docker.sock)")
	pf.StringVar(&g.initPath, "init-path", "", "path of the aster-init binary (default: next to the aster binary)")
	pf.StringVar(&g.engineRuntime, "engine-runtime", "", "Docker engine runtime for --runtime docker, e.g. runsc (gVisor; must be registered in the engine's daemon.json, see docs/sandbox.md) or kata-runtime")
	pf.StringVar(&g.ociRuntime, "oci-runtime", config.DefaultOCIRuntime, "OCI runtime binary for --runtime oci: crun, runc or runsc (gVisor, the same as --runtime gvisor), or a path")
	pf.StringVar(&g.runsc, "runsc", config.DefaultGVisorRunsc, "runsc binary for --runtime gvisor (a name in PATH or a path)")
	pf.StringVar(&g.gvisorPlat, "gvisor-platform", "", "gVisor platform: systrap, ptrace or kvm (default: systrap where runsc has it, else ptrace); also for --oci-runtime runsc")
	addKubernetesFlags(pf)
	root.SetFlagErrorFunc(flagError)

	addCommands(root, g, newVersionCmd, newExecCmd, newSandboxCmd, newReviewCmd, newMCPCmd, newAppCmd)
	addCommands(root, g, extraCommands...)
	return root
}

// addCommands adds to parent the command each constructor builds, in order.
func addCommands(parent *cobra.Command, g *globals, ctors ...func(*globals) *cobra.Command) {
	for _, add := range ctors {
		parent.AddCommand(add(g))
	}
}

// extraCommands lets other files register top-level commands from init()-free
// code paths: each command file appends its constructor in a var block.
var extraCommands []func(*globals) *cobra.Command

// readableDurations writes a duration in a JSON log as Go's text ("1.5s", "250ms"), which
// the text format uses too, instead of slog's raw nanoseconds.
func readableDurations(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	return a
}
