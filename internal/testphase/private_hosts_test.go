package testphase

import (
	"archive/zip"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cgi"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/egress"
	"github.com/asterhq/aster/internal/safetext/safetexttest"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
	"github.com/asterhq/aster/internal/testkit"
	"github.com/asterhq/aster/internal/testrun"
)

// The other private hosts of issue 40 — a pip index with basic auth, a Go
// module proxy with a bearer token, a Git host over HTTPS — are servers the
// tests run themselves, in Go, over TLS with a test CA on loopback. Each
// answers 401 to a request without exactly its credential, so only the
// relay's injected header gets anything from it.

// privateServer is one such host, known to the relay by name (resolved
// to 127.0.0.1, admitted as an operator's `addresses: [127.0.0.1/32]`).
type privateServer struct {
	name   string
	port   int
	caPEM  []byte
	pool   *x509.CertPool
	header string
	want   string
	// served counts requests that carried the credential; refused the others.
	served, refused atomic.Int64
}

// servePrivate serves h at name over TLS on loopback, behind the header
// header: want (a 401 with challenge otherwise).
func servePrivate(t *testing.T, name, header, want, challenge string, h http.Handler) *privateServer {
	t.Helper()
	id := testkit.IssueTLS(t, name)
	s := &privateServer{name: name, caPEM: id.CAPEM, pool: id.Pool, header: header, want: want}
	s.port = id.ServeTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(header) != want {
			s.refused.Add(1)
			w.Header().Set("WWW-Authenticate", challenge)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		s.served.Add(1)
		h.ServeHTTP(w, r)
	}))
	return s
}

// url is the server's address as the sandbox names it.
func (s *privateServer) url(path string) string {
	return fmt.Sprintf("https://%s:%d%s", s.name, s.port, path)
}

// policy allows the server's name and admits its loopback address; with a
// value, the relay adds the server's header with it.
func (s *privateServer) policy(value string, logs io.Writer) *egress.Policy {
	return privatePolicy(s.port, []string{s.name}, s.header, value, s.pool, logs)
}

// privatePolicy allows names on port, each resolving to 127.0.0.1 and
// admitted there as an operator's `addresses: [127.0.0.1/32]` would; with
// a value, the relay adds header: value for the first name, verifying the
// upstream against pool.
func privatePolicy(port int, names []string, header, value string, pool *x509.CertPool, logs io.Writer) *egress.Policy {
	lo := netip.MustParsePrefix("127.0.0.1/32")
	p := &egress.Policy{
		Addresses: map[egress.Rule][]netip.Prefix{},
		Resolver:  staticResolver{},
		Logger:    slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Counters:  &egress.Counters{},
	}
	for _, n := range names {
		rule := egress.Rule{Host: n, Port: port}
		p.Allow = append(p.Allow, rule)
		p.Addresses[rule] = []netip.Prefix{lo}
		p.Resolver.(staticResolver)[n] = []netip.Addr{lo.Addr()}
	}
	if value != "" {
		p.Credentials = []egress.Credential{{Rule: p.Allow[0], Header: header, Value: value, RootCAs: pool}}
	}
	return p
}

// credentialCase is one install through a private server: the secret
// injected (or none, or a wrong one), then what must hold of the run.
type credentialCase struct {
	srv     *privateServer
	secrets []string // every form of the credential that must appear nowhere
	job     func() Job
	reg     testrun.Registries
}

// run installs through the relay with value as the credential (none when
// empty) and returns the outcome, what the install exported, and the logs.
func (c credentialCase) run(t *testing.T, mgr *sandbox.Manager, value string) (Outcome, *capture, []byte) {
	t.Helper()
	var logs bytes.Buffer
	lw := lockedWriter{&sync.Mutex{}, &logs}
	r := &Runner{Policy: c.srv.policy(value, lw), Registries: c.reg, CABundle: c.srv.caPEM, InstallTimeout: 3 * time.Minute,
		Logger: slog.New(slog.NewTextHandler(lw, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	var cp capture
	out, err := r.Run(t.Context(), c.job(), cp.run(mgr))
	if err != nil {
		t.Fatal(err)
	}
	return out, &cp, lw.bytes()
}

func (l lockedWriter) bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]byte(nil), l.w.(*bytes.Buffer).Bytes()...)
}

// checkInjected asserts an install with the right credential: it and the
// tests passed, the server was reached only with the credential, the
// credential is in none of the places a job or a reader sees.
func (c credentialCase) checkInjected(t *testing.T, out Outcome, cp *capture, logs []byte, passed int) {
	t.Helper()
	inst := cp.results[PhaseInstall]
	if out.Install.Status != api.InstallOK || out.Result.Status != sandbox.StatusOK || out.Summary.Passed != passed {
		t.Fatalf("install %+v\ninstall stdout %s\ninstall stderr %s\ntests %s %+v\n%s\n%s", out.Install, inst.Stdout.Data, inst.Stderr.Data,
			out.Result.Status, out.Summary, out.Result.Stdout.Data, out.Result.Stderr.Data)
	}
	if d := out.Install.Downloads; len(d.Hosts) != 1 || d.Hosts[0] != c.srv.name || d.Refused != 0 {
		t.Errorf("downloads %+v", d)
	}
	if c.srv.served.Load() == 0 {
		t.Error("the server served nothing with the credential")
	}
	report, _ := json.Marshal(out.Response())
	places := map[string][]byte{
		"install export (the workspace)": cp.export.Bytes(),
		"install stdout":                 []byte(inst.Stdout.Data), "install stderr": []byte(inst.Stderr.Data),
		"test stdout": []byte(out.Result.Stdout.Data), "test stderr": []byte(out.Result.Stderr.Data),
		"report": report, "report lines": []byte(strings.Join(Lines(out.Install), "\n")),
		"logs": logs,
	}
	for _, s := range c.secrets {
		if l := leaks(s, places); len(l) > 0 {
			t.Fatalf("the credential leaked into %v", l)
		}
	}
	if typ := safetexttest.ParsablePrivateKey(cp.export.Bytes()); typ != "" {
		t.Errorf("the install workspace holds a private key (%s)", typ)
	}
	if !bytes.Contains(logs, []byte("egress request with credential")) || !bytes.Contains(logs, []byte("status=200")) {
		t.Errorf("no request log lines:\n%s", logs)
	}
	t.Logf("install %dms, %d connections, %d bytes, %d requests served", out.Install.DurationMS, out.Install.Downloads.Connections,
		out.Install.Downloads.Bytes, c.srv.served.Load())
}

// checkRefused asserts an install without the credential or with a wrong
// one: it failed, and the report holds each of says.
func checkRefused(t *testing.T, out Outcome, cp *capture, says ...string) {
	t.Helper()
	text := strings.Join(append(Lines(out.Install), out.Install.Reason), "\n")
	if out.Install.Status != api.InstallFailed {
		t.Fatalf("the install did not fail: %+v", out.Install)
	}
	t.Logf("report:\n%s", text)
	for _, s := range says {
		if !strings.Contains(text, s) {
			t.Errorf("the report does not say %q:\n%s\ninstall stderr:\n%s", s, text, cp.results[PhaseInstall].Stderr.Data)
		}
	}
}

// A pip index (PEP 503 simple API) behind basic auth, serving a wheel and
// an sdist whose setup.py — run by pip at install — dumps everything it can
// find into the virtual environment, which the install exports.
func TestDockerPrivatePipIndexCredential(t *testing.T) {
	mgr := engine(t)
	requireRelay(t, mgr)
	wheel, wheelName := buildWheel(t, "astertestpkg", "1.0", "def answer():\n    return 42\n")
	sdist := tarGz(t, map[string]string{
		"asterdump-1.0/PKG-INFO":              "Metadata-Version: 2.1\nName: asterdump\nVersion: 1.0\n",
		"asterdump-1.0/setup.py":              pipDumpScript,
		"asterdump-1.0/asterdump/__init__.py": "def mark(s):\n    return 'private:' + s\n",
	})
	files := map[string][]byte{wheelName: wheel, "asterdump-1.0.tar.gz": sdist}
	mux := http.NewServeMux()
	for project, file := range map[string]string{"astertestpkg": wheelName, "asterdump": "asterdump-1.0.tar.gz"} {
		sum := sha256.Sum256(files[file])
		page := fmt.Sprintf(`<!DOCTYPE html><html><body><a href="/files/%s#sha256=%s">%s</a></body></html>`, file, hex.EncodeToString(sum[:]), file)
		mux.HandleFunc("/simple/"+project+"/", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, page) })
	}
	for name, b := range files {
		mux.HandleFunc("/files/"+name, func(w http.ResponseWriter, r *http.Request) { w.Write(b) })
	}
	password := "pw-" + randomHex(t, 16)
	secret := "Basic " + base64.StdEncoding.EncodeToString([]byte("aster-ci:"+password))
	srv := servePrivate(t, "pypi.private.test", "Authorization", secret, `Basic realm="private index"`, mux)
	project := map[string]string{
		"requirements.txt": "astertestpkg==1.0\nasterdump==1.0\n",
		"test_private.py": `import os, astertestpkg, asterdump

def test_answer():
    assert astertestpkg.answer() == 42
    assert asterdump.mark("x") == "private:x"

def test_dump_is_here():
    d = open(os.path.join(os.environ["VIRTUAL_ENV"], "aster-dump.txt"), encoding="latin-1").read()
    assert "==== env" in d and "==== /proc/self/environ" in d
`,
	}
	names := []string{"requirements.txt", "test_private.py"}
	plan, _ := testrun.Detect(names)
	in, ok := testrun.DetectInstall(names, plan.Framework, "")
	if !ok {
		t.Fatal("no pip install detected")
	}
	c := credentialCase{srv: srv, secrets: []string{secret, password}, reg: testrun.Registries{PipIndex: srv.url("/simple/")},
		job: func() Job {
			// The sdist builds with the image's setuptools (the index
			// serves no build backend): a caller's variable, as a project
			// whose index lacks one would set.
			return Job{Image: sandboxtest.Image(), Plan: plan, Install: &in, Limits: limits(), Open: packed(t, project),
				Env: map[string]string{"PIP_NO_BUILD_ISOLATION": "0"}}
		}}

	t.Run("injected", func(t *testing.T) {
		out, cp, logs := c.run(t, mgr, secret)
		c.checkInjected(t, out, cp, logs, 2)
		if !bytes.Contains(cp.export.Bytes(), []byte("==== /proc/self/environ")) || !bytes.Contains(cp.export.Bytes(), []byte("==== pip config")) {
			t.Fatalf("the setup.py dump is not in the export (%d bytes)", cp.export.Len())
		}
	})
	t.Run("no credential", func(t *testing.T) {
		out, cp, _ := c.run(t, mgr, "")
		checkRefused(t, out, cp, "401")
	})
	t.Run("wrong credential", func(t *testing.T) {
		out, cp, _ := c.run(t, mgr, "Basic "+base64.StdEncoding.EncodeToString([]byte("aster-ci:wrong")))
		checkRefused(t, out, cp, "credential rejected upstream: 401")
	})
}

// pipDumpScript is the sdist's setup.py: what a hostile build can find.
const pipDumpScript = `import os, subprocess, sys
from setuptools import setup

out = []
def add(label, text):
    out.append("==== " + label + "\n" + text)

add("env", repr(dict(os.environ)))
home = os.path.expanduser("~")
for f in ["/proc/self/environ", "/proc/1/environ", "/proc/self/cmdline", "/etc/pip.conf", "/etc/xdg/pip/pip.conf",
          os.path.join(home, ".pip", "pip.conf"), os.path.join(home, ".config", "pip", "pip.conf"), os.path.join(home, ".netrc"),
          os.path.join(home, ".pypirc"), "/root/.netrc"]:
    try:
        add(f, open(f, "rb").read().decode("latin-1"))
    except Exception as e:
        add(f, "unreadable: " + type(e).__name__)
try:
    add("pip config", subprocess.run([sys.executable, "-m", "pip", "config", "list", "-v"], capture_output=True, text=True, timeout=60).stdout)
except Exception as e:
    add("pip config", "failed: " + type(e).__name__)
budget = [16 << 20]
def walk(d):
    for root, dirs, names in os.walk(d):
        for n in names:
            p = os.path.join(root, n)
            if budget[0] <= 0 or not os.path.isfile(p) or os.path.islink(p):
                continue
            try:
                b = open(p, "rb").read()
            except Exception:
                continue
            budget[0] -= len(b)
            add(p, b.decode("latin-1"))
walk("/work")
walk("/tmp")
dest = os.path.join(os.environ.get("VIRTUAL_ENV", "/work/.venv"), "aster-dump.txt")
with open(dest, "w", encoding="latin-1") as f:
    f.write("\n".join(out))
print("dumped %d items to %s" % (len(out), dest))

setup(name="asterdump", version="1.0", packages=["asterdump"])
`

// A Go module proxy (the GOPROXY protocol) behind a bearer token, serving
// one module whose zip the test makes, with the go.sum lines it computes
// as the go command does (dirhash's h1).
func TestDockerPrivateGoProxyCredential(t *testing.T) {
	mgr := engine(t)
	requireRelay(t, mgr)
	const mod, version = "private.example/greet", "v1.0.0"
	gomod := "module " + mod + "\n\ngo 1.21\n"
	modFiles := map[string]string{
		"go.mod":   gomod,
		"greet.go": "package greet\n\n// Hello greets from a private module.\nfunc Hello(name string) string { return \"private hello, \" + name }\n",
	}
	zipped, zipHash := moduleZip(t, mod, version, modFiles)
	modHash := h1(map[string][]byte{"go.mod": []byte(gomod)})
	mux := http.NewServeMux()
	base := "/" + mod + "/@v/"
	mux.HandleFunc(base+"list", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, version+"\n") })
	mux.HandleFunc(base+version+".info", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"Version":%q,"Time":"2026-01-02T03:04:05Z"}`, version)
	})
	mux.HandleFunc(base+version+".mod", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, gomod) })
	mux.HandleFunc(base+version+".zip", func(w http.ResponseWriter, r *http.Request) { w.Write(zipped) })
	token := "tok-" + randomHex(t, 20)
	secret := "Bearer " + token
	srv := servePrivate(t, "goproxy.private.test", "Authorization", secret, `Bearer realm="private proxy"`, mux)
	project := map[string]string{
		"go.mod": "module example.com/consumer\n\ngo 1.24\n\nrequire " + mod + " " + version + "\n",
		"go.sum": fmt.Sprintf("%s %s %s\n%s %s/go.mod %s\n", mod, version, zipHash, mod, version, modHash),
		"greet_test.go": `package consumer

import (
	"testing"

	"` + mod + `"
)

func TestGreet(t *testing.T) {
	if got := greet.Hello("ci"); got != "private hello, ci" {
		t.Fatalf("got %q", got)
	}
}
`,
	}
	names := []string{"go.mod", "go.sum", "greet_test.go"}
	plan, _ := testrun.Detect(names)
	in, ok := testrun.DetectInstall(names, plan.Framework, "")
	if !ok {
		t.Fatal("no go install detected")
	}
	c := credentialCase{srv: srv, secrets: []string{secret}, reg: testrun.Registries{GoProxy: srv.url("")},
		job: func() Job {
			l := limits()
			l.TimeoutMS = 300_000
			return Job{Image: sandboxtest.Image(), Plan: plan, Install: &in, Limits: l, TmpCeiling: 1 << 30, Open: packed(t, project)}
		}}

	t.Run("injected", func(t *testing.T) {
		out, cp, logs := c.run(t, mgr, secret)
		c.checkInjected(t, out, cp, logs, 1)
		if !bytes.Contains(cp.export.Bytes(), []byte("private hello, ")) {
			t.Error("the module's source is not in the exported module cache")
		}
	})
	t.Run("no credential", func(t *testing.T) {
		out, cp, _ := c.run(t, mgr, "")
		checkRefused(t, out, cp, "401")
	})
	t.Run("wrong credential", func(t *testing.T) {
		out, cp, _ := c.run(t, mgr, "Bearer not-the-token")
		checkRefused(t, out, cp, "credential rejected upstream: 401")
	})
}

// moduleZip is a module zip as a proxy serves it (every file under
// mod@version/) and its go.sum hash.
func moduleZip(t *testing.T, mod, version string, files map[string]string) ([]byte, string) {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	named := map[string][]byte{}
	for name, body := range files {
		full := mod + "@" + version + "/" + name
		w, err := zw.Create(full)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(body))
		named[full] = []byte(body)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), h1(named)
}

// h1 is the go command's "h1:" hash of files: the SHA-256 of the lines
// "<sha256 hex>  <name>\n", sorted by name, in base64.
func h1(files map[string][]byte) string {
	var names []string
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	summary := sha256.New()
	for _, n := range names {
		fmt.Fprintf(summary, "%x  %s\n", sha256.Sum256(files[n]), n)
	}
	return "h1:" + base64.StdEncoding.EncodeToString(summary.Sum(nil))
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// A private Git host over HTTPS (git's smart HTTP: git http-backend as a
// CGI behind the server's credential check) holding a package that a
// project's package.json names by its git URL: npm clones it through the
// relay, which injects the credential; the package's postinstall dumps
// everything it can find.
func TestDockerPrivateGitCredential(t *testing.T) {
	mgr := engine(t)
	requireRelay(t, mgr)
	backend := gitHTTPBackend(t)
	root := t.TempDir()
	pkgJSON := `{"name":"privdep","version":"1.0.0","main":"index.js","scripts":{"postinstall":"node dump.js"}}`
	bareRepo(t, filepath.Join(root, "privdep.git"), map[string]string{
		"package.json": pkgJSON,
		"index.js":     `module.exports = (s) => "from git:" + s;` + "\n",
		"dump.js":      dumpScript,
	})
	token := "ghp-" + randomHex(t, 20)
	secret := "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+token))
	h := &cgi.Handler{Path: backend, Root: "/", Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME=" + root}}
	srv := servePrivate(t, "git.private.test", "Authorization", secret, `Basic realm="private git"`, h)
	project := map[string]string{
		"package.json": `{"name":"aster-git-consumer","version":"1.0.0","private":true,"dependencies":{"privdep":"git+` + srv.url("/privdep.git") + `"}}`,
		"test/use.test.js": `const test = require("node:test"); const assert = require("node:assert"); const fs = require("fs");
const use = require("privdep");
test("uses the package from git", () => { assert.strictEqual(use("x"), "from git:x"); });
test("the install script's dump is here", () => {
  const d = fs.readFileSync(__dirname + "/../node_modules/.aster-dump.txt", "latin1");
  assert.ok(d.includes("==== env") && d.includes("/proc/self/environ"));
});
`,
	}
	in, _ := testrun.DetectInstall([]string{"package.json"}, "custom", "")
	c := credentialCase{srv: srv, secrets: []string{secret, token},
		job: func() Job {
			return Job{Image: sandboxtest.Image(), Plan: nodePlan(t), Install: &in, Limits: limits(), Open: packed(t, project)}
		}}

	t.Run("injected", func(t *testing.T) {
		out, cp, logs := c.run(t, mgr, secret)
		c.checkInjected(t, out, cp, logs, 2)
		if !bytes.Contains(cp.export.Bytes(), []byte("==== /proc/self/environ")) {
			t.Fatalf("the postinstall dump is not in the export (%d bytes)", cp.export.Len())
		}
		if !bytes.Contains(logs, []byte("path=/privdep.git/git-upload-pack")) {
			t.Errorf("no git-upload-pack request logged:\n%s", logs)
		}
	})
	t.Run("no credential", func(t *testing.T) {
		out, cp, _ := c.run(t, mgr, "")
		checkRefused(t, out, cp, "Authentication failed for '"+srv.url("/privdep.git"))
	})
	t.Run("wrong credential", func(t *testing.T) {
		out, cp, _ := c.run(t, mgr, "Basic "+base64.StdEncoding.EncodeToString([]byte("x-access-token:wrong")))
		checkRefused(t, out, cp, "credential rejected upstream: 401")
	})
}

// gitHTTPBackend is the host's git http-backend, or a skip (a failure in CI).
func gitHTTPBackend(t *testing.T) string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), "git", "--exec-path").Output()
	p := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if err == nil {
		_, err = os.Stat(p)
	}
	if err != nil {
		msg := fmt.Sprintf("no git http-backend on this machine: %v", err)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return p
}

// bareRepo makes a bare repository at dir whose one commit holds files.
func bareRepo(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	work := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(work, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), "git", append([]string{"-c", "gc.auto=0", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=aster", "GIT_AUTHOR_EMAIL=ci@aster.invalid",
			"GIT_COMMITTER_NAME=aster", "GIT_COMMITTER_EMAIL=ci@aster.invalid", "GIT_AUTHOR_DATE=2026-01-02T03:04:05Z", "GIT_COMMITTER_DATE=2026-01-02T03:04:05Z")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git(work, "init", "-q")
	git(work, "add", ".")
	git(work, "commit", "-q", "-m", "private package")
	git(work, "clone", "-q", "--bare", work, dir)
	git(dir, "config", "gc.auto", "0")
}
