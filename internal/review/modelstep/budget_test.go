package modelstep

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/diff"
	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/llm"
	"github.com/asterhq/aster/internal/llm/llmtest"
	"github.com/asterhq/aster/internal/review"
)

// addedFile writes the diff of a new file of n lines of width w.
func addedFile(b *strings.Builder, path string, n, w int) {
	fmt.Fprintf(b, "diff --git a/%s b/%s\nnew file mode 100644\nindex 0000000..1111111\n--- /dev/null\n+++ b/%s\n@@ -0,0 +1,%d @@\n", path, path, path, n)
	line := strings.Repeat("x", max(0, w-20))
	for i := 1; i <= n; i++ {
		fmt.Fprintf(b, "+v%07d := %q\n", i, line)
	}
}

// modifiedFile writes a modified file with h hunks of 3 added lines each.
func modifiedFile(b *strings.Builder, path string, h, w int) {
	fmt.Fprintf(b, "diff --git a/%s b/%s\nindex 1111111..2222222 100644\n--- a/%s\n+++ b/%s\n", path, path, path, path)
	line := strings.Repeat("y", w)
	for i := 0; i < h; i++ {
		old := 1 + i*10
		fmt.Fprintf(b, "@@ -%d,2 +%d,5 @@\n ctx%d\n+%s\n+%s\n+%s\n ctx%d\n", old, old+i*3, i, line, line, line, i)
	}
}

func okAnswer(path string, line int) string {
	return fmt.Sprintf(`{"summary":"Large change.","comments":[{"path":%q,"line":%d,"end_line":null,"quote":"","severity":"warning","body":"Check this.","suggestion":null}]}`, path, line)
}

// budgetRun reviews in with a fake OpenAI server answering every call, and
// checks the budget's promises: at most maxChunks calls, each within
// maxInput tokens, every file either shown or named as left out.
func budgetRun(t *testing.T, in review.ModelInput, maxInput int64, maxChunks int, mut func(*ModelOptions, *llm.ClientOptions)) (review.ModelReport, []llmtest.Request) {
	t.Helper()
	p := mtProviders[0]
	srv := p.start(t)
	srv.Fallback(func(req llmtest.Request, n int) llmtest.Reply {
		return llmtest.Reply{Text: okAnswer("src/hot.go", 1), InputTokens: int64(len(req.Body) / 4), OutputTokens: 60}
	})
	r, _ := mtReviewer(t, p, srv, func(mo *ModelOptions, co *llm.ClientOptions) {
		mo.MaxInputTokens, mo.MaxChunks = maxInput, maxChunks
		co.MaxCalls = maxChunks + 2
		if mut != nil {
			mut(mo, co)
		}
	})
	start := time.Now()
	rep, err := r.Review(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d files reviewed in %v: %d calls, %d omitted; %s", len(in.Diff), time.Since(start), len(srv.Requests()), len(rep.OmittedFiles), rep.Note)
	if el := time.Since(start); el > 60*time.Second {
		t.Errorf("review took %v", el)
	}
	reqs := srv.Requests()
	if len(reqs) == 0 || len(reqs) > maxChunks {
		t.Fatalf("%d model calls, cap %d", len(reqs), maxChunks)
	}
	shown := map[string]bool{}
	for _, r := range reqs {
		sys, user := p.system(r.JSON), p.user(r.JSON)
		if est := llm.EstimateTokens(sys) + llm.EstimateTokens(user); est > maxInput {
			t.Errorf("a call's prompt is est. %d tokens, over the %d budget", est, maxInput)
		}
		for _, line := range strings.Split(user, "\n") {
			if rest, ok := strings.CutPrefix(line, "FILE "); ok {
				shown[rest[:strings.Index(rest, " (")]] = true
			}
		}
	}
	named := map[string]string{}
	for _, o := range rep.OmittedFiles {
		if o.Reason == "" {
			t.Fatalf("%s left out without a reason", o.Path)
		}
		named[o.Path] = o.Reason
	}
	for _, f := range in.Diff {
		if !shown[f.Path()] && named[f.Path()] == "" {
			t.Fatalf("%s was neither shown nor named as left out", f.Path())
		}
	}
	if len(named) > 0 && rep.Status != review.ModelPartial {
		t.Errorf("status %s with files left out", rep.Status)
	}
	return rep, reqs
}

func TestBudgetFiftyMegabyteDiff(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 50 MB diff")
	}
	var b strings.Builder
	b.Grow(52 << 20)
	modifiedFile(&b, "src/hot.go", 3, 40) // the file with a finding
	modifiedFile(&b, "src/huge.go", 20_000, 60)
	for i := 0; b.Len() < 50<<20; i++ {
		switch i % 4 {
		case 0, 1:
			addedFile(&b, fmt.Sprintf("src/gen/f%04d.go", i), 2500, 100)
		case 2:
			addedFile(&b, fmt.Sprintf("src/gen/f%04d_test.go", i), 2500, 100)
		default:
			addedFile(&b, fmt.Sprintf("docs/p%04d.md", i), 2500, 100)
		}
	}
	size := b.Len()
	files, err := diff.Parse(strings.NewReader(b.String()), diff.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("diff: %d MB, %d files", size>>20, len(files))
	in := review.ModelInput{Title: "Vendor everything", Diff: files, Index: diff.NewIndex(files),
		Findings: []gate.Marked{{Finding: finding.Finding{Analyzer: "gosec", RuleID: "G204", Severity: finding.Error, Path: "src/hot.go", StartLine: 2, EndLine: 2, Message: "subprocess"}, Reported: true}}}
	rep, reqs := budgetRun(t, in, 30_000, 3, nil)
	if !strings.Contains(string(reqs[0].Body), "FILE src/hot.go") {
		t.Error("the file with a finding is not in the first call")
	}
	if !strings.Contains(rep.Note, "left out") || len(rep.OmittedFiles) < len(files)-10 {
		t.Errorf("note %q, %d omitted of %d", rep.Note, len(rep.OmittedFiles), len(files))
	}
	partly := false
	for _, o := range rep.OmittedFiles {
		if o.Path == "src/huge.go" && strings.HasPrefix(o.Reason, "partly reviewed") {
			partly = true
		}
	}
	if !partly {
		t.Error("the huge file was not partly reviewed")
	}
	if len(rep.Comments) != 1 || rep.Comments[0].Path != "src/hot.go" {
		t.Errorf("comments = %+v", rep.Comments)
	}
}

func TestBudgetTenThousandFiles(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 10_000; i++ {
		switch {
		case i == 7777:
			modifiedFile(&b, "src/hot.go", 1, 30)
		case i%10 < 6:
			addedFile(&b, fmt.Sprintf("pkg/m%05d/code.go", i), 5, 60)
		case i%10 < 9:
			addedFile(&b, fmt.Sprintf("pkg/m%05d/code_test.go", i), 5, 60)
		default:
			addedFile(&b, fmt.Sprintf("docs/m%05d.md", i), 5, 60)
		}
	}
	files, err := diff.Parse(strings.NewReader(b.String()), diff.Options{})
	if err != nil || len(files) != 10_000 {
		t.Fatalf("%d files, %v", len(files), err)
	}
	in := review.ModelInput{Diff: files, Index: diff.NewIndex(files),
		Findings: []gate.Marked{{Finding: finding.Finding{Analyzer: "x", RuleID: "y", Severity: finding.Warning, Path: "src/hot.go", StartLine: 2, EndLine: 2, Message: "m"}, Reported: true}}}
	rep, reqs := budgetRun(t, in, 24_000, 3, nil)
	// Priority: the finding first, then code; no test or doc file while code is left out.
	if !strings.Contains(string(reqs[0].Body), "FILE src/hot.go") {
		t.Error("the file with a finding is not in the first call")
	}
	for _, r := range reqs {
		if s := string(r.Body); strings.Contains(s, "code_test.go (") || strings.Contains(s, "FILE docs/") {
			t.Fatal("a test or doc file was shown while code files were left out")
		}
	}
	reasons := 0
	for _, o := range rep.OmittedFiles {
		if strings.Contains(o.Reason, "token budget") && strings.Contains(o.Reason, "priority:") {
			reasons++
		}
	}
	if reasons < 9000 {
		t.Errorf("only %d omitted files say why", reasons)
	}
}

func TestBudgetCostCapHolds(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 300; i++ {
		addedFile(&b, fmt.Sprintf("src/f%03d.go", i), 40, 80)
	}
	modifiedFile(&b, "src/hot.go", 1, 10)
	files, _ := diff.ParseString(b.String())
	in := review.ModelInput{Diff: files, Index: diff.NewIndex(files)}
	// At $10/M input, one ~20k-token call costs ~$0.2; the cap allows one.
	rep, reqs := budgetRun(t, in, 20_000, 4, func(mo *ModelOptions, co *llm.ClientOptions) {
		co.Prices = llm.PriceTable{"gpt-test": {InputPerMTok: 10, OutputPerMTok: 30}}
		co.MaxCostUSD = 0.30
	})
	if len(reqs) != 1 || rep.Usage.CostUSD > 0.30 || rep.Status != review.ModelPartial {
		t.Fatalf("%d calls, $%v, status %s", len(reqs), rep.Usage.CostUSD, rep.Status)
	}
	notSent := 0
	for _, o := range rep.OmittedFiles {
		if strings.HasPrefix(o.Reason, "not sent: the review's model budget is used up") {
			notSent++
		}
	}
	if notSent == 0 || !strings.Contains(rep.Note, "budget exceeded") {
		t.Fatalf("note %q, %d not sent", rep.Note, notSent)
	}
}

func TestPlanBudget(t *testing.T) {
	var b strings.Builder
	addedFile(&b, "README.md", 10, 40)
	addedFile(&b, "app/big.go", 400, 80)
	addedFile(&b, "app/small.go", 10, 40)
	addedFile(&b, "app/small_test.go", 10, 40)
	addedFile(&b, "config/app.yaml", 10, 40)
	modifiedFile(&b, "app/many_hunks.go", 40, 80)
	addedFile(&b, "app/flagged.go", 50, 40)
	files, err := diff.ParseString(b.String())
	if err != nil {
		t.Fatal(err)
	}
	fs := []gate.Marked{{Finding: finding.Finding{Path: "app/flagged.go"}, Reported: true}}
	plan := planBudget(files, fs, BudgetOptions{ChunkTokens: 3000, MaxChunks: 2})
	var order []string
	for _, c := range plan.chunks {
		for _, fp := range c {
			order = append(order, fp.file.Path())
		}
	}
	if order[0] != "app/flagged.go" || order[1] != "app/small.go" {
		t.Fatalf("order = %v", order)
	}
	idx := func(p string) int {
		for i, o := range order {
			if o == p {
				return i
			}
		}
		return -1
	}
	if idx("app/small_test.go") < idx("app/small.go") || (idx("README.md") >= 0 && idx("README.md") < idx("config/app.yaml")) {
		t.Fatalf("priority broken: %v", order)
	}
	reasons := map[string]string{}
	for _, o := range plan.omitted {
		reasons[o.Path] = o.Reason
	}
	if !strings.Contains(reasons["app/big.go"], "more than one call") {
		t.Fatalf("big.go: %q (omitted %v)", reasons["app/big.go"], plan.omitted)
	}
	if !strings.HasPrefix(reasons["app/many_hunks.go"], "partly reviewed") {
		t.Fatalf("many_hunks.go: %q", reasons["app/many_hunks.go"])
	}
	for _, c := range plan.chunks {
		var used int64
		for _, fp := range c {
			for i := range fp.file.Hunks {
				if fp.includes(i) {
					used += hunkTokens(&fp.file.Hunks[i])
				}
			}
		}
		if used > 3000 {
			t.Fatalf("chunk over capacity: %d", used)
		}
	}
}

func TestClassifyPath(t *testing.T) {
	for p, want := range map[string]fileClass{
		"main.go": classCode, "a/b_test.go": classTest, "tests/test_x.py": classTest, "src/x.spec.ts": classTest,
		"README.md": classDocs, "docs/guide/x.html": classDocs, "config.yaml": classConfig, "pkg/app.py": classCode,
	} {
		if got := classifyPath(p); got != want {
			t.Errorf("%s: %v, want %v", p, got, want)
		}
	}
}
