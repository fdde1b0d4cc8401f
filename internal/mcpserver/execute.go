package mcpserver

import (
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/units"
	"github.com/asterhq/aster/internal/workspace"
)

// ExecuteInput is the execute tool's arguments.
type ExecuteInput struct {
	Argv        []string          `json:"argv,omitempty" jsonschema:"the command and its arguments, executed directly with no shell, e.g. [\"python3\", \"-c\", \"print(6*7)\"]. For pipes or redirection use [\"sh\", \"-c\", \"...\"] or a script. Give argv or script, not both."`
	Script      string            `json:"script,omitempty" jsonschema:"source of a script to run instead of argv: it is written to /work/.aster-script and run as [interpreter, /work/.aster-script, args...]."`
	Interpreter string            `json:"interpreter,omitempty" jsonschema:"the program that runs script, e.g. sh, bash, python3, node (default sh). Only with script."`
	Args        []string          `json:"args,omitempty" jsonschema:"arguments passed to the script after its path. Only with script."`
	Files       map[string]string `json:"files,omitempty" jsonschema:"files to place under /work before the command runs: relative path (subdirectories allowed) to UTF-8 content."`
	BinaryFiles map[string]string `json:"binary_files,omitempty" jsonschema:"like files, with base64-encoded content, for binary files."`
	Stdin       string            `json:"stdin,omitempty" jsonschema:"text fed to the command's standard input (default: empty)."`
	Env         map[string]string `json:"env,omitempty" jsonschema:"environment variables for the command; nothing else from the server's environment is passed (PATH, HOME and LANG get defaults)."`
	Workdir     string            `json:"workdir,omitempty" jsonschema:"working directory relative to /work (default /work itself)."`
	Image       string            `json:"image,omitempty" jsonschema:"sandbox image from the server's allowlist (default: the first one)."`
	Limits      *LimitsInput      `json:"limits,omitempty" jsonschema:"resource limits for this run; every field is optional and defaults to the server's default, and none may exceed the server's ceiling."`
}

// scriptPath is where a script given inline is written.
const scriptPath = ".aster-script"

func (s *Server) addExecute() error {
	in, err := s.inputSchema()
	if err != nil {
		return err
	}
	out, err := resultSchema()
	if err != nil {
		return err
	}
	tool := &mcp.Tool{
		Name:  "execute",
		Title: "Run code in a sandbox",
		Description: fmt.Sprintf(`Run a command in a fresh, throwaway, hardened Linux sandbox and return how it ended and what it printed.

Give argv (executed directly, no shell) or a script with its interpreter. Files you pass are placed under /work, the working directory; /tmp is writable; the rest of the filesystem is read-only. There is no network (only loopback) and no state between calls.

The result says status (ok, exit_nonzero, timeout, oom, output_limit, killed, error), exit_code, stdout and stderr. Each stream keeps at most limits.output_limit (its first and last halves; the text says when it was truncated); a stream that passes limits.output_ceiling ends the job with status output_limit.

Images: %s. Default limits: %s. Ceilings: %s.`,
			imageList(s.opts.Images), limitsSummary(s.opts.Defaults), s.ceilingSummary()),
		InputSchema:  in,
		OutputSchema: out,
		Annotations: &mcp.ToolAnnotations{
			Title:           "Run code in a sandbox",
			ReadOnlyHint:    false,
			DestructiveHint: ptr(false),
			IdempotentHint:  false,
			OpenWorldHint:   ptr(false),
		},
	}
	mcp.AddTool(s.mcp, tool, s.execute)
	return nil
}

func ptr[T any](v T) *T { return &v }

func (s *Server) ceilingSummary() string {
	if c := limitsSummary(s.opts.Ceilings); c != "" {
		return c
	}
	return "the absolute bounds only"
}

// execute is the tool handler.
func (s *Server) execute(ctx context.Context, req *mcp.CallToolRequest, in ExecuteInput) (*mcp.CallToolResult, sandbox.WireResult, error) {
	ctx, done := s.track(ctx)
	defer done()
	spec, notices, err := s.executeSpec(in)
	if err != nil {
		return nil, sandbox.WireResult{}, toolError(err)
	}
	s.logDeprecated("execute", notices)
	result, wire, err := s.run(ctx, req, "execute", spec)
	if result != nil {
		result.Content = withNotice(result.Content, notices)
	}
	return result, wire, err
}

// executeSpec turns the tool's arguments into a sandbox spec, rejecting
// anything wrong with a message the caller can act on. It returns the
// deprecation notices of the limits' old names.
func (s *Server) executeSpec(in ExecuteInput) (sandbox.Spec, []string, error) {
	limits, notices, err := resolveLimits(in.Limits, s.opts.Defaults, s.opts.Ceilings)
	if err != nil {
		return sandbox.Spec{}, nil, err
	}
	spec, err := s.executeArgs(in, limits)
	return spec, notices, err
}

// executeArgs builds the spec of an execute call from its arguments and its
// resolved limits.
func (s *Server) executeArgs(in ExecuteInput, limits sandbox.Limits) (sandbox.Spec, error) {
	spec := sandbox.Spec{Image: in.Image, Env: in.Env, Workdir: in.Workdir, Limits: limits}
	if spec.Image == "" {
		spec.Image = s.opts.Images[0]
	}
	files := make(map[string][]byte, len(in.Files)+len(in.BinaryFiles)+1)
	var total int64
	add := func(name string, data []byte) error {
		clean, err := workspace.CleanName(name)
		if err != nil {
			return sandbox.Invalidf("file %q: %v", name, err)
		}
		if _, dup := files[clean]; dup {
			return sandbox.Invalidf("file %q is given twice", name)
		}
		total += int64(len(data))
		if total > limits.WorkdirBytes {
			return fmt.Errorf("%w: the files add up to more than the %s of /work (limits.workdir_size)", sandbox.ErrTooLarge, units.FormatBytes(limits.WorkdirBytes))
		}
		files[clean] = data
		return nil
	}
	// Sorted names: with several bad files, the same one is named each time.
	for _, name := range slices.Sorted(maps.Keys(in.Files)) {
		if err := add(name, []byte(in.Files[name])); err != nil {
			return spec, err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(in.BinaryFiles)) {
		data, err := base64.StdEncoding.DecodeString(in.BinaryFiles[name])
		if err != nil {
			return spec, sandbox.Invalidf("binary_files[%q] is not valid base64: %v", name, err)
		}
		if err := add(name, data); err != nil {
			return spec, err
		}
	}
	switch {
	case len(in.Argv) > 0 && in.Script != "":
		return spec, sandbox.Invalidf("give argv or script, not both")
	case len(in.Argv) > 0:
		if in.Interpreter != "" || len(in.Args) > 0 {
			return spec, sandbox.Invalidf("interpreter and args go with script; with argv put everything in argv")
		}
		if in.Argv[0] == "" {
			return spec, sandbox.Invalidf("argv[0] is empty")
		}
		spec.Argv = in.Argv
	case in.Script != "":
		interp := in.Interpreter
		if interp == "" {
			interp = "sh"
		}
		if strings.ContainsAny(interp, " \t\n") {
			return spec, sandbox.Invalidf("interpreter %q must be one program name; to pass it flags, use argv with the script in files", interp)
		}
		if err := add(scriptPath, []byte(in.Script)); err != nil {
			return spec, err
		}
		spec.Argv = append([]string{interp, "/work/" + scriptPath}, in.Args...)
	default:
		return spec, sandbox.Invalidf("nothing to run: give argv (e.g. [\"python3\", \"-c\", \"print(1)\"]) or script")
	}
	if len(files) > 0 {
		spec.Workspace.Files = files
	}
	if in.Stdin != "" {
		spec.Stdin = strings.NewReader(in.Stdin)
	}
	return spec, nil
}

// run executes spec and turns the outcome into the execute tool's result.
func (s *Server) run(ctx context.Context, req *mcp.CallToolRequest, tool string, spec sandbox.Spec) (*mcp.CallToolResult, sandbox.WireResult, error) {
	res, err := s.runSpec(ctx, req, tool, spec)
	if err != nil {
		return nil, sandbox.WireResult{}, err
	}
	result := &mcp.CallToolResult{
		Content: []mcp.Content{&mcp.TextContent{Text: renderResult(res, spec.Limits)}},
		IsError: res.Status == sandbox.StatusError,
	}
	return result, res.Wire(), nil
}

// runSpec executes spec with progress notifications. A run that happened,
// whatever its status, is a Result; a run that could not start (bad input,
// busy, engine down) or was cancelled is an error for the caller to return.
func (s *Server) runSpec(ctx context.Context, req *mcp.CallToolRequest, tool string, spec sandbox.Spec) (sandbox.Result, error) {
	p := newProgress(ctx, req, s.opts.ProgressInterval)
	if prev := spec.OnOutput; prev != nil {
		spec.OnOutput = func(st sandbox.Stream, b []byte) { prev(st, b); p.output(st, b) }
	} else {
		spec.OnOutput = p.output
	}
	p.begin()
	start := time.Now()
	res, err := s.opts.Executor.RunWithOptions(ctx, spec, sandbox.RunOptions{Admitted: p.admittedNow})
	p.finish(res.Status)
	log := s.log.With("tool", tool, "run", res.ID)
	if ctx.Err() != nil {
		log.Info("tool call cancelled; sandbox destroyed", "cause", context.Cause(ctx), "ms", time.Since(start).Milliseconds())
		return res, fmt.Errorf("cancelled: %v", context.Cause(ctx))
	}
	if err != nil && (res.Status == "" || api.ErrorCode(err) != "internal") {
		log.Info("tool call refused", "code", api.ErrorCode(err), "err", err)
		return res, toolError(err)
	}
	log.Info("tool call finished", "status", res.Status, "exit", res.ExitCode, "ms", time.Since(start).Milliseconds())
	return res, nil
}

// inputSchema is the inferred schema of ExecuteInput with the limits'
// descriptions, defaults and ceilings filled in.
func (s *Server) inputSchema() (*jsonschema.Schema, error) {
	return inputSchemaFor[ExecuteInput](s)
}

// inputSchemaFor infers a tool's input schema and documents its limits and
// images from the server's configuration.
func inputSchemaFor[T any](s *Server) (*jsonschema.Schema, error) {
	sch, err := jsonschema.For[T](nil)
	if err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	if sch.Properties["limits"] != nil {
		if err := s.describeLimits(sch); err != nil {
			return nil, err
		}
	}
	singleTypes(sch)
	// The allowlist is described, not an enum: the SDK's enum check would refuse an image
	// with a schema message before Aster's own unknown_image answer could say what to do.
	if img := sch.Properties["image"]; img != nil && len(s.opts.Images) > 0 {
		img.Description = strings.TrimSpace(img.Description + " The server's allowlist: " + strings.Join(s.opts.Images, ", ") +
			" (default " + s.opts.Images[0] + ").")
	}
	return sch, nil
}

// describeLimits documents each limit in sch.properties.limits: its unit,
// the server's default and ceiling; the deprecated names say what replaces
// them.
func (s *Server) describeLimits(sch *jsonschema.Schema) error {
	ls := sch.Properties["limits"]
	if ls == nil {
		return fmt.Errorf("input schema has no limits property")
	}
	for _, f := range sandbox.LimitFields() {
		p := ls.Properties[f.Name]
		if p == nil {
			return fmt.Errorf("input schema has no limits.%s", f.Name)
		}
		desc := fmt.Sprintf("%s. Default %s", limitDocs[f.Name], f.Format(*f.Of(&s.opts.Defaults)))
		if c := *f.Of(&s.opts.Ceilings); c > 0 {
			desc += fmt.Sprintf(", at most %s", f.Format(c))
		}
		// Bounds are stated, not encoded as minimum/maximum: the schema
		// validator's messages are cryptic, config.ResolveLimits' name the field.
		p.Description = desc + "."
	}
	for _, d := range deprecatedLimits() {
		p := ls.Properties[d.old]
		if p == nil {
			return fmt.Errorf("input schema has no limits.%s", d.old)
		}
		p.Deprecated = true
		p.Description = fmt.Sprintf("Deprecated, removed in the next release: use %s. The same limit as an integer in the unit of its name.", d.name)
	}
	return nil
}

// resultSchema is the schema of sandbox.WireResult with descriptions.
func resultSchema() (*jsonschema.Schema, error) {
	sch, err := jsonschema.For[sandbox.WireResult](nil)
	if err != nil {
		return nil, fmt.Errorf("result schema: %w", err)
	}
	desc := map[string]string{
		"id":                   "run id",
		"status":               "how the run ended: ok (exit 0), exit_nonzero, timeout (wall-clock limit), oom (memory limit), output_limit (a stream passed limits.output_ceiling), killed (a signal, or cancelled), error (the sandbox could not run the job)",
		"exit_code":            "the command's exit code; -1 when it did not exit on its own",
		"signal":               "the signal that ended the command, e.g. SIGKILL; empty otherwise",
		"stdout":               "standard output as kept: when stdout_truncated, its first and last halves with a marker between",
		"stdout_encoding":      "utf-8, or base64 when the output is not valid UTF-8",
		"stdout_truncated":     "true when stdout was longer than the kept budget",
		"stdout_bytes":         "bytes the command wrote to stdout",
		"stdout_dropped_bytes": "bytes of stdout not kept",
		"stderr":               "standard error, kept like stdout",
		"stderr_encoding":      "utf-8, or base64 when the output is not valid UTF-8",
		"stderr_truncated":     "true when stderr was longer than the kept budget",
		"stderr_bytes":         "bytes the command wrote to stderr",
		"stderr_dropped_bytes": "bytes of stderr not kept",
		"duration_ms":          "wall time of the job",
		"cpu_ms":               "CPU time (user + system) of the job's processes",
		"peak_memory_bytes":    "peak resident memory of the job's largest process",
		"oom_killed":           "true when the OOM killer ended a process of the job",
		"runtime":              "sandbox runtime, e.g. docker",
		"image":                "image the sandbox ran",
		"image_digest":         "digest of that image",
		"error":                "why the sandbox could not run the job, or more context on the status",
		"timings_ms":           "where the wall time went (prepare, total, ...)",
	}
	for name, p := range sch.Properties {
		if d, ok := desc[name]; ok {
			p.Description = d
		}
	}
	singleTypes(sch)
	if st := sch.Properties["status"]; st != nil {
		for _, v := range sandbox.Statuses {
			st.Enum = append(st.Enum, string(v))
		}
	}
	return sch, nil
}
