package gate

import (
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/finding"
)

// linesOf numbers src's lines from 1.
func linesOf(src string) map[int]string {
	m := map[int]string{}
	for i, l := range strings.Split(src, "\n") {
		m[i+1] = l
	}
	return m
}

// lineOf is the number of the first line of src containing s.
func lineOf(t *testing.T, src, s string) int {
	t.Helper()
	for i, l := range strings.Split(src, "\n") {
		if strings.Contains(l, s) {
			return i + 1
		}
	}
	t.Fatalf("%q not in the source", s)
	return 0
}

// A switched-off certificate check inside the code that implements the
// option to switch it off is the option's purpose; the same line with the
// value hard-coded, or guarded by something else, is not.
func TestImplementedOption(t *testing.T) {
	for _, c := range []struct {
		name, src, flagged, want string
	}{
		{"python parameter guard", `import ssl

def make_context(cafile=None, verify=True):
    ctx = ssl.create_default_context(cafile=cafile)
    if not verify:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    return ctx
`, "ssl.CERT_NONE", "verify"},
		{"python settings field", `class Client:
    def _context(self):
        ctx = ssl.create_default_context()
        if self.insecure:
            ctx.verify_mode = ssl.CERT_NONE
        return ctx
`, "ssl.CERT_NONE", "insecure"},
		{"python ternary on the line", `def ctx(verify_ssl):
    c = ssl.create_default_context()
    c.verify_mode = ssl.CERT_NONE if not verify_ssl else ssl.CERT_REQUIRED
`, "ssl.CERT_NONE", "verify_ssl"},
		{"go option struct", `func tlsConfig(o Options) *tls.Config {
	cfg := &tls.Config{}
	if o.InsecureSkipVerify {
		cfg.InsecureSkipVerify = true
	}
	return cfg
}
`, "cfg.InsecureSkipVerify = true", "InsecureSkipVerify"},
		{"go parameter", `func newTransport(insecure bool) *http.Transport {
	t := &http.Transport{}
	if insecure {
		t.TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
	}
	return t
}
`, "InsecureSkipVerify: true", "insecure"},
		{"js options", `function agent(options) {
  if (options.strictSSL === false) {
    return new https.Agent({ rejectUnauthorized: false });
  }
  return new https.Agent();
}
`, "rejectUnauthorized: false", "strictSSL"},
		{"java parameter", `public class Http {
    private static SSLContext context(boolean insecure) throws Exception {
        SSLContext ctx = SSLContext.getInstance("TLS");
        if (insecure) {
            ctx.init(null, TRUST_ALL, null);
        }
        return ctx;
    }
}
`, "TRUST_ALL", "insecure"},
		// Not an option's implementation:
		{"hard-coded", `def fetch(url):
    return requests.get(url, verify=False)
`, "verify=False", ""},
		{"the check itself is not an option", `def ctx():
    c = ssl.create_default_context()
    c.check_hostname = False
    c.verify_mode = ssl.CERT_NONE
`, "ssl.CERT_NONE", ""},
		{"a local constant is not a parameter", `def fetch(url):
    verify = False
    if not verify:
        return requests.get(url, verify=False)
`, "verify=False", ""},
		{"guard of another function", `def configure(verify=True):
    if not verify:
        log("off")

def fetch(url):
    return requests.get(url, verify=False)
`, "verify=False", ""},
		{"a statement above is no header", `def fetch(url, verify=True):
    return other(url)
    if not verify:
        requests.get(url, verify=False)
`, "verify=False", "verify"},
		{"an unrelated guard", `def fetch(url, debug=False):
    if debug:
        return requests.get(url, verify=False)
`, "verify=False", ""},
	} {
		got := implementedOption(linesOf(c.src), lineOf(t, c.src, c.flagged))
		if got != c.want {
			t.Errorf("%s: option %q, want %q", c.name, got, c.want)
		}
	}
}

// The gate makes such a finding a note and says why, after fingerprinting,
// and leaves other findings as they are.
func TestGateOptionNotes(t *testing.T) {
	src := "def make_context(verify=True):\n    ctx = ssl.create_default_context()\n    if not verify:\n        ctx.verify_mode = ssl.CERT_NONE\n    return ctx\n\ndef other():\n    requests.get(u, verify=False)\n"
	snap := testSnapshot(t, map[string]string{"lib/tls.py": src})
	fs := []finding.Finding{
		{Analyzer: "ast-grep", RuleID: "tls", Path: "lib/tls.py", StartLine: 4, EndLine: 4, Severity: finding.Error, Message: "certificate check off", CWE: []string{"CWE-295"}},
		{Analyzer: "bandit", RuleID: "B501", Path: "lib/tls.py", StartLine: 8, EndLine: 8, Severity: finding.Error, Message: "Call with verify=False (CWE-295)"},
		{Analyzer: "bandit", RuleID: "B608", Path: "lib/tls.py", StartLine: 4, EndLine: 4, Severity: finding.Warning, Message: "sql", CWE: []string{"CWE-89"}},
	}
	if err := fingerprint(snap, fs); err != nil {
		t.Fatal(err)
	}
	if fs[0].Severity != finding.Note || !strings.Contains(fs[0].Message, "implements the `verify` option") {
		t.Errorf("option's implementation: %+v", fs[0])
	}
	if fs[1].Severity != finding.Error || fs[2].Severity != finding.Warning {
		t.Errorf("other findings changed: %+v %+v", fs[1], fs[2])
	}
	for _, f := range fs {
		if f.Fingerprint == "" {
			t.Errorf("no fingerprint: %+v", f)
		}
	}
}

// FuzzImplementedOption: any text above a finding is read without a panic.
func FuzzImplementedOption(f *testing.F) {
	f.Add("def f(verify=True):\n    if not verify:\n        x = ssl.CERT_NONE\n", 3)
	f.Add("func (\n(\n", 2)
	f.Fuzz(func(t *testing.T, src string, n int) {
		_ = implementedOption(linesOf(src), n%50)
	})
}
