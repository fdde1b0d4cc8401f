// Package testphase runs a repository's tests in up to two sandboxes: an
// install phase that fetches the dependencies through the operator's egress
// relay (its only way out) and exports the workspace, then a test phase in a
// fresh sandbox with no network at all, on the repository plus the
// dependency directories the install left. A dependency cache, per
// repository and scoped by branch or pull request, skips the install when
// nothing it would read changed. /v1/test,
// the MCP run_tests tool, `aster review --tests` and the App all run tests
// through Runner.Run.
package testphase

import (
	"archive/tar"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/depcache"
	"github.com/asterhq/aster/internal/egress"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/testrun"
	"github.com/asterhq/aster/internal/textclip"
	"github.com/asterhq/aster/internal/workspace"
)

// Phases.
const (
	PhaseInstall = "install"
	PhaseTest    = "test"
)

// NoEgressReason is the report of an install that could not run because the
// operator allows no egress host.
const NoEgressReason = "dependencies were not installed: no egress host is allowed (set egress.allow in aster.yaml or pass --egress-allow HOST)"

// Runner runs test jobs. The zero Runner runs the test phase alone (no
// egress policy, no cache); it is safe for concurrent use.
type Runner struct {
	// Policy is the operator's egress allow list; nil or empty: no install
	// phase runs (the report says why).
	Policy *egress.Policy
	// Registries are the operator's package sources for the install phase.
	Registries testrun.Registries
	// CABundle, when set, is a PEM bundle the install phase's tools trust
	// instead of the image's roots (a registry mirror behind a TLS-
	// intercepting proxy): placed at /work/.aster/ca.pem of the working
	// directory, named by egress.CAVariables. When the policy injects
	// credentials, the relay's per-run CA certificate is added to it (to the
	// host's roots when CABundle is empty).
	CABundle []byte
	// Cache, when set, keeps dependencies per repository.
	Cache *depcache.Cache
	// Digest resolves an image to its digest, for cache keys; nil: no cache.
	Digest func(ctx context.Context, image string) (string, error)
	// InstallTimeout is the install phase's timeout when the job gives none.
	InstallTimeout time.Duration
	// TempDir holds the dependency archive an install leaves, unlinked as
	// soon as it is created ("" is os.TempDir()).
	TempDir string
	Logger  *slog.Logger
}

// RunFunc runs one phase's sandbox; the caller adds its own hooks (output
// streaming, progress) and must call the spec's OnOutput when it replaces it.
type RunFunc func(ctx context.Context, phase string, spec sandbox.Spec) (sandbox.Result, error)

// Job is one test run.
type Job struct {
	// ID is the test phase's run id (empty: generated); the install phase
	// gets ID + "-install".
	ID      string
	Image   string
	Workdir string
	// Env is the caller's environment for both phases.
	Env map[string]string
	// Limits are the test phase's resolved limits; the install phase gets
	// the same with its own timeout.
	Limits sandbox.Limits
	// InstallTimeout is the install phase's timeout (0: the Runner's).
	InstallTimeout time.Duration
	// WorkdirCeiling and TmpCeiling are the operator's ceilings (0: none):
	// the plan's needs raise /work and /tmp up to them.
	WorkdirCeiling int64
	TmpCeiling     int64
	Plan           testrun.Plan
	// Install is the dependency step; nil: one phase, as before.
	Install *testrun.Install
	// Open returns the repository's archive, already through the workspace
	// filter; it is called once per use.
	Open func() (io.ReadCloser, error)
	// Stdin is the test phase's standard input.
	Stdin io.Reader
	// Repo is the repository's identity for the cache ("": no cache).
	Repo string
	// Scope is where in the repository the tree comes from, for the cache:
	// depcache.DefaultScope for the default branch, else the branch or pull
	// request ("pr:12"). The install's entry is written there; a hit comes
	// from there or from the default scope. "": no cache.
	Scope string
	// Disk, when set, is the host disk the job may use for its files: the
	// dependency archive is counted in it as it is written, and a job
	// refused more ends with the refusal (Outcome.Err). The other
	// workspaces of the phases are streamed and take no disk.
	Disk Disk
}

// Outcome is what a job did.
type Outcome struct {
	// Install is nil when the job had no install step.
	Install *api.InstallResult
	// Phase is the phase Result is of: the test phase, or the install when
	// it failed and the tests did not run.
	Phase  string
	Result sandbox.Result
	// Err is the error of that phase's run (classified), as RunFunc gave it.
	Err     error
	Summary testrun.Summary
	// Plan is the test plan as it ran (with the install's environment).
	Plan testrun.Plan
}

// Response is the outcome as /v1/test and run_tests answer it.
func (o Outcome) Response() api.TestResponse {
	out := api.TestResponse{Result: o.Result.Wire(), Command: o.Plan.Argv, Tests: o.Summary, Phase: o.Phase, Install: o.Install}
	if out.Command == nil {
		out.Command = []string{}
	}
	if out.Tests.Failures == nil {
		out.Tests.Failures = []testrun.Failure{}
	}
	return out
}

func (r *Runner) log() *slog.Logger {
	if r.Logger != nil {
		return r.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// Run runs the job: the install phase (or the cache) when the job has an
// install step, then the test phase. A failed install ends the job before
// the tests. The error is only for a job that could not be set up at all;
// a run's own failure is in the Outcome.
func (r *Runner) Run(ctx context.Context, job Job, run RunFunc) (Outcome, error) {
	out := Outcome{Phase: PhaseTest, Plan: job.Plan}
	if job.ID == "" {
		job.ID = sandbox.NewRunID()
	}
	job.Workdir = cleanWorkdir(job.Workdir)
	disk := &diskUse{disk: job.Disk}
	// deps opens the dependencies' archive (nil: none).
	var deps func() io.Reader
	if job.Install != nil {
		in := job.Install
		out.Install = &api.InstallResult{Kind: in.Kind, Command: in.Command(), ExitCode: -1, Cache: api.CacheOff, Downloads: api.Downloads{Hosts: []string{}}}
		key, keyErr := r.cacheKey(ctx, job)
		if keyErr != nil {
			r.log().Warn("dependency cache key", "run", job.ID, "err", keyErr)
		}
		var entry *depcache.Entry
		if key.Repo != "" {
			var hit bool
			entry, hit = r.Cache.Get(key)
			if hit {
				defer entry.Close()
				out.Install.Status, out.Install.Cache = api.InstallCached, api.CacheHit
				deps = entry.Reader
			} else {
				out.Install.Cache = api.CacheMiss
			}
		}
		if deps == nil {
			if !r.Policy.Enabled() {
				out.Install.Status, out.Install.Reason = api.InstallSkipped, NoEgressReason
			} else {
				depsFile, res, err := r.install(ctx, job, run, out.Install, disk)
				if depsFile != nil {
					defer depsFile.Close()
				}
				if out.Install.Status == api.InstallFailed {
					out.Phase, out.Result, out.Err = PhaseInstall, res, err
					out.Summary = testrun.Summary{Framework: job.Plan.Framework, Format: job.Plan.Format, Failures: []testrun.Failure{},
						Error: "the tests did not run: the install phase failed"}
					return out, nil
				}
				deps = depsFile.Reader
				if key.Repo != "" {
					if err := r.Cache.Put(key, depsFile.Reader()); err != nil {
						r.log().Warn("dependency cache put", "run", job.ID, "err", err)
					}
				}
			}
		}
		if deps != nil {
			out.Plan = job.Plan.WithInstall(*in, job.Workdir)
		}
	}
	res, err := r.test(ctx, job, out.Plan, deps, run, &out.Summary)
	out.Result, out.Err = res, err
	return out, nil
}

// cacheKey is the job's cache key; its Repo is empty when there is no cache.
// It holds everything the install may read (cachekey.go) and the job's scope.
func (r *Runner) cacheKey(ctx context.Context, job Job) (depcache.Key, error) {
	if r.Cache == nil || r.Digest == nil || job.Repo == "" || job.Scope == "" {
		return depcache.Key{}, nil
	}
	if err := depcache.ValidScope(job.Scope); err != nil {
		return depcache.Key{}, err
	}
	digest, err := r.Digest(ctx, job.Image)
	if err != nil || digest == "" {
		return depcache.Key{}, fmt.Errorf("image digest: %v", err)
	}
	rc, err := job.Open()
	if err != nil {
		return depcache.Key{}, err
	}
	defer rc.Close()
	scan, err := scanTree(rc, job.Workdir)
	if err != nil {
		return depcache.Key{}, err
	}
	inputs, basis := scan.inputs(job.Install, job.Env)
	r.log().Debug("dependency cache key", "run", job.ID, "scope", job.Scope, "basis", basis, "inputs", len(inputs))
	env := []string{"npm=" + r.Registries.NPM, "go=" + r.Registries.GoProxy, "pip=" + r.Registries.PipIndex}
	for k, v := range job.Env {
		env = append(env, "caller:"+k+"="+v)
	}
	return depcache.Key{Repo: job.Repo, Scope: job.Scope, ImageDigest: digest, Install: job.Install.Argv, Workdir: job.Workdir, Env: env, Inputs: inputs}, nil
}

// proxyURL is where aster-init's CONNECT proxy listens inside the sandbox.
var proxyURL = fmt.Sprintf("http://127.0.0.1:%d", sandbox.EgressProxyPort)

// depsSlackBytes is the tar framing a dependency archive may add to its
// files' bytes.
const depsSlackBytes = 64 << 20

// install runs the install phase and returns the dependency archive it
// produced (a temporary file the caller closes), filling rep. The
// export of /work is read as it arrives: only the dependency directories
// are kept, in a file counted in the job's disk. When that disk refuses, the
// install fails with the refusal as its error.
func (r *Runner) install(ctx context.Context, job Job, run RunFunc, rep *api.InstallResult, disk *diskUse) (*tempFile, sandbox.Result, error) {
	fail := func(res sandbox.Result, err error, reason string) (*tempFile, sandbox.Result, error) {
		if refusal := disk.refused(); refusal != nil {
			// Whatever the run made of it (a failed export, a workspace
			// that could not be sent), the cause is the host's disk.
			res.Status, res.Error = sandbox.StatusError, refusal.Error()
			err, reason = refusal, refusal.Error()
		}
		rep.Status, rep.Reason = api.InstallFailed, clipLine(textclip.OneLine(reason, 0))
		return nil, res, err
	}
	limits := job.Limits
	timeout := job.InstallTimeout
	if timeout <= 0 {
		timeout = r.InstallTimeout
	}
	if timeout > 0 {
		limits.TimeoutMS = timeout.Milliseconds()
	}
	limits.WorkdirBytes = raise(limits.WorkdirBytes, testrun.MinInstallWorkdirBytes, job.WorkdirCeiling)
	limits.TmpBytes = job.Plan.TmpBytes(limits.TmpBytes, job.TmpCeiling)
	env := testrun.InstallEnv(proxyURL, job.Workdir, r.Registries, job.Env)
	relay := r.Policy.NewRun(job.ID + "-install")
	// The relay ends with the phase: a tunnel asked for later (a process
	// the run left, a replay) is refused.
	defer relay.Close()
	var ws sandbox.Workspace
	if bundle := r.trustBundle(relay); len(bundle) > 0 {
		name := path.Join(job.Workdir, ".aster", "ca.pem")
		ca := caTar(name, bundle)
		tr, stop, err := layered(job.Open, func() io.Reader { return bytes.NewReader(ca) }, []string{name}, limits.WorkdirBytes)
		if err != nil {
			return fail(sandbox.Result{Status: sandbox.StatusError, ExitCode: -1}, err, "the install workspace: "+err.Error())
		}
		defer stop()
		ws = sandbox.Workspace{Tar: tr, Filtered: true}
		for _, k := range egress.CAVariables {
			if _, set := job.Env[k]; !set {
				env[k] = "/work/" + name
			}
		}
	} else {
		repo, err := job.Open()
		if err != nil {
			return fail(sandbox.Result{Status: sandbox.StatusError, ExitCode: -1}, err, "open the repository: "+err.Error())
		}
		defer repo.Close()
		ws = sandbox.Workspace{Tar: repo, Filtered: true}
	}
	deps, err := newTempFile(r.TempDir, "aster-deps-*.tar", limits.WorkdirBytes+depsSlackBytes, disk)
	if err != nil {
		return fail(sandbox.Result{Status: sandbox.StatusError, ExitCode: -1}, err, "dependency archive: "+err.Error())
	}
	ok := false
	defer func() {
		if !ok {
			deps.Close()
		}
	}()
	export, extracted := r.extract(deps, job.Workdir, workspace.Caps{MaxBytes: limits.WorkdirBytes})
	spec := sandbox.Spec{
		ID: job.ID + "-install", Image: job.Image, Argv: job.Install.Argv, Workdir: job.Workdir,
		Env:       env,
		Workspace: ws, Limits: limits,
		Egress: relay, Export: export,
	}
	t0 := time.Now()
	res, runErr := run(ctx, PhaseInstall, spec)
	rep.DurationMS = time.Since(t0).Milliseconds()
	rep.ID, rep.SandboxStatus, rep.ExitCode = res.ID, res.Status, res.ExitCode
	rep.Downloads = downloads(relay.Stats())
	r.log().Info("install phase", "run", spec.ID, "status", res.Status, "exit", res.ExitCode, "ms", rep.DurationMS,
		"hosts", strings.Join(rep.Downloads.Hosts, ","), "bytes", rep.Downloads.Bytes, "refused", rep.Downloads.Refused)
	// An extraction that refused the export has said so before the export
	// could fail; one still going is ended by the run's end.
	var extractErr error
	ended := false
	select {
	case extractErr = <-extracted:
		ended = true
	default:
	}
	refusedExport := ended && extractErr != nil
	done := runErr == nil && res.Status == sandbox.StatusOK
	if done {
		export.Close()
	} else {
		export.CloseWithError(errStreamEnded)
	}
	if !ended {
		extractErr = <-extracted
	}
	if !done {
		rep.ErrorLines = errorLines(res)
		reason := phaseReason("install", res, limits) + credentialRejections(rep.Downloads)
		switch {
		case refusedExport:
			reason = "the install phase's workspace export: " + extractErr.Error()
		case runErr != nil:
			reason = runErr.Error()
		}
		return fail(res, runErr, reason)
	}
	if extractErr != nil {
		return fail(res, nil, "the install phase's workspace export: "+extractErr.Error())
	}
	rep.Status = api.InstallOK
	ok = true
	return deps, res, nil
}

// extract keeps the dependency directories of the export written to w, in
// deps, as it arrives. The caller closes w once the run is over (with an
// error if it failed) and then receives extractDeps' error from done. A
// refused export stops the writer at once: its next write fails.
func (r *Runner) extract(deps io.Writer, workdir string, caps workspace.Caps) (w *io.PipeWriter, done <-chan error) {
	pr, pw := io.Pipe()
	out := make(chan error, 1)
	go func() {
		if _, err := extractDeps(pr, deps, workdir, caps); err != nil {
			out <- err // before the writer's next write fails
			pr.CloseWithError(err)
			return
		}
		// The writer may send padding after the archive's end; the caller
		// closes it.
		_, err := io.Copy(io.Discard, pr)
		out <- err
	}()
	return pw, out
}

// test runs the test phase on the repository plus deps (nil: none). The
// workspace is streamed into the sandbox, so a test phase that waits for a
// slot holds no file of its own.
func (r *Runner) test(ctx context.Context, job Job, plan testrun.Plan, deps func() io.Reader, run RunFunc, sum *testrun.Summary) (sandbox.Result, error) {
	limits := job.Limits
	limits.TmpBytes = plan.TmpBytes(limits.TmpBytes, job.TmpCeiling)
	fail := func(err error) (sandbox.Result, error) {
		*sum = testrun.Summary{Framework: plan.Framework, Format: plan.Format, Failures: []testrun.Failure{}, Error: clipLine(textclip.OneLine(err.Error(), 0))}
		return sandbox.Result{ID: job.ID, Status: sandbox.StatusError, ExitCode: -1, Error: err.Error()}, err
	}
	var ws sandbox.Workspace
	if deps != nil {
		limits.WorkdirBytes = raise(limits.WorkdirBytes, testrun.MinInstallWorkdirBytes, job.WorkdirCeiling)
		tr, stop, err := layered(job.Open, deps, depPrefixes(job.Workdir), limits.WorkdirBytes)
		if err != nil {
			err = fmt.Errorf("%w: the repository with its dependencies: %w", sandbox.ErrTooLarge, err)
			if !errors.Is(err, workspace.ErrTooLarge) {
				err = fmt.Errorf("dependency workspace: %w", err)
			}
			return fail(err)
		}
		defer stop()
		ws = sandbox.Workspace{Tar: tr, Filtered: true}
	} else {
		repo, err := job.Open()
		if err != nil {
			*sum = testrun.Summary{Framework: plan.Framework, Format: plan.Format, Failures: []testrun.Failure{}, Error: "open the repository: " + err.Error()}
			return sandbox.Result{ID: job.ID, Status: sandbox.StatusError, ExitCode: -1, Error: err.Error()}, err
		}
		defer repo.Close()
		ws = sandbox.Workspace{Tar: repo, Filtered: true}
	}
	col := testrun.NewCollector(plan)
	spec := sandbox.Spec{ID: job.ID, Image: job.Image, Argv: plan.Argv, Env: plan.MergeEnv(job.Env), Workdir: job.Workdir, Workspace: ws, Limits: limits, Stdin: job.Stdin,
		OnOutput: func(st sandbox.Stream, b []byte) {
			if st == sandbox.Stdout {
				_, _ = col.Write(b)
			}
		}}
	res, err := run(ctx, PhaseTest, spec)
	*sum = col.Summary()
	if sum.Failures == nil {
		sum.Failures = []testrun.Failure{}
	}
	return res, err
}

// raise is v raised to need, but never past ceiling (0: none).
func raise(v, need, ceiling int64) int64 {
	if ceiling > 0 {
		need = min(need, ceiling)
	}
	return max(v, need)
}

// maxRefusedHosts bounds the refused hosts named in a report, and the
// refusals listed; maxRefusalReason one refusal's sentence.
const (
	maxRefusedHosts  = 20
	maxRefusalReason = 300
)

// downloads summarises the relay's record of one run.
func downloads(st egress.Stats) api.Downloads {
	d := api.Downloads{Hosts: []string{}, Bytes: st.Bytes, Refused: st.Refused}
	var bytes int64
	refused := 0
	for _, c := range st.Conns {
		bytes += c.BytesIn + c.BytesOut
		if c.Refused != "" {
			refused++
		}
		host := printable(c.Host) // the job wrote it
		if c.Refused != "" {
			if !slices.Contains(d.RefusedHosts, host) && len(d.RefusedHosts) < maxRefusedHosts {
				d.RefusedHosts = append(d.RefusedHosts, host)
			}
			i := slices.IndexFunc(d.Refusals, func(r api.EgressRefusal) bool { return r.Host == host && r.Port == c.Port && r.Kind == c.Kind })
			switch {
			case i >= 0:
				d.Refusals[i].Count++
			case len(d.Refusals) < maxRefusedHosts:
				d.Refusals = append(d.Refusals, api.EgressRefusal{Host: host, Port: c.Port, Kind: c.Kind,
					Reason: textclip.OneLine(printableText(c.Refused), maxRefusalReason), Count: 1})
			}
			continue
		}
		d.Connections++
		if !slices.Contains(d.Hosts, host) {
			d.Hosts = append(d.Hosts, host)
		}
	}
	if st.Dropped > 0 {
		// Tunnels past the connection cap are counted, not recorded one by one.
		d.Refusals = append(d.Refusals, api.EgressRefusal{Host: "*", Kind: egress.KindConnectionCap, Count: st.Dropped,
			Reason: fmt.Sprintf("%d tunnels past the run's connection cap were refused (their hosts are not recorded)", st.Dropped)})
	}
	d.Bytes, d.Refused = max(d.Bytes, bytes), max(d.Refused, refused)
	slices.Sort(d.Hosts)
	slices.Sort(d.RefusedHosts)
	slices.SortFunc(d.Refusals, func(a, b api.EgressRefusal) int {
		return cmp.Or(cmp.Compare(a.Host, b.Host), cmp.Compare(a.Port, b.Port), cmp.Compare(a.Kind, b.Kind))
	})
	return d
}

// Step is the install step of a test run: the given setup command (an
// empty, non-nil one turns the install phase off), else the one detected
// from the workspace's entry names for the plan's framework; nil when there
// is none. workdir is relative to /work.
func Step(setup []string, names []string, workdir string, plan testrun.Plan) (*testrun.Install, error) {
	rel, err := testrun.NamesIn(names, workdir)
	if err != nil {
		return nil, err
	}
	if setup != nil {
		if len(setup) == 0 {
			return nil, nil
		}
		in, err := testrun.Setup(setup, rel)
		if err != nil {
			return nil, err
		}
		return &in, nil
	}
	if in, ok := testrun.DetectInstall(rel, plan.Framework, cleanWorkdir(workdir)); ok {
		return &in, nil
	}
	return nil, nil
}

func cleanWorkdir(w string) string {
	if w == "" {
		return ""
	}
	c, err := workspace.CleanName(w)
	if err != nil || c == "." {
		return ""
	}
	return c
}

// printable is a name the job wrote, fit for a report: at most 255 bytes,
// anything but printable ASCII shown as '?'.
// printableText is a sentence the relay wrote about a name a job wrote:
// spaces kept, every other control or non-ASCII byte shown as '?'.
func printableText(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c != ' ' && (c < 0x21 || c > 0x7e) {
			b[i] = '?'
		}
	}
	return string(b)
}

func printable(s string) string {
	if len(s) > 255 {
		s = s[:255]
	}
	b := []byte(s)
	for i, c := range b {
		if c < 0x21 || c > 0x7e {
			b[i] = '?'
		}
	}
	return string(b)
}

// trustBundle is the PEM bundle the install phase trusts (nil: the image's
// roots): the operator's tests.ca_file, and when the relay injects
// credentials, the run's CA certificate after it (with the host's roots
// when the operator gave none, since the variables replace the image's).
func (r *Runner) trustBundle(relay *egress.Run) []byte {
	runCA := relay.CACertPEM()
	if runCA == nil {
		return r.CABundle
	}
	base := r.CABundle
	if len(base) == 0 {
		if base = egress.HostRoots(); len(base) == 0 {
			r.log().Warn("no system CA bundle on the host: the install phase trusts only the relay's run CA")
		}
	}
	return egress.TrustBundle(base, runCA)
}

// credentialRejections is the report's note on requests whose credential
// the upstream refused ("" when none).
func credentialRejections(d api.Downloads) string {
	var parts []string
	for _, ref := range d.Refusals {
		if ref.Kind == egress.KindCredentialRejected {
			parts = append(parts, fmt.Sprintf("%s by %s:%d", ref.Reason, ref.Host, ref.Port))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, ", ") + " (check the operator's egress.credentials value)"
}

// caTar is an archive of one file, the CA bundle, at name.
func caTar(name string, pem []byte) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	_ = tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(pem)), Typeflag: tar.TypeReg})
	_, _ = tw.Write(pem)
	_ = tw.Close()
	return buf.Bytes()
}

// MaxCacheKeyBytes bounds a caller's cache_key.
const MaxCacheKeyBytes = 256

// CallerRepo is the cache identity of a caller-named repository (the
// cache_key of /v1/test and MCP run_tests): checked, and scoped so that it
// can never name the entries of the App or of aster review.
func CallerRepo(key string) (string, error) {
	if len(key) > MaxCacheKeyBytes || strings.ContainsFunc(key, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return "", fmt.Errorf("cache_key: at most %d bytes of printable text", MaxCacheKeyBytes)
	}
	return "caller:" + key, nil
}

// CallerScope is the cache scope a caller names with its cache_key (the
// cache_scope of /v1/test and MCP run_tests): empty is the default scope.
func CallerScope(scope string) (string, error) {
	if scope == "" {
		return depcache.DefaultScope, nil
	}
	if err := depcache.ValidScope(scope); err != nil {
		return "", fmt.Errorf("cache_scope: 1 to %d bytes of printable text", depcache.MaxScopeBytes)
	}
	return scope, nil
}
