package finding

import (
	"fmt"
	"strings"
	"testing"
)

// banditDoc is a Bandit JSON document with one result per (test, severity)
// pair, on lines from line on.
func banditDoc(path string, line int, results ...[2]string) string {
	var b strings.Builder
	b.WriteString(`{"errors":[],"results":[`)
	for i, r := range results {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"filename":%q,"line_number":%d,"issue_severity":%q,"issue_confidence":"HIGH","issue_text":"t","test_id":%q,"test_name":"n"}`,
			path, line+i, r[1], r[0])
	}
	b.WriteString(`]}`)
	return b.String()
}

func repeat(n int, r [2]string) [][2]string {
	out := make([][2]string, n)
	for i := range out {
		out[i] = r
	}
	return out
}

// Past MaxFindings a reader drops notes before warnings before errors,
// whatever order the tool printed them in: thousands of asserts in tests
// (notes) do not push out a shell injection printed after them.
func TestCapKeepsMostSevere(t *testing.T) {
	results := repeat(30, [2]string{"B101", "LOW"})
	results = append(results, repeat(5, [2]string{"B602", "HIGH"})...)
	results = append(results, repeat(5, [2]string{"B608", "MEDIUM"})...)
	results = append(results, repeat(5, [2]string{"B101", "LOW"})...)
	res, err := ReadBandit(strings.NewReader(banditDoc("a.py", 1, results...)), ReadOptions{MaxFindings: 12})
	if err != nil {
		t.Fatal(err)
	}
	count := map[Severity]int{}
	for _, f := range res.Findings {
		count[f.Severity]++
	}
	if len(res.Findings) != 12 || res.Dropped != 45-12 || count[Error] != 5 || count[Warning] != 5 || count[Note] != 2 {
		t.Errorf("kept %d (%v), dropped %d; want 12 (5 errors, 5 warnings, 2 notes), dropped 33", len(res.Findings), count, res.Dropped)
	}
	// the notes kept are the first ones printed
	for _, f := range res.Findings {
		if f.Severity == Note && f.StartLine > 2 {
			t.Errorf("kept the note of line %d, want lines 1 and 2", f.StartLine)
		}
	}
}

// Merge joins batches read one at a time as one result under one cap.
func TestMerge(t *testing.T) {
	read := func(doc string, max int) ReadResult {
		t.Helper()
		res, err := ReadBandit(strings.NewReader(doc), ReadOptions{Analyzer: "bandit", MaxFindings: max})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	a := read(banditDoc("a.py", 1, repeat(8, [2]string{"B101", "LOW"})...), 6)
	a.ToolErrors = []string{"a.py: syntax error"}
	b := read(banditDoc("b.py", 1, append(repeat(3, [2]string{"B602", "HIGH"}), repeat(4, [2]string{"B101", "LOW"})...)...), 0)
	b.Stats = &RunStats{Files: 1, MS: 10, MaxRSSKB: 7}
	c := read(banditDoc("c.py", 1, [2]string{"B608", "MEDIUM"}), 0)
	c.Stats = &RunStats{Files: 2, MS: 5, MaxRSSKB: 9}
	m := Merge(6, a, b, c)
	count := map[Severity]int{}
	for _, f := range m.Findings {
		count[f.Severity]++
		if f.Analyzer != "bandit" || f.Fingerprint == "" {
			t.Errorf("finding lost its analyzer or fingerprint: %+v", f)
		}
	}
	// 6 + 7 + 1 read, 2 dropped by the first reader, 8 by Merge
	if len(m.Findings) != 6 || count[Error] != 3 || count[Warning] != 1 || count[Note] != 2 || m.Dropped != 2+8 {
		t.Errorf("merged %d (%v), dropped %d; want 6 (3 errors, 1 warning, 2 notes), dropped 10", len(m.Findings), count, m.Dropped)
	}
	for i := 1; i < len(m.Findings); i++ {
		p, q := m.Findings[i-1], m.Findings[i]
		if p.Path > q.Path || p.Path == q.Path && p.StartLine > q.StartLine {
			t.Fatalf("not sorted: %s:%d before %s:%d", p.Path, p.StartLine, q.Path, q.StartLine)
		}
	}
	if len(m.ToolErrors) != 1 || m.Stats == nil || m.Stats.Files != 3 || m.Stats.MS != 15 || m.Stats.MaxRSSKB != 9 {
		t.Errorf("tool errors %v, stats %+v", m.ToolErrors, m.Stats)
	}
	if n := len(Merge(0, a, b, c).Findings); n != 6+7+1 {
		t.Errorf("Merge(0) kept %d, want all 14", n)
	}
}
