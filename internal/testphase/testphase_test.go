package testphase

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/bytebudget"
	"github.com/asterhq/aster/internal/depcache"
	"github.com/asterhq/aster/internal/egress"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/testrun"
	"github.com/asterhq/aster/internal/workspace/workspacetest"
)

// These tests hold the orchestration to its contract with a scripted RunFunc:
// which phases run, with what isolation, on which workspace, and what is
// reported. The sandboxes themselves are exercised against the real engine in
// docker_test.go.

type entry struct {
	name string
	body string
	typ  byte
	link string
}

func tarOf(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: 0o644, Typeflag: e.typ, Linkname: e.link}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.body))
		}
		if h.Typeflag == tar.TypeDir {
			h.Mode = 0o755
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write([]byte(e.body))
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

var repoTar = []entry{
	{name: "package.json", body: `{"name":"p","dependencies":{"dep":"1"}}`},
	{name: "package-lock.json", body: `{"lockfileVersion":3}`},
	{name: "app.js", body: "repo version"},
	{name: "node_modules/", typ: tar.TypeDir},
	{name: "node_modules/stale.js", body: "committed by mistake"},
}

// fake is a scripted sandbox: the install phase exports export, the test
// phase records the workspace it got.
type fake struct {
	t       *testing.T
	export  []byte
	install sandbox.Result
	specs   map[string][]sandbox.Spec
	got     map[string]string // the test phase's workspace
}

func (f *fake) run(ctx context.Context, phase string, spec sandbox.Spec) (sandbox.Result, error) {
	if f.specs == nil {
		f.specs = map[string][]sandbox.Spec{}
	}
	f.specs[phase] = append(f.specs[phase], spec)
	entries, err := workspacetest.Read(spec.Workspace.Tar)
	if err != nil {
		f.t.Errorf("the %s phase's workspace: %v", phase, err)
	}
	ws := map[string]string{}
	for _, e := range entries {
		ws[e.Name] = e.Data
	}
	switch phase {
	case PhaseInstall:
		if _, ok := ws["package.json"]; !ok {
			f.t.Errorf("the install phase did not get the repository: %v", ws)
		}
		if spec.Export != nil {
			if _, err := spec.Export.Write(f.export); err != nil {
				return sandbox.Result{ID: spec.ID, Status: sandbox.StatusError, ExitCode: -1, Error: err.Error()}, nil
			}
		}
		res := f.install
		res.ID = spec.ID
		return res, nil
	default:
		f.got = ws
		if spec.OnOutput != nil {
			spec.OnOutput(sandbox.Stdout, []byte("ok\n"))
		}
		return sandbox.Result{ID: spec.ID, Status: sandbox.StatusOK, ExitCode: 0}, nil
	}
}

func allowAll() *egress.Policy {
	return &egress.Policy{Allow: []egress.Rule{{Host: "registry.invalid", Port: 443}}}
}

func job(t *testing.T, repo []byte) Job {
	plan := testrun.Plan{Framework: "npm", Argv: []string{"npm", "test"}, Format: testrun.FormatNone}
	in, ok := testrun.DetectInstall([]string{"package.json", "package-lock.json", "app.js"}, "npm", "")
	if !ok {
		t.Fatal("no install detected")
	}
	return Job{Image: "img", Plan: plan, Install: &in, Limits: sandbox.Limits{TimeoutMS: 1000, WorkdirBytes: 64 << 20, TmpBytes: 64 << 20},
		WorkdirCeiling: 2 << 30, InstallTimeout: 0, Env: map[string]string{"CALLER": "1"}, Scope: depcache.DefaultScope,
		Open: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(repo)), nil }}
}

func exportTar(t testing.TB) []byte {
	return tarOf(t, append(append([]entry{}, repoTar[:4]...), // npm ci removed the committed node_modules/stale.js
		entry{name: "app.js", body: "changed by the install"},
		entry{name: "node_modules/dep/", typ: tar.TypeDir},
		entry{name: "node_modules/dep/index.js", body: "module.exports = 1"},
		entry{name: "node_modules/.bin/dep", typ: tar.TypeSymlink, link: "../dep/index.js"},
		entry{name: "node_modules/dep/hard", typ: tar.TypeLink, link: "app.js"}, // a link out of the dependencies
		entry{name: "outside.txt", body: "not a dependency"},
	)...)
}

func TestNoInstallStepIsOnePhase(t *testing.T) {
	f := &fake{t: t}
	r := &Runner{Policy: allowAll()}
	j := job(t, tarOf(t, repoTar...))
	j.Install = nil
	out, err := r.Run(t.Context(), j, f.run)
	if err != nil {
		t.Fatal(err)
	}
	if out.Install != nil || len(f.specs[PhaseInstall]) != 0 || len(f.specs[PhaseTest]) != 1 {
		t.Fatalf("phases %v, install %+v", f.specs, out.Install)
	}
	if s := f.specs[PhaseTest][0]; s.Egress != nil || s.Export != nil {
		t.Fatal("the test phase got a way out")
	}
	if out.Phase != PhaseTest || out.Response().Phase != PhaseTest {
		t.Fatalf("phase %q", out.Phase)
	}
}

func TestNoEgressHostSkipsInstall(t *testing.T) {
	for name, p := range map[string]*egress.Policy{"nil": nil, "empty": {}} {
		t.Run(name, func(t *testing.T) {
			f := &fake{t: t}
			out, err := (&Runner{Policy: p}).Run(t.Context(), job(t, tarOf(t, repoTar...)), f.run)
			if err != nil {
				t.Fatal(err)
			}
			if len(f.specs[PhaseInstall]) != 0 {
				t.Fatal("an install ran without an allowed host")
			}
			in := out.Install
			if in == nil || in.Status != api.InstallSkipped || !strings.Contains(in.Reason, "egress.allow") || !strings.Contains(in.Reason, "--egress-allow") {
				t.Fatalf("install %+v", in)
			}
			if len(f.specs[PhaseTest]) != 1 || f.got["app.js"] != "repo version" {
				t.Fatalf("the tests did not run on the repository: %v", f.got)
			}
			if !strings.Contains(strings.Join(Lines(in), "\n"), "no egress host is allowed") {
				t.Errorf("lines %q", Lines(in))
			}
		})
	}
}

func TestTwoPhases(t *testing.T) {
	f := &fake{t: t, export: exportTar(t), install: sandbox.Result{Status: sandbox.StatusOK}}
	r := &Runner{Policy: allowAll(), InstallTimeout: 7e9, Registries: testrun.Registries{NPM: "https://npm.example.invalid/"}}
	out, err := r.Run(t.Context(), job(t, tarOf(t, repoTar...)), f.run)
	if err != nil {
		t.Fatal(err)
	}
	if out.Install == nil || out.Install.Status != api.InstallOK || out.Phase != PhaseTest {
		t.Fatalf("install %+v phase %s", out.Install, out.Phase)
	}
	is, ts := f.specs[PhaseInstall][0], f.specs[PhaseTest][0]
	if is.Egress == nil || is.Export == nil {
		t.Fatal("the install phase has no relay or no export")
	}
	if ts.Egress != nil || ts.Export != nil {
		t.Fatal("the test phase has a way out")
	}
	if is.Limits.TimeoutMS != 7000 || ts.Limits.TimeoutMS != 1000 {
		t.Errorf("timeouts: install %d, test %d", is.Limits.TimeoutMS, ts.Limits.TimeoutMS)
	}
	if is.Limits.WorkdirBytes < testrun.MinInstallWorkdirBytes || ts.Limits.WorkdirBytes < testrun.MinInstallWorkdirBytes {
		t.Errorf("workdir not raised for dependencies: %d %d", is.Limits.WorkdirBytes, ts.Limits.WorkdirBytes)
	}
	for _, k := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "npm_config_proxy", "npm_config_https_proxy"} {
		if is.Env[k] != "http://127.0.0.1:3128" {
			t.Errorf("install %s = %q", k, is.Env[k])
		}
		if _, ok := ts.Env[k]; ok {
			t.Errorf("the test phase has %s", k)
		}
	}
	if is.Env["npm_config_registry"] != "https://npm.example.invalid/" || is.Env["CALLER"] != "1" || ts.Env["CALLER"] != "1" {
		t.Errorf("env: install %v test %v", is.Env, ts.Env)
	}
	if ts.Env["GOPROXY"] != "off" {
		t.Errorf("test GOPROXY %q", ts.Env["GOPROXY"])
	}
	// The test phase has the repository as sent plus the dependency directories, nothing else of the install's.
	want := map[string]string{"package.json": `{"name":"p","dependencies":{"dep":"1"}}`, "app.js": "repo version", "node_modules/dep/index.js": "module.exports = 1"}
	for name, body := range want {
		if f.got[name] != body {
			t.Errorf("test workspace %s = %q, want %q", name, f.got[name], body)
		}
	}
	for _, name := range []string{"outside.txt", "node_modules/stale.js", "node_modules/dep/hard"} {
		if _, ok := f.got[name]; ok {
			t.Errorf("test workspace has %s", name)
		}
	}
	if _, ok := f.got["node_modules/.bin/dep"]; !ok {
		t.Error("the dependencies' symlink was lost")
	}
}

func TestInstallFailureEndsTheJob(t *testing.T) {
	f := &fake{t: t, export: exportTar(t), install: sandbox.Result{Status: sandbox.StatusExitNonzero, ExitCode: 1,
		Stderr: sandbox.Output{Data: []byte("npm http fetch GET 200\nnpm ERR! 404 Not Found - GET dep\nnpm ERR! a second line\n")}}}
	out, err := (&Runner{Policy: allowAll()}).Run(t.Context(), job(t, tarOf(t, repoTar...)), f.run)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.specs[PhaseTest]) != 0 {
		t.Fatal("the tests ran after a failed install")
	}
	resp := out.Response()
	if resp.Phase != PhaseInstall || resp.Install.Status != api.InstallFailed || resp.Install.ExitCode != 1 || resp.Status != sandbox.StatusExitNonzero {
		t.Fatalf("response %+v install %+v", resp.Result, resp.Install)
	}
	if len(resp.Install.ErrorLines) != 2 || !strings.Contains(resp.Install.ErrorLines[0], "404 Not Found") {
		t.Errorf("error lines %q", resp.Install.ErrorLines)
	}
	if !strings.Contains(resp.Install.Reason, "exited with code 1") || !strings.Contains(resp.Tests.Error, "install phase failed") {
		t.Errorf("reason %q, tests error %q", resp.Install.Reason, resp.Tests.Error)
	}
}

func TestHostileExportRefused(t *testing.T) {
	for name, export := range map[string][]byte{
		"escaping name": tarOf(t, entry{name: "../../etc/evil", body: "x"}),
		"device":        tarOf(t, entry{name: "node_modules/dev", typ: tar.TypeChar}),
		"garbage":       bytes.Repeat([]byte{0xff}, 2048),
	} {
		t.Run(name, func(t *testing.T) {
			f := &fake{t: t, export: export, install: sandbox.Result{Status: sandbox.StatusOK}}
			out, err := (&Runner{Policy: allowAll()}).Run(t.Context(), job(t, tarOf(t, repoTar...)), f.run)
			if err != nil {
				t.Fatal(err)
			}
			if out.Install.Status != api.InstallFailed || !strings.Contains(out.Install.Reason, "export") || len(f.specs[PhaseTest]) != 0 {
				t.Fatalf("install %+v, test runs %d", out.Install, len(f.specs[PhaseTest]))
			}
		})
	}
}

func TestExportCapped(t *testing.T) {
	big := tarOf(t, entry{name: "node_modules/big", body: strings.Repeat("x", 1<<20)})
	f := &fake{t: t, export: big, install: sandbox.Result{Status: sandbox.StatusOK}}
	j := job(t, tarOf(t, repoTar...))
	j.Limits.WorkdirBytes, j.WorkdirCeiling = 1<<19, 1<<19 // as if /work were small
	out, _ := (&Runner{Policy: allowAll()}).Run(t.Context(), j, f.run)
	if out.Install.Status != api.InstallFailed || !strings.Contains(out.Install.Reason, "export") || len(f.specs[PhaseTest]) != 0 {
		t.Fatalf("an over-cap export was accepted: %+v", out.Install)
	}
}

// budgetDisk is a Disk over a byte budget, as the HTTP API's spool is.
type budgetDisk struct{ b *bytebudget.Budget }

func (d budgetDisk) Grow(n int64) error {
	if ok, _ := d.b.TryTake(n); !ok {
		return fmt.Errorf("%w: the disk is taken", sandbox.ErrBusy)
	}
	return nil
}

func (d budgetDisk) Give(n int64) { d.b.Give(n) }

// The dependency archive is counted in the job's disk while it exists, and
// given back when the job ends; the test phase's workspace takes none.
func TestDiskCountsDependencies(t *testing.T) {
	deps := strings.Repeat("d", 256<<10)
	export := tarOf(t, entry{name: "node_modules/", typ: tar.TypeDir}, entry{name: "node_modules/big.js", body: deps})
	disk := budgetDisk{bytebudget.New(0)}
	var during int64
	f := &fake{t: t, export: export, install: sandbox.Result{Status: sandbox.StatusOK}}
	run := func(ctx context.Context, phase string, spec sandbox.Spec) (sandbox.Result, error) {
		if phase == PhaseTest {
			during = disk.b.InUse()
		}
		return f.run(ctx, phase, spec)
	}
	j := job(t, tarOf(t, repoTar...))
	j.Disk = disk
	out, err := (&Runner{Policy: allowAll()}).Run(t.Context(), j, run)
	if err != nil || out.Err != nil || out.Install.Status != api.InstallOK {
		t.Fatalf("%v %v %+v", err, out.Err, out.Install)
	}
	if f.got["node_modules/big.js"] != deps {
		t.Fatal("the test phase did not get the dependencies")
	}
	// The archive: the file, its headers and the end of the archive.
	if during < int64(len(deps)) || during > int64(len(deps))+8<<10 {
		t.Errorf("disk held during the test phase %d, want the dependency archive (%d bytes of files)", during, len(deps))
	}
	if peak := disk.b.Peak(); peak != during {
		t.Errorf("peak %d, want %d: something besides the dependency archive was written", peak, during)
	}
	if n := disk.b.InUse(); n != 0 {
		t.Errorf("%d bytes still held after the job", n)
	}
}

// A disk that refuses ends the install with the refusal as the job's error
// (classed: the caller answers 429), and gives everything back.
func TestDiskRefusalEndsTheJob(t *testing.T) {
	export := tarOf(t, entry{name: "node_modules/", typ: tar.TypeDir}, entry{name: "node_modules/big.js", body: strings.Repeat("d", 256<<10)})
	disk := budgetDisk{bytebudget.New(64 << 10)}
	f := &fake{t: t, export: export, install: sandbox.Result{Status: sandbox.StatusOK}}
	j := job(t, tarOf(t, repoTar...))
	j.Disk = disk
	out, err := (&Runner{Policy: allowAll()}).Run(t.Context(), j, f.run)
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(out.Err, sandbox.ErrBusy) || out.Phase != PhaseInstall || out.Install.Status != api.InstallFailed ||
		!strings.Contains(out.Install.Reason, "host disk") || len(f.specs[PhaseTest]) != 0 {
		t.Fatalf("err %v phase %s install %+v, test runs %d", out.Err, out.Phase, out.Install, len(f.specs[PhaseTest]))
	}
	if n := disk.b.InUse(); n != 0 {
		t.Errorf("%d bytes still held after the job", n)
	}
}

func openCache(t *testing.T) *depcache.Cache {
	c, err := depcache.Open(depcache.Options{Dir: t.TempDir(), MaxBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func digest(context.Context, string) (string, error) { return "sha256:1234", nil }

func TestCacheHitSkipsInstallPerRepository(t *testing.T) {
	cache := openCache(t)
	r := &Runner{Policy: allowAll(), Cache: cache, Digest: digest}
	repo := tarOf(t, repoTar...)
	run := func(repoID string) (Outcome, *fake) {
		f := &fake{t: t, export: exportTar(t), install: sandbox.Result{Status: sandbox.StatusOK}}
		j := job(t, repo)
		j.Repo = repoID
		out, err := r.Run(t.Context(), j, f.run)
		if err != nil {
			t.Fatal(err)
		}
		return out, f
	}
	first, f1 := run("github:org/a")
	if first.Install.Cache != api.CacheMiss || len(f1.specs[PhaseInstall]) != 1 {
		t.Fatalf("first run: %+v", first.Install)
	}
	second, f2 := run("github:org/a")
	if second.Install.Cache != api.CacheHit || second.Install.Status != api.InstallCached || len(f2.specs[PhaseInstall]) != 0 {
		t.Fatalf("second run: %+v, installs %d", second.Install, len(f2.specs[PhaseInstall]))
	}
	if f2.got["node_modules/dep/index.js"] != "module.exports = 1" || f2.got["app.js"] != "repo version" {
		t.Fatalf("the cached dependencies were not overlaid: %v", f2.got)
	}
	other, f3 := run("github:org/b")
	if other.Install.Cache != api.CacheMiss || len(f3.specs[PhaseInstall]) != 1 {
		t.Fatalf("repository b was offered a's cache: %+v", other.Install)
	}
	// A changed lockfile is a miss.
	changed := tarOf(t, append([]entry{{name: "package-lock.json", body: `{"lockfileVersion":3,"x":1}`}}, repoTar[0], repoTar[2])...)
	f4 := &fake{t: t, export: exportTar(t), install: sandbox.Result{Status: sandbox.StatusOK}}
	j := job(t, changed)
	j.Repo = "github:org/a"
	out, _ := r.Run(t.Context(), j, f4.run)
	if out.Install.Cache != api.CacheMiss {
		t.Fatalf("a changed lockfile hit the cache")
	}
	// Without a repository identity there is no cache.
	j = job(t, repo)
	out, _ = r.Run(t.Context(), j, (&fake{t: t, export: exportTar(t), install: sandbox.Result{Status: sandbox.StatusOK}}).run)
	if out.Install.Cache != api.CacheOff {
		t.Fatalf("cache %q without a repository", out.Install.Cache)
	}
}

// A cache hit needs no egress: the install is skipped, not refused.
func TestCacheHitWithoutPolicy(t *testing.T) {
	cache := openCache(t)
	repo := tarOf(t, repoTar...)
	j := job(t, repo)
	j.Repo = "r"
	f := &fake{t: t, export: exportTar(t), install: sandbox.Result{Status: sandbox.StatusOK}}
	if _, err := (&Runner{Policy: allowAll(), Cache: cache, Digest: digest}).Run(t.Context(), j, f.run); err != nil {
		t.Fatal(err)
	}
	out, err := (&Runner{Cache: cache, Digest: digest}).Run(t.Context(), j, f.run)
	if err != nil || out.Install.Status != api.InstallCached {
		t.Fatalf("%v %+v", err, out.Install)
	}
}

func TestDownloads(t *testing.T) {
	d := downloads(egress.Stats{Conns: []egress.Conn{
		{Host: "b.example", Port: 443, BytesIn: 100, BytesOut: 10},
		{Host: "a.example", Port: 443, BytesIn: 5},
		{Host: "b.example", Port: 443, BytesIn: 1},
		{Host: "evil.example", Port: 443, Refused: "not on the allow list", Kind: egress.KindNotAllowed},
		{Host: "1.2.3.4", Port: 443, Refused: "an IP literal", Kind: egress.KindInvalidHost},
		{Host: "evil\x1b[2J", Port: 443, Refused: "not on the allow list", Kind: egress.KindNotAllowed},
		{Host: "evil.example", Port: 443, Refused: "not on the allow list", Kind: egress.KindNotAllowed},
	}})
	if d.Connections != 3 || d.Bytes != 116 || d.Refused != 4 || strings.Join(d.Hosts, ",") != "a.example,b.example" {
		t.Fatalf("%+v", d)
	}
	// One entry per host and kind, counted, with the relay's reason.
	if len(d.Refusals) != 3 || d.Refusals[0].Host != "1.2.3.4" || d.Refusals[0].Kind != egress.KindInvalidHost ||
		d.Refusals[1].Host != "evil.example" || d.Refusals[1].Count != 2 || d.Refusals[1].Reason != "not on the allow list" {
		t.Fatalf("refusals %+v", d.Refusals)
	}
	for _, r := range d.Refusals {
		if strings.ContainsRune(r.Host, 0x1b) || strings.ContainsRune(r.Reason, 0x1b) {
			t.Errorf("a control character reached the report: %+v", r)
		}
	}
	in := &api.InstallResult{Kind: "npm", Status: api.InstallOK, Downloads: d, Cache: api.CacheMiss}
	if s := Summary(in); !strings.Contains(s, "4 connections refused (1.2.3.4: not a host name; evil.example: not allowed;") {
		t.Errorf("summary %q", s)
	}
	for _, h := range d.RefusedHosts {
		if strings.ContainsRune(h, 0x1b) {
			t.Errorf("a control character reached the report: %q", h)
		}
	}
}

func TestCallerRepoScoped(t *testing.T) {
	got, err := CallerRepo("github:org/a")
	if err != nil || got != "caller:github:org/a" {
		t.Fatalf("%q %v: a caller's key must not name the App's entries", got, err)
	}
	for _, bad := range []string{strings.Repeat("k", MaxCacheKeyBytes+1), "a\nb", "a\x00"} {
		if _, err := CallerRepo(bad); err == nil {
			t.Errorf("%.20q accepted", bad)
		}
	}
}

func TestCallerScope(t *testing.T) {
	for in, want := range map[string]string{"": depcache.DefaultScope, "pr:12": "pr:12", "default": depcache.DefaultScope} {
		if got, err := CallerScope(in); err != nil || got != want {
			t.Errorf("CallerScope(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{strings.Repeat("s", depcache.MaxScopeBytes+1), "pr\n1", "a\x00"} {
		if _, err := CallerScope(bad); err == nil {
			t.Errorf("%.20q accepted", bad)
		}
	}
}
