package testphase

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha512"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
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

// A private npm registry: Verdaccio (scripts/fetch-test-deps.sh installs
// it under third_party/verdaccio), over HTTPS with a test CA on loopback,
// every package behind authentication, no uplink. The relay knows it as
// privateHost (the policy's resolver maps that name, and an alias, to
// 127.0.0.1, which the entry admits as an operator's `addresses` would).
const (
	privateHost  = "npm.private.test"
	privateAlias = "alias.private.test"
	privateScope = "@aster-private"
)

type verdaccio struct {
	port  int
	caPEM []byte
	pool  *x509.CertPool
	token string // a real token of a registered user
	url   string // https://privateHost:port/
}

// verdaccioBin is the installed Verdaccio, or a skip (a failure in CI).
func verdaccioBin(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(sandboxtest.RepoRoot(t), "third_party", "verdaccio", "node_modules", ".bin", "verdaccio")
	if _, err := os.Stat(bin); err != nil {
		msg := fmt.Sprintf("Verdaccio is not installed (%v): run scripts/fetch-test-deps.sh", err)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return bin
}

// startVerdaccio runs Verdaccio until the test ends, registers a user and
// publishes the dump package with it.
func startVerdaccio(t *testing.T) *verdaccio {
	t.Helper()
	bin := verdaccioBin(t)
	dir := t.TempDir()
	id := testkit.IssueTLS(t, privateHost, privateAlias)
	for name, b := range map[string][]byte{"ca.pem": id.CAPEM, "cert.pem": id.CertPEM, "key.pem": id.KeyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	v := &verdaccio{caPEM: id.CAPEM, pool: id.Pool}
	// A free port; Verdaccio cannot report the one it got. Another process
	// may take it between the close and Verdaccio's listen: then the ping
	// below fails against Verdaccio's exit and the next port is tried.
	for attempt := 0; ; attempt++ {
		ln, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		v.port = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if err := v.start(t, bin, dir); err == nil {
			break
		} else if attempt == 2 {
			t.Fatalf("Verdaccio did not start: %v", err)
		}
	}
	v.url = fmt.Sprintf("https://%s:%d/", privateHost, v.port)
	v.register(t)
	v.publish(t)
	return v
}

func (v *verdaccio) start(t *testing.T, bin, dir string) error {
	cfg := fmt.Sprintf(`storage: %[1]s/storage
auth:
  htpasswd:
    file: %[1]s/htpasswd
    max_users: 100
uplinks: {}
packages:
  '%[3]s/*':
    access: $authenticated
    publish: $authenticated
  '**':
    access: $authenticated
    publish: $authenticated
listen: https://127.0.0.1:%[2]d
https:
  key: %[1]s/key.pem
  cert: %[1]s/cert.pem
log: {type: stdout, format: json, level: warn}
`, dir, v.port, privateScope)
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--config", cfgPath)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Env = append(os.Environ(), "VERDACCIO_HANDLE_KILL_SIGNALS=true")
	if err := cmd.Start(); err != nil {
		cancel()
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cancel(); <-exited })
	client := v.client()
	deadline := time.NewTimer(90 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/-/ping", v.port))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return fmt.Errorf("verdaccio exited: %s", out.String())
		case <-deadline.C:
			cancel()
			return fmt.Errorf("no answer on port %d: %v\n%s", v.port, err, out.String())
		case <-tick.C:
		}
	}
}

// client reaches Verdaccio directly (the host side, as its operator does).
func (v *verdaccio) client() *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: nil, TLSClientConfig: &tls.Config{RootCAs: v.pool}}}
}

func (v *verdaccio) do(t *testing.T, method, path, auth string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequestWithContext(t.Context(), method, fmt.Sprintf("https://127.0.0.1:%d%s", v.port, path), rd)
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := v.client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, b
}

func (v *verdaccio) register(t *testing.T) {
	t.Helper()
	pw := make([]byte, 12)
	rand.Read(pw)
	status, b := v.do(t, http.MethodPut, "/-/user/org.couchdb.user:aster-ci", "", map[string]string{"name": "aster-ci", "password": hex.EncodeToString(pw)})
	var got struct{ Token string }
	if status != http.StatusCreated || json.Unmarshal(b, &got) != nil || got.Token == "" {
		t.Fatalf("register: %d %s", status, b)
	}
	v.token = got.Token
}

// dumpScript is the package's postinstall: everything a hostile install
// script can find, written into the workspace (which the install exports).
const dumpScript = `const fs = require("fs"), path = require("path"), cp = require("child_process");
const out = [];
const add = (label, text) => out.push("==== " + label + "\n" + text);
add("env", JSON.stringify(process.env, null, 1));
for (const f of ["/proc/self/environ", "/proc/1/environ", "/proc/self/cmdline", "/etc/npmrc", "/usr/etc/npmrc", "/usr/local/etc/npmrc",
                 path.join(require("os").homedir(), ".npmrc"), path.join(process.env.INIT_CWD || "/work", ".npmrc"), "/root/.netrc"]) {
  try { add(f, fs.readFileSync(f).toString("latin1")); } catch (e) { add(f, "unreadable: " + e.code); }
}
try { add("npm config", cp.execSync("npm config ls -l", {encoding: "latin1", timeout: 60000})); } catch (e) { add("npm config", "failed"); }
let budget = 16 << 20;
const walk = (d) => {
  let ents; try { ents = fs.readdirSync(d, {withFileTypes: true}); } catch (e) { return; }
  for (const e of ents) {
    const p = path.join(d, e.name);
    if (e.isDirectory()) { walk(p); continue; }
    if (!e.isFile() || budget <= 0) continue;
    try { const b = fs.readFileSync(p); budget -= b.length; add(p, b.toString("latin1")); } catch (e) {}
  }
};
walk("/work"); walk("/tmp");
const dest = path.join(process.env.INIT_CWD || "/work", "node_modules", ".aster-dump.txt");
fs.mkdirSync(path.dirname(dest), {recursive: true});
fs.writeFileSync(dest, out.join("\n"));
console.log("dumped " + out.length + " items to " + dest);
`

func (v *verdaccio) publish(t *testing.T) {
	t.Helper()
	pkg := map[string]any{"name": privateScope + "/dump", "version": "1.0.0", "main": "index.js",
		"scripts": map[string]string{"postinstall": "node dump.js"}}
	pkgJSON, _ := json.Marshal(pkg)
	tgz := tarGz(t, map[string]string{
		"package/package.json": string(pkgJSON),
		"package/index.js":     `module.exports = (s) => "private:" + s;` + "\n",
		"package/dump.js":      dumpScript,
	})
	sha1sum := sha1.Sum(tgz)
	sha512sum := sha512.Sum512(tgz)
	version := map[string]any{}
	for k, val := range pkg {
		version[k] = val
	}
	version["_id"] = privateScope + "/dump@1.0.0"
	version["dist"] = map[string]string{
		"shasum":    hex.EncodeToString(sha1sum[:]),
		"integrity": "sha512-" + base64.StdEncoding.EncodeToString(sha512sum[:]),
		"tarball":   fmt.Sprintf("https://127.0.0.1:%d/%s/dump/-/dump-1.0.0.tgz", v.port, privateScope),
	}
	doc := map[string]any{
		"_id": privateScope + "/dump", "name": privateScope + "/dump", "dist-tags": map[string]string{"latest": "1.0.0"},
		"versions": map[string]any{"1.0.0": version},
		"_attachments": map[string]any{"dump-1.0.0.tgz": map[string]any{
			"content_type": "application/octet-stream", "data": base64.StdEncoding.EncodeToString(tgz), "length": len(tgz)}},
	}
	if status, b := v.do(t, http.MethodPut, "/"+privateScope+"%2fdump", "Bearer "+v.token, doc); status != http.StatusCreated && status != http.StatusOK {
		t.Fatalf("publish: %d %s", status, b)
	}
	if status, _ := v.do(t, http.MethodGet, "/"+privateScope+"%2fdump", "Bearer "+v.token, nil); status != http.StatusOK {
		t.Fatalf("the published package: %d", status)
	}
	if status, _ := v.do(t, http.MethodGet, "/"+privateScope+"%2fdump", "", nil); status != http.StatusUnauthorized && status != http.StatusForbidden {
		t.Fatalf("the registry answers an anonymous request with %d: it must require authentication", status)
	}
}

func tarGz(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), ModTime: time.Unix(1, 0), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

// policy allows the registry under its name and an alias (both resolving
// to its loopback address, admitted for each as an operator's `addresses:
// [127.0.0.1/32]`), with the credential value for the name when value is
// not empty.
func (v *verdaccio) policy(value string, logs io.Writer) *egress.Policy {
	return privatePolicy(v.port, []string{privateHost, privateAlias}, "Authorization", value, v.pool, logs)
}

// staticResolver answers from a table, as a private DNS zone would.
type staticResolver map[string][]netip.Addr

func (r staticResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// privateProject depends on the private package only; its test uses it and
// reports the size of the dump its install script left.
func privateProject() map[string]string {
	return map[string]string{
		"package.json": `{"name":"aster-private-consumer","version":"1.0.0","private":true,"dependencies":{"` + privateScope + `/dump":"1.0.0"}}`,
		"test/use.test.js": `const test = require("node:test"); const assert = require("node:assert"); const fs = require("fs");
const use = require("` + privateScope + `/dump");
test("uses the private package", () => { assert.strictEqual(use("x"), "private:x"); });
test("the install script's dump is here", () => {
  const d = fs.readFileSync(__dirname + "/../node_modules/.aster-dump.txt", "latin1");
  assert.ok(d.includes("==== env") && d.includes("/proc/self/environ"));
  console.log("dump bytes " + d.length);
});
`,
	}
}

// capture records each phase's result and everything the install phase
// exported (the whole /work the install script could write).
type capture struct {
	mu      sync.Mutex
	results map[string]sandbox.Result
	export  bytes.Buffer
}

func (c *capture) run(mgr *sandbox.Manager) RunFunc {
	c.results = map[string]sandbox.Result{}
	return func(ctx context.Context, phase string, spec sandbox.Spec) (sandbox.Result, error) {
		if spec.Export != nil {
			spec.Export = io.MultiWriter(spec.Export, lockedWriter{&c.mu, &c.export})
		}
		res, err := mgr.Run(ctx, spec)
		c.mu.Lock()
		c.results[phase] = res
		c.mu.Unlock()
		return res, err
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// leaks names where a secret (in each encoding a tool might use) appears.
func leaks(secret string, places map[string][]byte) []string {
	forms := []string{secret, base64.StdEncoding.EncodeToString([]byte(secret)), hex.EncodeToString([]byte(secret))}
	if i := strings.LastIndexByte(secret, ' '); i >= 0 {
		forms = append(forms, secret[i+1:]) // the token without its scheme
	}
	var out []string
	for name, b := range places {
		for _, f := range forms {
			if bytes.Contains(b, []byte(f)) {
				out = append(out, name)
				break
			}
		}
	}
	return out
}

// The issue's acceptance test: a private npm registry (Verdaccio, auth
// required) reached only through the relay, which injects the token. The
// install script dumps every place a secret could be; the token is in none
// of them, nor in the test phase, the report or the logs. Without the
// credential the install fails and says why; with a wrong one the report
// says the upstream rejected it.
func TestDockerPrivateRegistryCredential(t *testing.T) {
	mgr := engine(t)
	requireRelay(t, mgr)
	v := startVerdaccio(t)
	secret := "Bearer " + v.token
	in, _ := testrun.DetectInstall([]string{"package.json"}, "custom", "")
	job := func() Job {
		return Job{Image: sandboxtest.Image(), Plan: nodePlan(t), Install: &in, Limits: limits(), Open: packed(t, privateProject())}
	}
	reg := testrun.Registries{NPM: v.url}

	t.Run("injected", func(t *testing.T) {
		var logs bytes.Buffer
		lw := lockedWriter{&sync.Mutex{}, &logs}
		r := &Runner{Policy: v.policy(secret, lw), Registries: reg, CABundle: v.caPEM, InstallTimeout: 3 * time.Minute,
			Logger: slog.New(slog.NewTextHandler(lw, &slog.HandlerOptions{Level: slog.LevelDebug}))}
		var c capture
		out, err := r.Run(t.Context(), job(), c.run(mgr))
		if err != nil {
			t.Fatal(err)
		}
		inst := c.results[PhaseInstall]
		if out.Install.Status != api.InstallOK || out.Result.Status != sandbox.StatusOK || out.Summary.Passed != 2 {
			t.Fatalf("install %+v\ninstall stderr %s\ntests %s %+v\n%s", out.Install, inst.Stderr.Data, out.Result.Status, out.Summary, out.Result.Stderr.Data)
		}
		d := out.Install.Downloads
		if len(d.Hosts) != 1 || d.Hosts[0] != privateHost || d.Refused != 0 {
			t.Errorf("downloads %+v", d)
		}
		if !bytes.Contains(c.export.Bytes(), []byte("==== /proc/self/environ")) || !bytes.Contains(c.export.Bytes(), []byte("==== npm config")) {
			t.Fatalf("the install script's dump is not in the export (%d bytes)", c.export.Len())
		}
		if !bytes.Contains(c.export.Bytes(), []byte("BEGIN CERTIFICATE")) {
			t.Error("the dump should hold the run CA's certificate")
		}
		// Node's compile cache under /tmp holds the words "PRIVATE KEY" (strings of
		// its own code): what must not be there is a key that parses.
		if typ := safetexttest.ParsablePrivateKey(c.export.Bytes()); typ != "" {
			t.Errorf("the dump holds a private key (%s)", typ)
		}
		report, _ := json.Marshal(out.Response())
		places := map[string][]byte{
			"install export (the dump, the workspace)": c.export.Bytes(),
			"install stdout": []byte(inst.Stdout.Data), "install stderr": []byte(inst.Stderr.Data),
			"test stdout": []byte(out.Result.Stdout.Data), "test stderr": []byte(out.Result.Stderr.Data),
			"report": report, "report lines": []byte(strings.Join(Lines(out.Install), "\n")),
			"logs": logs.Bytes(),
		}
		if l := leaks(secret, places); len(l) > 0 {
			t.Fatalf("the token leaked into %v", l)
		}
		if !strings.Contains(logs.String(), "egress request with credential") || !strings.Contains(logs.String(), "status=200") {
			t.Errorf("no request log lines:\n%s", logs.String())
		}
		// Replayed after the run, what the job could have captured (its
		// requests, which never held the credential) gets nothing.
		if status, _ := v.do(t, http.MethodGet, "/"+privateScope+"%2fdump", "", nil); status == http.StatusOK {
			t.Error("the registry answered an anonymous replay")
		}
		t.Logf("install %dms, %d connections, %d bytes", out.Install.DurationMS, d.Connections, d.Bytes)
	})

	t.Run("no credential", func(t *testing.T) {
		r := &Runner{Policy: v.policy("", io.Discard), Registries: reg, CABundle: v.caPEM, InstallTimeout: 3 * time.Minute}
		var c capture
		out, err := r.Run(t.Context(), job(), c.run(mgr))
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Join(append(Lines(out.Install), out.Install.Reason), "\n")
		if out.Install.Status != api.InstallFailed || !strings.Contains(text, "401") && !strings.Contains(text, "E401") && !strings.Contains(text, "Unauthorized") {
			t.Fatalf("without the credential: %+v\n%s\n%s", out.Install, text, c.results[PhaseInstall].Stderr.Data)
		}
	})

	t.Run("wrong credential", func(t *testing.T) {
		r := &Runner{Policy: v.policy("Bearer not-the-token", io.Discard), Registries: reg, CABundle: v.caPEM, InstallTimeout: 3 * time.Minute}
		var c capture
		out, err := r.Run(t.Context(), job(), c.run(mgr))
		if err != nil {
			t.Fatal(err)
		}
		if out.Install.Status != api.InstallFailed || !strings.Contains(out.Install.Reason, "credential rejected upstream: 40") {
			t.Fatalf("with a wrong credential: %+v\n%s", out.Install, c.results[PhaseInstall].Stderr.Data)
		}
		if !strings.Contains(strings.Join(Lines(out.Install), "\n"), "credential rejected upstream") {
			t.Errorf("report lines: %q", Lines(out.Install))
		}
	})
}
