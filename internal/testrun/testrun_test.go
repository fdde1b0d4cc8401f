package testrun

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "reports", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// counts drops the messages so cases can compare what matters first.
type counts struct {
	Parsed                  bool
	Passed, Failed, Skipped int
	Failures                []string // suite|name
}

func countsOf(s Summary) counts {
	c := counts{Parsed: s.Parsed, Passed: s.Passed, Failed: s.Failed, Skipped: s.Skipped}
	for _, f := range s.Failures {
		c.Failures = append(c.Failures, f.Suite+"|"+f.Name)
	}
	return c
}

// The fixtures are real output of the sandbox image's go 1.19 and pytest 7.2
// on the projects under testdata/.
func TestParseRealReports(t *testing.T) {
	t.Parallel()
	cases := []struct {
		file     string
		format   Format
		want     counts
		messages []string // substrings of each failure's message, in order
	}{
		{"gopass.jsonl", FormatGoJSON, counts{Parsed: true, Passed: 3, Skipped: 1}, nil},
		{"gofail.jsonl", FormatGoJSON, counts{Parsed: true, Passed: 2, Failed: 2, Failures: []string{
			"example.com/broken/strutil|TestReverse", "example.com/broken/strutil|TestTable/one",
		}}, []string{`strutil_test.go:7: Reverse("abc") = "cb", want "cba"`, `Reverse("x") = "", want "x"`}},
		{"pypass.xml", FormatJUnit, counts{Parsed: true, Passed: 3, Skipped: 1}, nil},
		{"pyfail.xml", FormatJUnit, counts{Parsed: true, Passed: 1, Failed: 2, Failures: []string{
			"tests.test_shapes|test_area", "tests.test_shapes|test_error",
		}}, []string{"AssertionError: area of a 2x3 rectangle", "RuntimeError: boom"}},
		{"nested.xml", FormatJUnit, counts{Parsed: true, Passed: 2, Failed: 2, Skipped: 1, Failures: []string{
			"com.example.MathTest|divides", "|connects",
		}}, []string{"expected:<2> but was:<3>", "connection refused"}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			t.Parallel()
			data := fixture(t, c.file)
			var s Summary
			if c.format == FormatGoJSON {
				s = ParseGoTestJSON(bytes.NewReader(data))
			} else {
				s = ParseJUnit(bytes.NewReader(data))
			}
			if diff := cmp.Diff(c.want, countsOf(s), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("summary (-want +got):\n%s", diff)
			}
			if s.Error != "" {
				t.Errorf("error %q", s.Error)
			}
			for i, m := range c.messages {
				if i >= len(s.Failures) || !strings.Contains(s.Failures[i].Message, m) {
					t.Errorf("failure %d message does not contain %q: %+v", i, m, s.Failures)
				}
			}
			for _, f := range s.Failures {
				if strings.Contains(f.Message, "=== RUN") || strings.Contains(f.Message, "--- FAIL") {
					t.Errorf("bookkeeping lines left in %q", f.Message)
				}
			}
			// Fed one byte at a time, as a sandbox's output may arrive, the
			// summary is the same.
			col := NewCollector(Plan{Format: c.format})
			for i := range data {
				col.Write(data[i : i+1])
			}
			got := col.Summary()
			got.Framework, got.Format = s.Framework, s.Format
			if diff := cmp.Diff(s, got); diff != "" {
				t.Errorf("byte-by-byte summary differs (-whole +chunked):\n%s", diff)
			}
		})
	}
}

func TestGoParserEdgeCases(t *testing.T) {
	t.Parallel()
	ev := func(action, pkg, test, out string) string {
		return fmt.Sprintf(`{"Action":%q,"Package":%q,"Test":%q,"Output":%q}`+"\n", action, pkg, test, out)
	}
	t.Run("build failure is one failure named after the package", func(t *testing.T) {
		in := "# example.com/x\n./x.go:3:1: syntax error\n" + // stderr-ish noise that is not JSON
			ev("output", "example.com/x", "", "FAIL\texample.com/x [build failed]\n") +
			ev("fail", "example.com/x", "", "")
		s := ParseGoTestJSON(strings.NewReader(in))
		if s.Failed != 1 || len(s.Failures) != 1 || s.Failures[0].Name != "example.com/x" || !strings.Contains(s.Failures[0].Message, "build failed") {
			t.Fatalf("%+v", s)
		}
	})
	t.Run("a test that never reports fails with its package", func(t *testing.T) {
		in := ev("run", "p", "TestHang", "") + ev("output", "p", "TestHang", "panic: test timed out after 1s\n") +
			ev("run", "p", "TestOK", "") + ev("pass", "p", "TestOK", "") + ev("fail", "p", "", "")
		s := ParseGoTestJSON(strings.NewReader(in))
		if s.Passed != 1 || s.Failed != 1 || s.Failures[0].Name != "TestHang" || !strings.Contains(s.Failures[0].Message, "timed out") {
			t.Fatalf("%+v", s)
		}
	})
	t.Run("packages without tests count nothing", func(t *testing.T) {
		in := ev("output", "p", "", "?   \tp\t[no test files]\n") + ev("skip", "p", "", "")
		s := ParseGoTestJSON(strings.NewReader(in))
		if s.Passed+s.Failed+s.Skipped != 0 || !s.Parsed {
			t.Fatalf("%+v", s)
		}
	})
	t.Run("no events at all", func(t *testing.T) {
		s := ParseGoTestJSON(strings.NewReader("go: cannot find main module\n"))
		if s.Parsed || s.Error == "" {
			t.Fatalf("%+v", s)
		}
	})
	t.Run("over-long line is skipped, the rest still counts", func(t *testing.T) {
		long := `{"Action":"output","Package":"p","Test":"T","Output":"` + strings.Repeat("x", MaxLineBytes+10) + `"}` + "\n"
		in := ev("run", "p", "T", "") + long + ev("pass", "p", "T", "")
		s := ParseGoTestJSON(strings.NewReader(in))
		if s.Passed != 1 || !strings.Contains(s.Error, "skipped") {
			t.Fatalf("%+v", s)
		}
	})
	t.Run("failures past the cap are counted, not listed; messages are capped", func(t *testing.T) {
		var b strings.Builder
		for i := range MaxFailures + 5 {
			name := fmt.Sprintf("Test%d", i)
			b.WriteString(ev("run", "p", name, ""))
			b.WriteString(ev("output", "p", name, strings.Repeat("y", 3*MaxMessageBytes)+"\n"))
			b.WriteString(ev("fail", "p", name, ""))
		}
		s := ParseGoTestJSON(strings.NewReader(b.String()))
		if s.Failed != MaxFailures+5 || len(s.Failures) != MaxFailures || s.FailuresOmitted != 5 {
			t.Fatalf("failed %d listed %d omitted %d", s.Failed, len(s.Failures), s.FailuresOmitted)
		}
		if l := len(s.Failures[0].Message); l > MaxMessageBytes+16 {
			t.Fatalf("message of %d bytes", l)
		}
	})
}

func TestCollectorCapsReport(t *testing.T) {
	t.Parallel()
	c := NewCollector(Plan{Framework: "custom", Format: FormatJUnit})
	chunk := bytes.Repeat([]byte("<x>"), 1<<16)
	for written := 0; written <= MaxReportBytes; written += len(chunk) {
		c.Write(chunk)
	}
	s := c.Summary()
	if !strings.Contains(s.Error, "cut") || s.Format != FormatJUnit || s.Framework != "custom" {
		t.Fatalf("%+v", s)
	}
}

func TestJUnitHostileInput(t *testing.T) {
	t.Parallel()
	for name, in := range map[string]string{
		"entity expansion": `<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;">]><testsuite><testcase name="t"><failure>&b;</failure></testcase></testsuite>`,
		"deep nesting":     strings.Repeat("<testsuite>", 10_000),
		"not xml":          "panic: runtime error",
		"other encoding":   `<?xml version="1.0" encoding="ISO-8859-1"?><testsuite/>`,
		"empty":            "",
	} {
		s := ParseJUnit(strings.NewReader(in))
		if s.Error == "" {
			t.Errorf("%s: no error reported: %+v", name, s)
		}
		if s.Failures == nil {
			t.Errorf("%s: nil failures", name)
		}
	}
}

func TestDetect(t *testing.T) {
	t.Parallel()
	cases := []struct {
		names     []string
		framework string
		format    Format
	}{
		{[]string{"go.mod", "main.go", "package.json"}, "go", FormatGoJSON},
		{[]string{"./pytest.ini", "src/x.py"}, "pytest", FormatJUnit},
		{[]string{"pyproject.toml"}, "pytest", FormatJUnit},
		{[]string{"lib/tests/test_x.py"}, "pytest", FormatJUnit},
		{[]string{"package.json", "index.js"}, "npm", FormatNone},
		{[]string{"sub/go.mod"}, "", ""}, // only the test directory's own files count
		{nil, "", ""},
	}
	for _, c := range cases {
		p, err := Detect(c.names)
		if c.framework == "" {
			if err == nil {
				t.Errorf("Detect(%v) = %+v, want ErrNotDetected", c.names, p)
			}
			continue
		}
		if err != nil || p.Framework != c.framework || p.Format != c.format {
			t.Errorf("Detect(%v) = %s/%s, %v; want %s/%s", c.names, p.Framework, p.Format, err, c.framework, c.format)
		}
	}
	p := PytestPlan()
	if p.Argv[0] != "sh" || p.ReportPath != DefaultReportPath || !strings.Contains(strings.Join(p.Argv, " "), "--junitxml="+DefaultReportPath) {
		t.Errorf("pytest plan %q", p.Argv)
	}
	// What a report shows is the command itself, not the wrapper that copies its report.
	if got := strings.Join(p.Command(), " "); got != "python3 -m pytest -p no:cacheprovider --junitxml="+DefaultReportPath {
		t.Errorf("pytest command shown as %q", got)
	}
	if got := strings.Join(GoPlan().Command(), " "); got != "go test -json ./..." {
		t.Errorf("go command shown as %q", got)
	}
	if env := GoPlan().MergeEnv(map[string]string{"GOFLAGS": "-mod=vendor", "GOPROXY": "direct"}); env["GOPROXY"] != "direct" || env["GOCACHE"] == "" || env["GOFLAGS"] != "-mod=vendor" {
		t.Errorf("merged env %v", env)
	}
}

func TestCustom(t *testing.T) {
	t.Parallel()
	if p, err := Custom([]string{"go", "test", "-json", "-run", "X", "./pkg"}, "", ""); err != nil || p.Format != FormatGoJSON || p.Env["GOCACHE"] == "" {
		t.Errorf("go test -json: %+v %v", p, err)
	}
	if p, err := Custom([]string{"make", "test"}, "", ""); err != nil || p.Format != FormatNone {
		t.Errorf("make test: %+v %v", p, err)
	}
	if p, err := Custom([]string{"mvn", "test"}, FormatJUnit, "target/report.xml"); err != nil || p.Argv[0] != "sh" || p.Argv[4] != "target/report.xml" || p.Argv[5] != "mvn" {
		t.Errorf("junit: %+v %v", p, err)
	}
	for _, bad := range []struct {
		argv   []string
		format Format
		path   string
	}{
		{nil, "", ""},
		{[]string{"x"}, FormatJUnit, ""},
		{[]string{"x"}, FormatNone, "/tmp/r.xml"},
		{[]string{"x"}, "tap", ""},
	} {
		if _, err := Custom(bad.argv, bad.format, bad.path); err == nil {
			t.Errorf("Custom(%q, %q, %q) accepted", bad.argv, bad.format, bad.path)
		}
	}
}

// Tests a crashed binary left running fail in the order they started, every
// time: the fuzzer found them listed in map order, so one stream gave
// reports that differed from run to run.
func TestGoTestJSONUnreportedInStartOrder(t *testing.T) {
	var b strings.Builder
	names := []string{"TestZeta", "TestAlpha", "TestMid", "TestMid/sub", "TestBeta"}
	for _, n := range names {
		fmt.Fprintf(&b, `{"Action":"run","Package":"p","Test":%q}`+"\n", n)
	}
	b.WriteString(`{"Action":"output","Package":"p","Output":"panic: boom\n"}` + "\n")
	b.WriteString(`{"Action":"fail","Package":"p"}` + "\n")
	want := []string{"TestZeta", "TestAlpha", "TestMid/sub", "TestBeta"}
	for range 20 {
		s := ParseGoTestJSON(strings.NewReader(b.String()))
		var got []string
		for _, f := range s.Failures {
			got = append(got, f.Name)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("failures (-want +got):\n%s", d)
		}
	}
}

func FuzzParseGoTestJSON(f *testing.F) {
	f.Add(fixture(f, "gopass.jsonl"))
	f.Add(fixture(f, "gofail.jsonl"))
	f.Add([]byte(`{"Action":"fail","Package":"p"}` + "\n" + `{"Action":"run","Test":"a/b/c"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s := ParseGoTestJSON(bytes.NewReader(data))
		checkSummary(t, s)
		// Chunking must not change the result.
		c := NewCollector(Plan{Format: FormatGoJSON})
		for len(data) > 0 {
			n := min(len(data), 7)
			c.Write(data[:n])
			data = data[n:]
		}
		got := c.Summary()
		got.Framework, got.Format = s.Framework, s.Format
		if diff := cmp.Diff(s, got); diff != "" {
			t.Fatalf("chunked summary differs:\n%s", diff)
		}
	})
}

func FuzzParseJUnit(f *testing.F) {
	f.Add(fixture(f, "pypass.xml"))
	f.Add(fixture(f, "pyfail.xml"))
	f.Add(fixture(f, "nested.xml"))
	f.Add([]byte(`<testcase><testcase><failure message="x"><error/></failure></testcase>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkSummary(t, ParseJUnit(bytes.NewReader(data)))
	})
}

func checkSummary(t *testing.T, s Summary) {
	t.Helper()
	if s.Passed < 0 || s.Failed < 0 || s.Skipped < 0 || s.FailuresOmitted < 0 {
		t.Fatalf("negative counts: %+v", s)
	}
	if s.Failures == nil || len(s.Failures) > MaxFailures || len(s.Failures)+s.FailuresOmitted != s.Failed {
		t.Fatalf("failures %d listed + %d omitted != %d failed", len(s.Failures), s.FailuresOmitted, s.Failed)
	}
	for _, f := range s.Failures {
		if len(f.Message) > MaxMessageBytes+16 || len(f.Name) > 1024+8 || len(f.Suite) > 1024+8 {
			t.Fatalf("uncapped failure: name %d suite %d message %d bytes", len(f.Name), len(f.Suite), len(f.Message))
		}
	}
}
