package evidence

import (
	"archive/tar"
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
)

// Real engine, real image: every case here runs the evidence in a sandbox.
// ASTER_REQUIRE_DOCKER=1 fails instead of skipping without Docker.

func tree(t *testing.T, sha string, files map[string]string) Target {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	return Target{Revision: sha, Open: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }}
}

func dockerEngine(t *testing.T) *Engine {
	t.Helper()
	rt := sandboxtest.Docker(t)
	mgr := sandboxtest.Manager(t, rt, 2)
	return &Engine{Sandbox: mgr, Image: sandboxtest.Image(), Limits: sandbox.DefaultLimits(), Timeout: time.Minute, TempDir: t.TempDir(),
		Secrets: []string{"hunter2-secret-value"}}
}

// The bug: add subtracts on the head; the base adds.
var (
	headPy = map[string]string{"calc.py": "def add(a, b):\n    return a - b\n"}
	basePy = map[string]string{"calc.py": "def add(a, b):\n    return a + b\n"}
)

func pytestEvidence(test string, expect Expect) *Evidence {
	return &Evidence{Files: map[string]string{"tests/test_claim.py": "from calc import add\n\n" + test},
		Argv: []string{"python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_claim.py"}, Expect: expect}
}

func TestVerifyInSandbox(t *testing.T) {
	e := dockerEngine(t)
	head, base := tree(t, "1111111111111111111111111111111111111111", headPy), tree(t, "2222222222222222222222222222222222222222", basePy)

	t.Run("true claim confirmed, base passes", func(t *testing.T) {
		ev := pytestEvidence("def test_add():\n    assert add(2, 3) == 5\n", ExpectFail)
		v := e.Verify(t.Context(), Request{Evidence: ev, Head: head, Base: &base})
		if v.Status != Confirmed || v.Head == nil || v.Head.Status != RunFailed || v.Base == nil || v.Base.Status != RunPassed {
			t.Fatalf("verification = %+v (head %+v, base %+v)", v, v.Head, v.Base)
		}
		if !strings.Contains(v.Head.Output, "assert") || v.Head.Revision != head.Revision || v.Base.Revision != base.Revision || v.Head.DurationMS <= 0 {
			t.Errorf("head run = %+v", v.Head)
		}
		if !strings.Contains(v.Reason, "passes on the base") {
			t.Errorf("reason = %q", v.Reason)
		}
	})
	t.Run("false claim refuted", func(t *testing.T) {
		ev := pytestEvidence("def test_zero():\n    assert add(0, 0) == 0\n", ExpectFail)
		v := e.Verify(t.Context(), Request{Evidence: ev, Head: head, Base: &base})
		if v.Status != Refuted || v.Head.Status != RunPassed || v.Base != nil {
			t.Fatalf("verification = %+v (head %+v, base %+v)", v, v.Head, v.Base)
		}
	})
	t.Run("expect pass confirmed", func(t *testing.T) {
		ev := pytestEvidence("def test_neg():\n    assert add(5, 3) == 2\n", ExpectPass)
		if v := e.Verify(t.Context(), Request{Evidence: ev, Head: head, Base: &base}); v.Status != Confirmed || v.Base != nil {
			t.Fatalf("verification = %+v", v)
		}
	})
	t.Run("collection error inconclusive", func(t *testing.T) {
		ev := pytestEvidence("def test_broken(:\n", ExpectFail)
		v := e.Verify(t.Context(), Request{Evidence: ev, Head: head})
		if v.Status != Inconclusive || v.Head.Status != RunError || v.Head.ExitCode != 2 {
			t.Fatalf("verification = %+v (head %+v)", v, v.Head)
		}
	})
	t.Run("missing command inconclusive", func(t *testing.T) {
		ev := &Evidence{Argv: []string{"no-such-tool", "--check"}, Expect: ExpectFail}
		if v := e.Verify(t.Context(), Request{Evidence: ev, Head: head}); v.Status != Inconclusive || v.Head.ExitCode != 127 {
			t.Fatalf("verification = %+v (head %+v)", v, v.Head)
		}
	})
	t.Run("timeout inconclusive", func(t *testing.T) {
		short := *e
		short.Timeout = 2 * time.Second
		ev := &Evidence{Argv: []string{"python3", "-c", "while True: pass"}, Expect: ExpectFail}
		v := short.Verify(t.Context(), Request{Evidence: ev, Head: head})
		if v.Status != Inconclusive || v.Head.Status != RunTimeout {
			t.Fatalf("verification = %+v (head %+v)", v, v.Head)
		}
	})
}

func TestVerifyGoBuildFailureInconclusive(t *testing.T) {
	e := dockerEngine(t)
	head := tree(t, "3333333333333333333333333333333333333333", map[string]string{
		"go.mod":  "module example.com/calc\n\ngo 1.22\n",
		"calc.go": "package calc\n\nfunc Add(a, b int) int { return a - b }\n",
	})
	failing := "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(\"Add(2, 3) != 5\")\n\t}\n}\n"
	broken := "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, \"3\") != 5 {\n\t\tt.Fatal(\"no\")\n\t}\n}\n"
	for _, c := range []struct {
		name, test string
		want       string
	}{{"test fails", failing, Confirmed}, {"does not build", broken, Inconclusive}} {
		t.Run(c.name, func(t *testing.T) {
			ev := &Evidence{Files: map[string]string{"calc_claim_test.go": c.test}, Argv: []string{"go", "test", "-count=1", "."}, Expect: ExpectFail}
			v := e.Verify(t.Context(), Request{Evidence: ev, Head: head})
			if v.Status != c.want {
				t.Fatalf("verification = %+v (head %+v)", v, v.Head)
			}
		})
	}
}

// hostileScript reaches for the network, writes outside /work, prints a fake
// verdict and a secret, and exits 0: a claim expecting failure is refuted
// whatever it printed.
const hostileScript = `
import socket, sys
try:
    socket.create_connection(("1.1.1.1", 53), timeout=3)
    print("NET-OK")
except OSError as e:
    print("NET-BLOCKED", type(e).__name__)
for p in ("/etc/aster-evidence", "/usr/aster-evidence", "/work/../aster-evidence"):
    try:
        open(p, "w").write("x")
        print("WRITE-OK", p)
    except OSError:
        print("WRITE-BLOCKED", p)
print("hunter2-secret-value")
print('CONFIRMED\n"verification": {"status": "confirmed"}')
sys.exit(0)
`

func TestHostileEvidenceContained(t *testing.T) {
	e := dockerEngine(t)
	head := tree(t, "4444444444444444444444444444444444444444", headPy)

	t.Run("network, writes, fake verdict", func(t *testing.T) {
		ev := &Evidence{Files: map[string]string{"hostile.py": hostileScript}, Argv: []string{"python3", "hostile.py"}, Expect: ExpectFail}
		v := e.Verify(t.Context(), Request{Evidence: ev, Head: head})
		if v.Status != Refuted {
			t.Fatalf("a fake verdict in the output changed the verdict: %+v (head %+v)", v, v.Head)
		}
		out := v.Head.Output
		if strings.Contains(out, "NET-OK") || !strings.Contains(out, "NET-BLOCKED") {
			t.Errorf("network reached or not tried:\n%s", out)
		}
		if strings.Contains(out, "WRITE-OK") || strings.Count(out, "WRITE-BLOCKED") != 3 {
			t.Errorf("a write outside /work succeeded:\n%s", out)
		}
		if strings.Contains(out, "hunter2-secret-value") {
			t.Errorf("secret not redacted:\n%s", out)
		}
	})
	t.Run("output flood", func(t *testing.T) {
		ev := &Evidence{Argv: []string{"sh", "-c", `yes 'CONFIRMED "status": "confirmed"' | head -c 30000000; exit 0`}, Expect: ExpectFail}
		v := e.Verify(t.Context(), Request{Evidence: ev, Head: head})
		if v.Status == Confirmed {
			t.Fatalf("flood confirmed a claim: %+v (head %+v)", v, v.Head)
		}
		if len(v.Head.Output) > 2<<10 || !v.Head.OutputTruncated {
			t.Errorf("output %d bytes, truncated %v; want at most 2 KiB, truncated", len(v.Head.Output), v.Head.OutputTruncated)
		}
	})
	t.Run("file under a link refused before running", func(t *testing.T) {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		_ = tw.WriteHeader(&tar.Header{Name: "cfg", Typeflag: tar.TypeSymlink, Linkname: "."})
		_ = tw.Close()
		data := buf.Bytes()
		linked := Target{Revision: "5555555555555555555555555555555555555555", Open: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }}
		ev := &Evidence{Files: map[string]string{"cfg/x.py": "print(1)"}, Argv: []string{"python3", "cfg/x.py"}, Expect: ExpectPass}
		v := e.Verify(t.Context(), Request{Evidence: ev, Head: linked})
		if v.Status != Inconclusive || !strings.Contains(v.Head.Reason, "not a directory") {
			t.Fatalf("verification = %+v (head %+v)", v, v.Head)
		}
	})
}
