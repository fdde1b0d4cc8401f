package gate

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/testkit"
	"github.com/google/go-cmp/cmp"
)

func TestParseVersions(t *testing.T) {
	got, err := ParseVersions(strings.NewReader(`{"bandit": "1.7.10", "gosec": "2.30.0", "eslint-plugin-security": "4.1.0",
		"Bad Key": "1.0", "shellcheck": "0.10.0; rm -rf /", "node": 20, "go": "", "x": "` + strings.Repeat("9", 80) + `"}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"bandit": "1.7.10", "gosec": "2.30.0", "eslint-plugin-security": "4.1.0"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	for _, bad := range []string{"", "null", "[]", `"1.0"`, `{"a":"1"} {"b":"2"}`, `{"a":`, strings.Repeat(" ", maxVersionsBytes+1)} {
		if _, err := ParseVersions(strings.NewReader(bad)); !errors.Is(err, ErrInvalidVersions) {
			t.Errorf("ParseVersions(%.20q) = %v, want ErrInvalidVersions", bad, err)
		}
	}
}

func FuzzParseVersions(f *testing.F) {
	f.Add([]byte(`{"gitleaks": "8.30.1", "bandit": "1.7.10", "eslint": "10.15.0"}`))
	f.Add([]byte(`{"a": {"b": "c"}, "d": ["1"]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := ParseVersions(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, ErrInvalidVersions) {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		if len(v) > maxVersions {
			t.Fatalf("%d versions", len(v))
		}
		for k, s := range v {
			if !nameRE.MatchString(k) || !versionRE.MatchString(s) {
				t.Fatalf("kept %q: %q", k, s)
			}
		}
	})
}

// Past maxVersions entries the same ones are kept on every read: the first
// in sorted order, not whichever the map yields.
func TestParseVersionsKeepsTheSameEntries(t *testing.T) {
	var b strings.Builder
	b.WriteString("{")
	for i := range maxVersions + 36 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"tool%03d": "1.%d"`, i, i)
	}
	b.WriteString("}")
	got := testkit.Same(t, func() string {
		v, err := ParseVersions(strings.NewReader(b.String()))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(slices.Sorted(maps.Keys(v)), " ")
	})
	want := make([]string, maxVersions)
	for i := range want {
		want[i] = fmt.Sprintf("tool%03d", i)
	}
	if got != strings.Join(want, " ") {
		t.Errorf("kept %s", got)
	}
}
