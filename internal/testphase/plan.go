package testphase

import (
	"errors"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/testrun"
)

// Request is what a caller of a test run (HTTP /v1/test, MCP run_tests)
// says about how its tests run, in either transport's fields.
type Request struct {
	Command    []string       // the caller's command; empty: detect the runner
	Format     testrun.Format // the command's report format; "": from the command
	ReportPath string         // where the command writes its report
	Report     bool           // the caller named a report (a format or a path)
	Setup      []string       // the install step; nil: detect; empty: none
	Workdir    string         // the tests' directory, relative to /work

	// How the caller spells its command and report fields, for the
	// messages that refuse them ("command", "report").
	CommandField, ReportField string
}

// Plan decides how a test run goes, from the request and the names of
// the workspace's entries: the caller's command or the runner detected
// under the working directory, then the install step (Step). Every refusal
// is a sandbox.ErrInvalidSpec that names the caller's own field.
func Plan(req Request, names []string) (testrun.Plan, *testrun.Install, error) {
	plan, err := commandPlan(req, names)
	if err != nil {
		return plan, nil, err
	}
	in, err := Step(req.Setup, names, req.Workdir, plan)
	if err != nil {
		return plan, nil, sandbox.Invalidf("%v", err)
	}
	return plan, in, nil
}

func commandPlan(req Request, names []string) (testrun.Plan, error) {
	if len(req.Command) > 0 {
		p, err := testrun.Custom(req.Command, req.Format, req.ReportPath)
		if err != nil {
			return p, sandbox.Invalidf("%v", err)
		}
		return p, nil
	}
	if req.Report {
		return testrun.Plan{}, sandbox.Invalidf("%s is only used with %s", req.ReportField, req.CommandField)
	}
	p, err := testrun.DetectIn(names, req.Workdir)
	if errors.Is(err, testrun.ErrNotDetected) {
		return p, sandbox.Invalidf("%v; pass %q to say how to run the tests", err, req.CommandField)
	}
	if err != nil {
		return p, sandbox.Invalidf("%v", err)
	}
	return p, nil
}
