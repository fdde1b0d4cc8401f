package finding

import (
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestReadInfraTools checks the outputs recorded from the image's actionlint
// and cppcheck (gen-infra.sh): places, severities and CWEs.
func TestReadInfraTools(t *testing.T) {
	t.Run("actionlint", func(t *testing.T) {
		res := readFixture(t, "tools/actionlint.json", FormatActionlint)
		want := []cwePlace{{place{".github/workflows/triage.yml", 9, "actionlint.untrusted-input", Error}, "CWE-78,CWE-94"}}
		if d := cmp.Diff(want, cwePlaces(res.Findings)); d != "" {
			t.Errorf("(-want +got):\n%s", d)
		}
	})
	t.Run("cppcheck", func(t *testing.T) {
		res := readFixture(t, "tools/cppcheck.xml", FormatCppcheck)
		want := []cwePlace{{place{"src/greet.c", 11, "arrayIndexOutOfBounds", Error}, "CWE-788"}}
		if d := cmp.Diff(want, cwePlaces(res.Findings)); d != "" {
			t.Errorf("(-want +got):\n%s", d)
		}
	})
}

func TestReadActionlintKinds(t *testing.T) {
	in := `[{"message":"m","filepath":"/work/.github/workflows/a.yml","line":3,"column":1,"kind":"syntax-check"},` +
		`{"message":"\"github.event.pull_request.head.ref\" is potentially untrusted.","filepath":"a.yml","line":4,"kind":"expression"},` +
		`{"message":"property \"x\" is not defined","filepath":"a.yml","line":5,"kind":"expression"},` +
		`{"message":"\"password\" section in \"container\" section should be specified via secrets","filepath":"a.yml","line":6,"kind":"credentials"}]` +
		"\n[]\n"
	res := readString(t, in, FormatActionlint)
	want := []cwePlace{
		{place{".github/workflows/a.yml", 3, "actionlint.syntax-check", Note}, ""},
		{place{"a.yml", 4, "actionlint.untrusted-input", Error}, "CWE-78,CWE-94"},
		{place{"a.yml", 5, "actionlint.expression", Note}, ""},
		{place{"a.yml", 6, "actionlint.credentials", Warning}, "CWE-798"},
	}
	if d := cmp.Diff(want, cwePlaces(res.Findings)); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	for _, bad := range []string{"", "{}", "null", `{"message":"x"}`} {
		if _, err := Read(FormatActionlint, stringsReader(bad), ReadOptions{}); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestReadCppcheckRejects(t *testing.T) {
	for _, bad := range []string{
		"", "<results/>", `<results version="1"/>`,
		`<!DOCTYPE results [<!ENTITY e "x">]><results version="2"/>`,
		`<results version="2">` + nest(40) + `</results>`,
	} {
		if _, err := Read(FormatCppcheck, stringsReader(bad), ReadOptions{}); err == nil {
			t.Errorf("%.60q: no error", bad)
		}
	}
}

func nest(n int) string {
	s := ""
	for range n {
		s = "<a>" + s + "</a>"
	}
	return s
}

func stringsReader(s string) io.Reader { return strings.NewReader(s) }

func readString(t *testing.T, s string, format Format) ReadResult {
	t.Helper()
	res, err := Read(format, strings.NewReader(s), ReadOptions{Analyzer: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return res
}
