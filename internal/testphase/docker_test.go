package testphase

import (
	"archive/zip"
	"bytes"
	"cmp"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/depcache"
	"github.com/asterhq/aster/internal/egress"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
	"github.com/asterhq/aster/internal/testrun"
	"github.com/asterhq/aster/internal/workspace"
	"github.com/asterhq/aster/internal/workspace/workspacetest"
)

// Real engine, real image, real registries where this machine has them.
// Run with ASTER_REQUIRE_DOCKER=1 (and ASTER_TEST_IMAGE for an image other
// than the default).

func engine(t *testing.T) *sandbox.Manager {
	t.Helper()
	rt := sandboxtest.Docker(t)
	return sandboxtest.Manager(t, rt, 2)
}

// requireRelay skips while the Manager still refuses Spec.Egress (the relay
// of issue 14 lands separately); once it does, these tests run everywhere.
func requireRelay(t *testing.T, mgr *sandbox.Manager) {
	t.Helper()
	_, err := mgr.Normalize(sandbox.Spec{Image: sandboxtest.Image(), Argv: []string{"true"}, Egress: (&egress.Policy{}).NewRun("probe"), Export: io.Discard})
	if err != nil && strings.Contains(err.Error(), "not supported yet") {
		t.Skipf("the egress relay is not in this tree yet: %v", err)
	}
}

func runWith(mgr *sandbox.Manager, record map[string]sandbox.Result) RunFunc {
	return func(ctx context.Context, phase string, spec sandbox.Spec) (sandbox.Result, error) {
		res, err := mgr.Run(ctx, spec)
		if record != nil {
			record[phase] = res
		}
		return res, err
	}
}

func packed(t *testing.T, files map[string]string) func() (io.ReadCloser, error) {
	b := workspacetest.Tar(t, files, workspace.Caps{})
	return func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
}

// registry reads a registry's host and port from this machine's own tool
// configuration (never from the code). Without one the test is skipped,
// except in CI, where it must run.
func registry(t *testing.T, name string, argv ...string) (egress.Rule, string) {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), argv[0], argv[1:]...).Output()
	raw := strings.TrimSpace(string(out))
	if err == nil {
		raw = strings.FieldsFunc(raw, func(r rune) bool { return r == ',' || r == '|' })[0]
	}
	u, perr := url.Parse(raw)
	if err != nil || perr != nil || u.Scheme != "https" || u.Hostname() == "" {
		msg := fmt.Sprintf("no %s registry in this machine's configuration (%s: %q, %v)", name, strings.Join(argv, " "), raw, err)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	port := 443
	if p := u.Port(); p != "" {
		port, _ = strconv.Atoi(p)
	}
	return egress.Rule{Host: u.Hostname(), Port: port}, raw
}

// registryPolicy allows rule. Where this machine resolves the registry to an
// address the relay refuses (a local mirror on a private or documentation
// address), exactly those addresses are admitted as an operator admits them:
// an `addresses` entry of the rule, read by egress.ParseAddresses as the
// configuration reads it.
func registryPolicy(t *testing.T, rule egress.Rule) *egress.Policy {
	t.Helper()
	addrs, err := net.DefaultResolver.LookupNetIP(t.Context(), "ip", rule.Host)
	if err != nil {
		t.Fatalf("resolve %s: %v", rule.Host, err)
	}
	var entries []string
	for _, a := range addrs {
		a = a.Unmap()
		entries = append(entries, netip.PrefixFrom(a, a.BitLen()).String())
	}
	ranges, err := egress.ParseAddresses(rule, entries)
	if err != nil {
		t.Fatalf("addresses of %s: %v", rule, err)
	}
	t.Logf("%s resolves to %v here; admitted: %v", rule.Host, addrs, ranges)
	return &egress.Policy{Allow: []egress.Rule{rule}, Addresses: map[egress.Rule][]netip.Prefix{rule: ranges}}
}

// loopbackPolicy allows localhost:port and admits its loopback addresses, as
// an operator's `{host: localhost, port: PORT, addresses: [127.0.0.0/8, ::1/128]}` does.
func loopbackPolicy(port int) *egress.Policy {
	rule := egress.Rule{Host: "localhost", Port: port}
	return &egress.Policy{Allow: []egress.Rule{rule},
		Addresses: map[egress.Rule][]netip.Prefix{rule: {netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}}}
}

// hostCA is this machine's CA bundle: where registries are reached through a
// TLS-intercepting proxy, its CA is there and not in the image.
func hostCA(t *testing.T) []byte {
	t.Helper()
	p := cmp.Or(os.Getenv("SSL_CERT_FILE"), "/etc/ssl/certs/ca-certificates.crt")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Logf("no host CA bundle (%v): the image's roots are used", err)
		return nil
	}
	return b
}

func nodePlan(t *testing.T) testrun.Plan {
	t.Helper()
	p, err := testrun.Custom([]string{"node", "--test", "--test-reporter=junit", "--test-reporter-destination=/tmp/report.xml"}, testrun.FormatJUnit, "/tmp/report.xml")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// nodeProject depends on left-pad, which the image does not carry (it has
// many Debian node modules, so a common one would be found without an install).
func nodeProject(failing bool) map[string]string {
	second := `assert.strictEqual(leftPad("7", 3, "0"), "007");`
	if failing {
		second = `assert.strictEqual(leftPad("7", 3, "0"), "7", "padding is not a no-op");`
	}
	return map[string]string{
		"package.json": `{"name":"aster-two-phase","version":"1.0.0","private":true,"dependencies":{"left-pad":"1.3.0"},"scripts":{"test":"node --test"}}`,
		"test/pad.test.js": `const test = require("node:test"); const assert = require("node:assert"); const leftPad = require("left-pad");
test("pads with spaces", () => { assert.strictEqual(leftPad("ab", 4), "  ab"); });
test("pads with zeros", () => { ` + second + ` });
`,
	}
}

func limits() sandbox.Limits {
	l := sandbox.Limits{TimeoutMS: 180_000, MemoryBytes: 1 << 30, WorkdirBytes: 1 << 30, TmpBytes: 512 << 20}
	return l
}

// Without an allowed host the install does not run, the report says which
// setting allows one, and the tests run without their dependencies.
func TestDockerNoEgressHost(t *testing.T) {
	mgr := engine(t)
	plan := nodePlan(t)
	in, _ := testrun.DetectInstall([]string{"package.json"}, "custom", "")
	out, err := (&Runner{}).Run(t.Context(), Job{Image: sandboxtest.Image(), Plan: plan, Install: &in, Limits: limits(), Open: packed(t, nodeProject(false))}, runWith(mgr, nil))
	if err != nil {
		t.Fatal(err)
	}
	if out.Install.Status != api.InstallSkipped || !strings.Contains(out.Install.Reason, "egress.allow") {
		t.Fatalf("install %+v", out.Install)
	}
	// node --test runs the file in a child: the missing module fails the file.
	if out.Phase != PhaseTest || out.Result.Status != sandbox.StatusExitNonzero || out.Summary.Passed != 0 || out.Summary.Failed == 0 {
		t.Fatalf("tests without dependencies: %s %q %+v", out.Result.Status, out.Result.Stderr.Data, out.Summary)
	}
}

// The cache's archive is overlaid onto the repository for the test phase,
// which has no network at all; another repository does not get it.
func TestDockerCacheOverlayAndNoNetwork(t *testing.T) {
	mgr := engine(t)
	cache, err := depcache.Open(depcache.Options{Dir: t.TempDir(), MaxBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{Cache: cache, Digest: func(ctx context.Context, image string) (string, error) {
		info, err := mgr.Runtime().ImageInfo(ctx, image)
		return info.Digest, err
	}}
	files := nodeProject(false)
	// The test also checks that nothing of the network is there: not the
	// install's proxy, not DNS, not an address.
	files["test/net.test.js"] = `const test = require("node:test"); const assert = require("node:assert"); const net = require("node:net"); const dns = require("node:dns");
const reach = (port, host) => new Promise((res) => { const s = net.connect({ port, host, timeout: 3000 }, () => { s.destroy(); res("connected"); }); s.on("error", (e) => res(e.code)); s.on("timeout", () => { s.destroy(); res("timeout"); }); });
test("no proxy", async () => { assert.notStrictEqual(await reach(3128, "127.0.0.1"), "connected"); });
test("no address", async () => { assert.notStrictEqual(await reach(443, "192.0.2.1"), "connected"); });
test("no dns", async () => { const r = await new Promise((res) => dns.lookup("localhost.invalid", (e) => res(e ? e.code : "resolved"))); assert.notStrictEqual(r, "resolved"); });
`
	in, _ := testrun.DetectInstall([]string{"package.json"}, "custom", "")
	job := Job{Image: sandboxtest.Image(), Plan: nodePlan(t), Install: &in, Limits: limits(), Open: packed(t, files), Repo: "test:repo-a", Scope: depcache.DefaultScope}
	key, err := r.cacheKey(t.Context(), job)
	if err != nil || key.Repo == "" {
		t.Fatalf("cache key: %v", err)
	}
	// What an install of left-pad would have left: a module of our own.
	deps := tarOf(t, entry{name: "node_modules/", typ: '5'}, entry{name: "node_modules/left-pad/", typ: '5'},
		entry{name: "node_modules/left-pad/package.json", body: `{"name":"left-pad","version":"1.3.0","main":"index.js"}`},
		entry{name: "node_modules/left-pad/index.js", body: `module.exports = (s, n, c = " ") => String(s).padStart(n, c);`})
	if err := cache.Put(key, bytes.NewReader(deps)); err != nil {
		t.Fatal(err)
	}
	out, err := r.Run(t.Context(), job, runWith(mgr, nil))
	if err != nil {
		t.Fatal(err)
	}
	if out.Install.Status != api.InstallCached || out.Install.Cache != api.CacheHit {
		t.Fatalf("install %+v", out.Install)
	}
	if out.Result.Status != sandbox.StatusOK || out.Summary.Passed != 5 || out.Summary.Failed != 0 {
		t.Fatalf("tests: %s %+v\n%s", out.Result.Status, out.Summary, out.Result.Stderr.Data)
	}
	job.Repo = "test:repo-b"
	out, err = r.Run(t.Context(), job, runWith(mgr, nil))
	if err != nil {
		t.Fatal(err)
	}
	if out.Install.Cache != api.CacheMiss || out.Install.Status != api.InstallSkipped || out.Summary.Passed == 5 {
		t.Fatalf("repository b got a's dependencies: %+v %+v", out.Install, out.Summary)
	}
}

// A real Node project, its dependency from this machine's npm registry
// through the relay; then the cache skips the install; a failing test is
// reported by name.
func TestDockerNodeRegistry(t *testing.T) {
	mgr := engine(t)
	requireRelay(t, mgr)
	rule, _ := registry(t, "npm", "npm", "config", "get", "registry")
	cache, err := depcache.Open(depcache.Options{Dir: t.TempDir(), MaxBytes: 256 << 20})
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{Policy: registryPolicy(t, rule), Cache: cache, InstallTimeout: 3 * time.Minute, CABundle: hostCA(t),
		Digest: func(ctx context.Context, image string) (string, error) {
			info, err := mgr.Runtime().ImageInfo(ctx, image)
			return info.Digest, err
		}}
	files := nodeProject(false)
	in, _ := testrun.DetectInstall([]string{"package.json"}, "custom", "")
	job := Job{Image: sandboxtest.Image(), Plan: nodePlan(t), Install: &in, Limits: limits(), Open: packed(t, files), Repo: "test:node", Scope: depcache.DefaultScope}
	t0 := time.Now()
	miss, err := r.Run(t.Context(), job, runWith(mgr, nil))
	missTime := time.Since(t0)
	if err != nil {
		t.Fatal(err)
	}
	if miss.Install.Status != api.InstallOK || miss.Install.Cache != api.CacheMiss || miss.Result.Status != sandbox.StatusOK || miss.Summary.Passed != 2 {
		t.Fatalf("first run: install %+v tests %s %+v\n%s", miss.Install, miss.Result.Status, miss.Summary, miss.Result.Stderr.Data)
	}
	if d := miss.Install.Downloads; d.Connections == 0 || d.Bytes == 0 || len(d.Hosts) != 1 || d.Hosts[0] != rule.Host {
		t.Errorf("downloads %+v", d)
	}
	t0 = time.Now()
	hit, err := r.Run(t.Context(), job, runWith(mgr, nil))
	hitTime := time.Since(t0)
	if err != nil {
		t.Fatal(err)
	}
	if hit.Install.Status != api.InstallCached || hit.Summary.Passed != 2 {
		t.Fatalf("second run: install %+v tests %+v", hit.Install, hit.Summary)
	}
	t.Logf("npm project: cold run (install + tests) %s, cached run %s (install phase %dms)", missTime.Round(10*time.Millisecond), hitTime.Round(10*time.Millisecond), miss.Install.DurationMS)

	job.Open, job.Repo = packed(t, nodeProject(true)), "test:node-failing"
	fail, err := r.Run(t.Context(), job, runWith(mgr, nil))
	if err != nil {
		t.Fatal(err)
	}
	if fail.Summary.Failed != 1 || fail.Summary.Passed != 1 || len(fail.Summary.Failures) != 1 || fail.Summary.Failures[0].Name != "pads with zeros" {
		t.Fatalf("failing project: %+v", fail.Summary)
	}
}

// A real Go module with one dependency through this machine's Go module proxy.
func TestDockerGoProxy(t *testing.T) {
	mgr := engine(t)
	requireRelay(t, mgr)
	rule, proxyURL := registry(t, "Go module", "go", "env", "GOPROXY")
	sum, err := os.ReadFile(filepath.Join(sandboxtest.RepoRoot(t), "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(sum), "\n") {
		if strings.HasPrefix(l, "github.com/google/go-cmp v0.7.0") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 2 {
		t.Fatalf("go-cmp v0.7.0 is not in the repository's go.sum (%d lines)", len(lines))
	}
	files := map[string]string{
		"go.mod": "module example.com/twophase\n\ngo 1.24\n\nrequire github.com/google/go-cmp v0.7.0\n",
		"go.sum": strings.Join(lines, "\n") + "\n",
		"diff_test.go": `package twophase

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDiff(t *testing.T) {
	if d := cmp.Diff([]int{1, 2}, []int{1, 2}); d != "" {
		t.Fatal(d)
	}
	if cmp.Diff(1, 2) == "" {
		t.Fatal("no difference found")
	}
}
`,
	}
	names := []string{"go.mod", "go.sum", "diff_test.go"}
	plan, _ := testrun.Detect(names)
	in, ok := testrun.DetectInstall(names, plan.Framework, "")
	if !ok {
		t.Fatal("no install for a module with a dependency")
	}
	r := &Runner{Policy: registryPolicy(t, rule), Registries: testrun.Registries{GoProxy: proxyURL}, InstallTimeout: 3 * time.Minute, CABundle: hostCA(t)}
	l := limits()
	l.TimeoutMS = 300_000
	out, err := r.Run(t.Context(), Job{Image: sandboxtest.Image(), Plan: plan, Install: &in, Limits: l, TmpCeiling: 1 << 30, Open: packed(t, files)}, runWith(mgr, nil))
	if err != nil {
		t.Fatal(err)
	}
	if out.Install.Status != api.InstallOK || out.Result.Status != sandbox.StatusOK || out.Summary.Passed != 1 {
		t.Fatalf("install %+v\ntests %s %+v\n%s", out.Install, out.Result.Status, out.Summary, out.Result.Stderr.Data)
	}
}

// The pip path against a package index the test serves itself over HTTPS on
// loopback (PyPI is not reachable here): a wheel it builds, its own CA.
func TestDockerPipIndex(t *testing.T) {
	mgr := engine(t)
	requireRelay(t, mgr)
	caPEM, cert := testCA(t, "localhost")
	wheel, wheelName := buildWheel(t, "astertestpkg", "1.0", "def answer():\n    return 42\n")
	sum := sha256.Sum256(wheel)
	mux := http.NewServeMux()
	mux.HandleFunc("/simple/astertestpkg/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!DOCTYPE html><html><body><a href="/files/%s#sha256=%s">%s</a></body></html>`, wheelName, hex.EncodeToString(sum[:]), wheelName)
	})
	mux.HandleFunc("/files/"+wheelName, func(w http.ResponseWriter, r *http.Request) { w.Write(wheel) })
	srv := httptest.NewUnstartedServer(mux)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	files := map[string]string{
		"requirements.txt": "astertestpkg==1.0\n",
		"test_answer.py":   "import astertestpkg\n\ndef test_answer():\n    assert astertestpkg.answer() == 42\n",
		"ca.pem":           string(caPEM),
	}
	names := []string{"requirements.txt", "test_answer.py", "ca.pem"}
	plan, _ := testrun.Detect(names)
	in, ok := testrun.DetectInstall(names, plan.Framework, "")
	if !ok {
		t.Fatal("no pip install detected")
	}
	r := &Runner{
		Policy:     loopbackPolicy(port),
		Registries: testrun.Registries{PipIndex: fmt.Sprintf("https://localhost:%d/simple/", port)}, InstallTimeout: 3 * time.Minute,
	}
	rec := map[string]sandbox.Result{}
	out, err := r.Run(t.Context(), Job{Image: sandboxtest.Image(), Plan: plan, Install: &in, Limits: limits(), Open: packed(t, files),
		Env: map[string]string{"PIP_CERT": "/work/ca.pem"}}, runWith(mgr, rec))
	if err != nil {
		t.Fatal(err)
	}
	if out.Install.Status != api.InstallOK || out.Result.Status != sandbox.StatusOK || out.Summary.Passed != 1 {
		t.Fatalf("install %+v\n%s\ntests %s %+v\n%s", out.Install, rec[PhaseInstall].Stderr.Data, out.Result.Status, out.Summary, out.Result.Stderr.Data)
	}
	if d := out.Install.Downloads; d.Connections == 0 || len(d.Hosts) != 1 || d.Hosts[0] != "localhost" {
		t.Errorf("downloads %+v", d)
	}
}

// A hostile postinstall: a host not on the list, IP literals (public,
// private, metadata), DNS, many connections. All refused; the run is still
// reported. The test phase then finds no way out at all.
func TestDockerHostileInstall(t *testing.T) {
	mgr := engine(t)
	requireRelay(t, mgr)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	hostile := `const net = require("node:net"); const dns = require("node:dns");
const connect = (target) => new Promise((res) => {
  const s = net.connect(3128, "127.0.0.1", () => s.write("CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n"));
  let d = ""; s.on("data", (b) => { d += b; if (d.includes("\r\n")) { s.destroy(); res(d.split("\r\n")[0]); } });
  s.on("error", (e) => res("error " + e.code)); s.setTimeout(15000, () => { s.destroy(); res("timeout"); });
});
(async () => {
  const out = {};
  out.unlisted = await connect("not-on-the-list.invalid:443");
  out.literal = await connect("192.0.2.1:443");
  out.private = await connect("10.0.0.1:443");
  out.metadata = await connect("169.254.169.254:80");
  out.dns = await new Promise((r) => dns.lookup("localhost.invalid", (e, a) => r(e ? "error " + e.code : a)));
  out.many = await Promise.all(Array.from({ length: 30 }, () => connect("localhost:PORT")));
  console.log("HOSTILE " + JSON.stringify(out));
})();
`
	files := map[string]string{
		"package.json": `{"name":"hostile","version":"1.0.0","private":true,"scripts":{"postinstall":"node hostile.js"}}`,
		"hostile.js":   strings.ReplaceAll(hostile, "PORT", strconv.Itoa(port)),
		"test/net.test.js": `const test = require("node:test"); const assert = require("node:assert"); const net = require("node:net");
test("no proxy in the test phase", async () => { const r = await new Promise((res) => { const s = net.connect(3128, "127.0.0.1", () => { s.destroy(); res("connected"); }); s.on("error", (e) => res(e.code)); }); assert.strictEqual(r, "ECONNREFUSED"); });
`,
	}
	in, _ := testrun.DetectInstall([]string{"package.json"}, "custom", "")
	pol := loopbackPolicy(port)
	pol.MaxConns = 5
	r := &Runner{Policy: pol, InstallTimeout: 3 * time.Minute}
	rec := map[string]sandbox.Result{}
	out, err := r.Run(t.Context(), Job{Image: sandboxtest.Image(), Plan: nodePlan(t), Install: &in, Limits: limits(), Open: packed(t, files)}, runWith(mgr, rec))
	if err != nil {
		t.Fatal(err)
	}
	logs := string(rec[PhaseInstall].Stdout.Data) + string(rec[PhaseInstall].Stderr.Data)
	i := strings.Index(logs, "HOSTILE ")
	if out.Install == nil || out.Install.Status != api.InstallOK || i < 0 {
		t.Fatalf("install %+v\n%s", out.Install, logs)
	}
	report := logs[i:]
	if j := strings.IndexByte(report, '\n'); j > 0 {
		report = report[:j]
	}
	t.Log(report)
	for _, want := range []string{`"unlisted":"HTTP/1.1 4`, `"literal":"HTTP/1.1 4`, `"private":"HTTP/1.1 4`, `"metadata":"HTTP/1.1 4`, `"dns":"error `} {
		if !strings.Contains(report, want) {
			t.Errorf("the postinstall got through: want %s in %s", want, report)
		}
	}
	if n := strings.Count(report, "HTTP/1.1 200"); n > 5 {
		t.Errorf("%d tunnels opened past the cap of 5", n)
	}
	d := out.Install.Downloads
	if d.Refused < 4+25 || d.Connections > 5 {
		t.Errorf("downloads %+v", d)
	}
	for _, h := range []string{"not-on-the-list.invalid", "192.0.2.1", "10.0.0.1", "169.254.169.254"} {
		if !strings.Contains(strings.Join(d.RefusedHosts, " "), h) {
			t.Errorf("%s not among the refused hosts %v", h, d.RefusedHosts)
		}
	}
	kinds := map[string]string{}
	for _, r := range d.Refusals {
		kinds[r.Host] = r.Kind
	}
	for h, kind := range map[string]string{"not-on-the-list.invalid": egress.KindNotAllowed, "10.0.0.1": egress.KindInvalidHost, "*": egress.KindConnectionCap} {
		if kinds[h] != kind {
			t.Errorf("%s refused as %q, want %q (refusals %+v)", h, kinds[h], kind, d.Refusals)
		}
	}
	if out.Phase != PhaseTest || out.Summary.Passed != 1 {
		t.Fatalf("test phase: %s %+v\n%s", out.Result.Status, out.Summary, out.Result.Stderr.Data)
	}
}

// testCA returns a CA certificate (PEM) and a server certificate it signed for host.
func testCA(t *testing.T, host string) ([]byte, tls.Certificate) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "aster test CA"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// buildWheel makes a pure-Python wheel holding one module.
func buildWheel(t *testing.T, name, version, code string) ([]byte, string) {
	t.Helper()
	info := name + "-" + version + ".dist-info"
	files := []struct{ path, body string }{
		{name + "/__init__.py", code},
		{info + "/METADATA", "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n"},
		{info + "/WHEEL", "Wheel-Version: 1.0\nGenerator: aster-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	var record strings.Builder
	for _, f := range files {
		w, err := zw.Create(f.path)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(f.body))
		h := sha256.Sum256([]byte(f.body))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f.path, base64.RawURLEncoding.EncodeToString(h[:]), len(f.body))
	}
	record.WriteString(info + "/RECORD,,\n")
	w, _ := zw.Create(info + "/RECORD")
	w.Write([]byte(record.String()))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), name + "-" + version + "-py3-none-any.whl"
}
