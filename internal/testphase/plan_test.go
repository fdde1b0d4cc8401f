package testphase

import (
	"errors"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/testrun"
)

func TestPlan(t *testing.T) {
	fields := func(r Request) Request {
		r.CommandField, r.ReportField = "cmd", "the report"
		return r
	}
	goProject := []string{"go.mod", "go.sum", "x_test.go", "sub/package.json"}

	plan, in, err := Plan(fields(Request{}), goProject)
	if err != nil || plan.Framework != "go" || in == nil || in.Kind != "go" {
		t.Errorf("detected Go project: plan %+v, install %+v, %v", plan, in, err)
	}
	plan, in, err = Plan(fields(Request{Workdir: "sub"}), goProject)
	if err != nil || plan.Framework != "npm" || in == nil || in.Kind != "npm" {
		t.Errorf("workdir with package.json: plan %+v, install %+v, %v", plan, in, err)
	}
	plan, in, err = Plan(fields(Request{Command: []string{"make", "check"}, Setup: []string{}}), goProject)
	if err != nil || plan.Framework != "custom" || plan.Format != testrun.FormatNone || in != nil {
		t.Errorf("own command, install off: plan %+v, install %+v, %v", plan, in, err)
	}
	plan, _, err = Plan(fields(Request{Command: []string{"pytest"}, Format: testrun.FormatJUnit, ReportPath: "/tmp/r.xml", Report: true}), nil)
	if err != nil || plan.Format != testrun.FormatJUnit {
		t.Errorf("own command with a JUnit report: plan %+v, %v", plan, err)
	}

	refusals := []struct {
		name  string
		req   Request
		names []string
		want  string
	}{
		{"report without a command", Request{Report: true, Format: testrun.FormatJUnit}, goProject, "the report is only used with cmd"},
		{"nothing to detect", Request{}, []string{"README.md"}, `; pass "cmd" to say how to run the tests`},
		{"empty command word", Request{Command: []string{""}}, goProject, "empty test command"},
		{"workdir outside /work", Request{Workdir: "../x"}, goProject, "workdir"},
	}
	for _, c := range refusals {
		_, _, err := Plan(fields(c.req), c.names)
		if !errors.Is(err, sandbox.ErrInvalidSpec) || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an invalid spec saying %q", c.name, err, c.want)
		}
	}
}
