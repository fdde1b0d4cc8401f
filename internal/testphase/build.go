package testphase

import (
	"io"
	"time"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/testrun"
	"github.com/asterhq/aster/internal/units"
)

// Builder turns a request for a test run into a Job. It is the one place
// where that happens: /v1/test, MCP's run_tests, the review's test run and
// the model's evidence runs all build their jobs here, so the default
// image, the install timeout's checks and the cache identity cannot drift
// apart between them.
type Builder struct {
	// DefaultImage is the image of a request that names none.
	DefaultImage string
	// TimeoutCeiling bounds a caller's install_timeout (0: none).
	TimeoutCeiling time.Duration
	// WorkdirCeiling and TmpCeiling are the operator's ceilings on /work and
	// /tmp (0: none): a plan's needs raise its limits up to them.
	WorkdirCeiling, TmpCeiling int64
	// CallerCacheKeys lets a caller name its cache entry (CacheKey): off,
	// a caller's key is ignored.
	CallerCacheKeys bool
}

// Input is one request for a test run, as its surface received it.
type Input struct {
	// ID is the run id ("": one is made up).
	ID      string
	Image   string // "": the Builder's DefaultImage
	Workdir string
	Env     map[string]string
	// Limits are the test phase's resolved limits.
	Limits  sandbox.Limits
	Plan    testrun.Plan
	Install *testrun.Install
	// Open returns the repository's archive; nil is an empty workspace.
	Open  func() (io.ReadCloser, error)
	Stdin io.Reader

	// InstallTimeout is the caller's install_timeout as it was sent ("":
	// the Runner's default); Build parses and bounds it.
	InstallTimeout string
	// InstallTimeoutFixed is a timeout the server chose itself (the
	// evidence runs'); it wins over InstallTimeout.
	InstallTimeoutFixed time.Duration

	// CacheKey and CacheScope are the caller's cache_key and cache_scope,
	// honoured only when the Builder allows caller cache keys and the run
	// installs anything.
	CacheKey, CacheScope string
	// Repo and Scope are a cache identity the server derived itself (the
	// App's repository and pull request); they win over CacheKey.
	Repo, Scope string
}

// Build checks the request and returns its job; every refusal is a
// sandbox.ErrInvalidSpec naming the caller's field.
func (b Builder) Build(in Input) (Job, error) {
	job := Job{ID: in.ID, Image: in.Image, Workdir: in.Workdir, Env: in.Env, Limits: in.Limits,
		WorkdirCeiling: b.WorkdirCeiling, TmpCeiling: b.TmpCeiling, Plan: in.Plan, Install: in.Install,
		Open: in.Open, Stdin: in.Stdin, Repo: in.Repo, Scope: in.Scope}
	if job.ID == "" {
		job.ID = sandbox.NewRunID()
	}
	if job.Image == "" {
		job.Image = b.DefaultImage
	}
	if job.Open == nil {
		job.Open = emptyArchive
	}
	switch {
	case in.InstallTimeoutFixed > 0:
		job.InstallTimeout = in.InstallTimeoutFixed
	case in.InstallTimeout != "":
		d, err := ParseInstallTimeout(in.InstallTimeout, b.TimeoutCeiling)
		if err != nil {
			return Job{}, err
		}
		job.InstallTimeout = d
	}
	if in.Repo == "" && in.Install != nil && b.CallerCacheKeys && in.CacheKey != "" {
		repo, err := CallerRepo(in.CacheKey)
		if err != nil {
			return Job{}, sandbox.Invalidf("%v", err)
		}
		scope, err := CallerScope(in.CacheScope)
		if err != nil {
			return Job{}, sandbox.Invalidf("%v", err)
		}
		job.Repo, job.Scope = repo, scope
	}
	return job, nil
}

// ParseInstallTimeout reads a caller's install_timeout: a positive
// duration, at most ceiling (0: no ceiling).
func ParseInstallTimeout(s string, ceiling time.Duration) (time.Duration, error) {
	d, err := units.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, sandbox.Invalidf("install_timeout %q: want a duration such as 5m", s)
	}
	if ceiling > 0 && d > ceiling {
		return 0, sandbox.Invalidf("install_timeout %s is over the timeout ceiling %s", d, ceiling)
	}
	return d, nil
}

func emptyArchive() (io.ReadCloser, error) { return io.NopCloser(eofReader{}), nil }

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }
