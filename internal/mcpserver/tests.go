package mcpserver

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/testphase"
	"github.com/asterhq/aster/internal/testrun"
	"github.com/asterhq/aster/internal/textclip"
	"github.com/asterhq/aster/internal/units"
)

// RunTestsInput is the run_tests tool's arguments.
type RunTestsInput struct {
	SnapshotInput
	Command        []string          `json:"command,omitempty" jsonschema:"the test command, run directly (no shell). Default: detected from the project: go.mod → go test -json ./...; pytest.ini, pyproject.toml, setup.cfg, tox.ini, conftest.py or test_*.py → pytest with a JUnit report; package.json → npm test."`
	ReportFormat   string            `json:"report_format,omitempty" jsonschema:"with command: how to read its results: go-test-json (go test -json on stdout), junit-xml (a JUnit XML file at report_path), or none (exit code only; the default unless command is go test -json)."`
	ReportPath     string            `json:"report_path,omitempty" jsonschema:"with report_format junit-xml: where the command writes its report inside the sandbox, e.g. /tmp/report.xml."`
	Workdir        string            `json:"workdir,omitempty" jsonschema:"directory of the snapshot, relative to /work, the tests run in (default: the snapshot's root)."`
	Env            map[string]string `json:"env,omitempty" jsonschema:"environment variables for the tests; nothing else from the server's environment is passed."`
	Setup          []string          `json:"setup,omitzero" jsonschema:"the dependency step, run directly (a shell script is [\"sh\", \"-c\", \"...\"]). Default: detected (npm ci or npm install, go mod download, a virtual environment and pip install); [] for none. It runs first in a sandbox whose only way out is the server's egress relay (operator-allowed hosts); the tests then run in a fresh sandbox with no network on the project plus its node_modules, .venv and .aster directories."`
	InstallTimeout string            `json:"install_timeout,omitempty" jsonschema:"wall-clock limit of the install phase, e.g. \"5m\" (default: the server's; at most the timeout ceiling)."`
	CacheKey       string            `json:"cache_key,omitempty" jsonschema:"names the repository for the server's dependency cache; used only when the operator enabled caller cache keys."`
	CacheScope     string            `json:"cache_scope,omitempty" jsonschema:"with cache_key: where in the repository the snapshot comes from, e.g. pr:12 or ref:refs/heads/feature; its install is cached for that scope only, and it reads its own scope's entry, else the default scope's. Default: default (the repository's default branch), whose entries every scope reads."`
	Image          string            `json:"image,omitempty" jsonschema:"sandbox image from the server's allowlist (default: the first one)."`
	Limits         *LimitsInput      `json:"limits,omitempty" jsonschema:"resource limits for this run; every field is optional and defaults to the server's default, and none may exceed the server's ceiling. Test suites often need a longer timeout than the default, e.g. \"5m\"."`
}

func (s *Server) addRunTests() error {
	in, err := inputSchemaFor[RunTestsInput](s)
	if err != nil {
		return err
	}
	out, err := testsSchema()
	if err != nil {
		return err
	}
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  "run_tests",
		Title: "Run a project's tests in a sandbox",
		Description: fmt.Sprintf(`Run a project's test suite in a fresh, throwaway, hardened Linux sandbox with no network and return a parsed summary (passed, failed, skipped, failing tests with their messages) plus the run's status and output. A project with dependencies (package.json, go.mod, requirements.txt or pyproject.toml), or a given setup command, first gets an install phase: a sandbox whose only way out is the server's egress relay to the hosts its operator allows; the result says what it downloaded, how long it took, whether the dependency cache had it, and why it failed.

The project is a snapshot: a directory on the server (path; only under its allowed directories: %s), files inline, or a base64 tar. The command is detected from the project unless you give one.

Images: %s. Default limits: %s. Ceilings: %s.`,
			s.allowedSummary(), imageList(s.opts.Images), limitsSummary(s.opts.Defaults), s.ceilingSummary()),
		InputSchema:  in,
		OutputSchema: out,
		Annotations:  &mcp.ToolAnnotations{Title: "Run tests in a sandbox", DestructiveHint: ptr(false), OpenWorldHint: ptr(false)},
	}, s.runTests)
	return nil
}

func (s *Server) allowedSummary() string {
	if len(s.opts.AllowedDirs) == 0 {
		return "none on this server, send files"
	}
	return strings.Join(s.opts.AllowedDirs, ", ")
}

func (s *Server) runTests(ctx context.Context, req *mcp.CallToolRequest, in RunTestsInput) (*mcp.CallToolResult, api.TestResponse, error) {
	ctx, done := s.track(ctx)
	defer done()
	var zero api.TestResponse
	limits, notices, err := resolveLimits(in.Limits, s.opts.Defaults, s.opts.Ceilings)
	if err != nil {
		return nil, zero, toolError(err)
	}
	s.logDeprecated("run_tests", notices)
	snap, err := s.spoolSnapshot(in.SnapshotInput, limits.WorkdirBytes)
	if err != nil {
		return nil, zero, toolError(err)
	}
	defer snap.Remove()
	plan, install, err := testphase.Plan(testphase.Request{
		Command: in.Command, Format: testrun.Format(in.ReportFormat), ReportPath: in.ReportPath,
		Report: in.ReportFormat != "" || in.ReportPath != "", Setup: in.Setup, Workdir: in.Workdir,
		CommandField: "command", ReportField: "report_format and report_path",
	}, snap.Files())
	if err != nil {
		return nil, zero, toolError(err)
	}
	job, err := testphase.Builder{DefaultImage: s.opts.Images[0], TimeoutCeiling: s.opts.Ceilings.Timeout(),
		WorkdirCeiling: s.opts.Ceilings.WorkdirBytes, TmpCeiling: s.opts.Ceilings.TmpBytes, CallerCacheKeys: s.opts.CallerCacheKeys,
	}.Build(testphase.Input{Image: in.Image, Workdir: in.Workdir, Env: in.Env, Limits: limits, Plan: plan, Install: install,
		Open: func() (io.ReadCloser, error) { return snap.Open() }, InstallTimeout: in.InstallTimeout,
		CacheKey: in.CacheKey, CacheScope: in.CacheScope})
	if err != nil {
		return nil, zero, toolError(err)
	}
	var runErr error
	out, err := s.opts.Tests.Run(ctx, job, func(ctx context.Context, phase string, spec sandbox.Spec) (sandbox.Result, error) {
		res, err := s.runSpec(ctx, req, "run_tests:"+phase, spec)
		if err != nil {
			runErr = err
		}
		return res, err
	})
	if err == nil {
		err = runErr
	}
	if err != nil {
		return nil, zero, err
	}
	resp := out.Response()
	return &mcp.CallToolResult{
		Content: withNotice([]mcp.Content{&mcp.TextContent{Text: renderTests(out, limits)}}, notices),
		IsError: out.Result.Status == sandbox.StatusError,
	}, resp, nil
}

// maxTextFailures bounds the failures written out in the text rendering
// (the structured result has them all, up to testrun.MaxFailures).
const maxTextFailures = 20

func renderTests(out testphase.Outcome, l sandbox.Limits) string {
	sum, plan, res := out.Summary, out.Plan, out.Result
	var b strings.Builder
	for _, line := range testphase.Lines(out.Install) {
		b.WriteString(line + "\n")
	}
	if out.Phase == testphase.PhaseInstall {
		b.WriteString("tests: not run (the install phase failed); its run follows\n")
		b.WriteString(renderResult(res, l))
		return b.String()
	}
	fmt.Fprintf(&b, "command: %s\n", strings.Join(plan.Command(), " "))
	if sum.Parsed {
		fmt.Fprintf(&b, "tests: %d passed, %d failed, %d skipped (%s, %s report)\n", sum.Passed, sum.Failed, sum.Skipped, sum.Framework, sum.Format)
	} else {
		fmt.Fprintf(&b, "tests: no parsed report (%s); judge by the status and output below\n", sum.Format)
	}
	if sum.Error != "" {
		fmt.Fprintf(&b, "report: %s\n", sum.Error)
	}
	for i, f := range sum.Failures {
		if i == maxTextFailures {
			fmt.Fprintf(&b, "... %d more failures in the structured result\n", len(sum.Failures)-i)
			break
		}
		name := f.Name
		if f.Suite != "" {
			name = f.Suite + " " + name
		}
		fmt.Fprintf(&b, "FAIL %s\n%s\n", name, indent(textclip.Head(f.Message, 1500, " [...]")))
	}
	if sum.FailuresOmitted > 0 {
		fmt.Fprintf(&b, "(%d more failing tests were not listed)\n", sum.FailuresOmitted)
	}
	shown := res
	if sum.Parsed && plan.Format != testrun.FormatNone {
		// stdout is the machine-readable report, summarised above.
		shown.Stdout = sandbox.Output{Data: []byte(fmt.Sprintf("[the %s report, %s, parsed above; raw in the structured result]\n",
			plan.Format, units.FormatBytes(res.Stdout.TotalBytes))), TotalBytes: res.Stdout.TotalBytes}
	}
	b.WriteString(renderResult(shown, l))
	return b.String()
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}

// testsSchema is the output schema of run_tests: the API's TestResponse.
func testsSchema() (any, error) {
	base, err := resultSchema()
	if err != nil {
		return nil, err
	}
	sch, err := jsonschemaFor[api.TestResponse]()
	if err != nil {
		return nil, err
	}
	for name, p := range base.Properties {
		if q := sch.Properties[name]; q != nil {
			q.Description, q.Enum = p.Description, p.Enum
		}
	}
	if c := sch.Properties["command"]; c != nil {
		c.Description = "the command that ran"
	}
	if t := sch.Properties["tests"]; t != nil {
		t.Description = "the parsed test report: counts of leaf tests, and the failing ones with their messages"
	}
	singleTypes(sch)
	return sch, nil
}
