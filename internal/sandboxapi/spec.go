package sandboxapi

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/testphase"
	"github.com/asterhq/aster/internal/testrun"
	"github.com/asterhq/aster/internal/units"
	"github.com/asterhq/aster/internal/workspace"
)

// maxDetectNames bounds the snapshot entries read to detect a test runner.
const maxDetectNames = 100_000

// limitsConfig is a request's limits as the configuration writes them: the same
// names and units (config.ResolveLimits reads both).
func limitsConfig(l api.Limits) config.LimitsConfig {
	return config.LimitsConfig{Timeout: string(l.Timeout), Memory: string(l.Memory), CPUs: string(l.CPUs),
		Pids: string(l.Pids), OutputLimit: string(l.OutputLimit), OutputCeiling: string(l.OutputCeiling),
		WorkdirSize: string(l.WorkdirSize), TmpSize: string(l.TmpSize)}
}

// limits resolves a request's limits: the server's defaults for what it
// leaves out, its ceilings and the absolute bounds for what it asks.
func (s *Server) limits(l api.Limits) (sandbox.Limits, error) {
	return config.ResolveLimits(limitsConfig(l), s.mgr.Limits(), s.opts.Ceilings)
}

// jobSpec builds the sandbox spec for the shared part of a request: limits
// checked against the ceilings, files or the snapshot, stdin, env, workdir.
// Argv is the caller's to set; the Manager validates the rest.
func (s *Server) jobSpec(req api.JobRequest, snap *Snapshot) (sandbox.Spec, error) {
	limits, err := s.limits(req.Limits)
	if err != nil {
		return sandbox.Spec{}, err
	}
	spec := sandbox.Spec{Image: req.Image, Env: req.Env, Workdir: req.Workdir, Limits: limits}
	workdirBytes := limits.WorkdirBytes
	switch {
	case len(req.Files) > 0 && snap.archive():
		return spec, sandbox.Invalidf("give files or a snapshot, not both")
	case len(req.Files) > 0:
		files := make(map[string][]byte, len(req.Files))
		for _, name := range slices.Sorted(maps.Keys(req.Files)) {
			f := req.Files[name]
			b, err := f.Bytes()
			if err != nil {
				return spec, sandbox.Invalidf("files[%s]: %v", workspace.Quote(name), err)
			}
			files[name] = b
			// The decoded bytes are all the run needs: the request's copy
			// of the content may go now rather than when the run ends (the
			// name stays, for test detection).
			req.Files[name] = api.File{}
		}
		spec.Workspace.Files = files
	case snap.archive():
		if snap.Stats.Bytes > workdirBytes {
			return spec, fmt.Errorf("%w: the snapshot holds %s of files, over workdir_size %s",
				sandbox.ErrTooLarge, units.FormatBytes(snap.Stats.Bytes), units.FormatBytes(workdirBytes))
		}
		spec.Workspace = sandbox.Workspace{Tar: snap.Reader(), Filtered: true}
	}
	if in := snap.Stdin(); in != nil {
		spec.Stdin = in // a JSON body's, checked and spooled by ReadBody
	} else if req.Stdin != "" || req.StdinEncoding != "" {
		b, err := api.DecodeText(req.Stdin, req.StdinEncoding)
		if err != nil {
			return spec, sandbox.Invalidf("stdin: %v", err)
		}
		spec.Stdin = bytes.NewReader(b)
	}
	return spec, nil
}

// testPlan decides how /v1/test runs (testphase.Plan): the request's
// command, or one detected from the project's files; and the install step.
func testPlan(req api.TestRequest, snap *Snapshot) (testrun.Plan, *testrun.Install, error) {
	var names []string
	switch {
	case snap.archive():
		n, err := snap.Names(maxDetectNames)
		if err != nil {
			return testrun.Plan{}, nil, sandbox.Invalidf("snapshot: %v", err)
		}
		names = n
	default:
		for name := range req.Files {
			names = append(names, name)
		}
	}
	r := testphase.Request{Command: req.Command, Report: req.Report != nil, Setup: req.Setup, Workdir: req.Workdir,
		CommandField: "command", ReportField: "report"}
	if req.Report != nil {
		r.Format, r.ReportPath = req.Report.Format, req.Report.Path
	}
	return testphase.Plan(r, names)
}

// testJob is the two-phase job of a /v1/test request whose spec is built:
// its workspace becomes an archive each phase reads from the start.
func (s *Server) testJob(req api.TestRequest, spec sandbox.Spec, snap *Snapshot, plan testrun.Plan, in *testrun.Install) (testphase.Job, error) {
	input := testphase.Input{Image: spec.Image, Workdir: spec.Workdir, Env: req.Env, Limits: spec.Limits,
		Plan: plan, Install: in, Stdin: spec.Stdin, InstallTimeout: string(req.InstallTimeout),
		CacheKey: req.CacheKey, CacheScope: req.CacheScope}
	switch {
	case snap.archive():
		input.Open = func() (io.ReadCloser, error) { return io.NopCloser(snap.Reader()), nil }
	case len(spec.Workspace.Files) > 0:
		var buf bytes.Buffer
		if _, err := workspace.PackFiles(spec.Workspace.Files, &buf, workspace.Caps{MaxBytes: spec.Limits.WorkdirBytes}); err != nil {
			return testphase.Job{}, fmt.Errorf("%w: files: %w", sandbox.ErrInvalidSpec, err)
		}
		b := buf.Bytes()
		input.Open = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	}
	return s.jobs().Build(input)
}

// jobs is the server's test job builder.
func (s *Server) jobs() testphase.Builder {
	return testphase.Builder{DefaultImage: s.mgr.DefaultImage(), TimeoutCeiling: s.opts.Ceilings.Timeout(),
		WorkdirCeiling: s.opts.Ceilings.WorkdirBytes, TmpCeiling: s.opts.Ceilings.TmpBytes, CallerCacheKeys: s.opts.CallerCacheKeys}
}
