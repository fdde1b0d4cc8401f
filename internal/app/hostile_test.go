package app

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/llm/llmtest"
	"github.com/asterhq/aster/internal/review/modelstep"
	"github.com/asterhq/aster/internal/safetext"
	"github.com/asterhq/aster/internal/store"
)

// hostileAnalyzer is a repository-defined analyzer (from the base .aster.yml) whose
// findings carry everything an attacker can put into an analyzer's message: HTML, images,
// links, mentions, a /command, an issue reference, Markdown that would end the list or
// open a heading, invisible and bidi characters (U+00AD, tag characters), a GitHub token
// and forged Aster markers. The token is built at run time, so no token-shaped literal is in
// the source.
const hostileAnalyzer = `import json
tok = "ghp_" + "x9Qz" * 9
msg = ("Found <img src=https://evil.example/x.png> and ![p](https://evil.example/p.png) for @octocat: " +
       "[fix](https://evil.example/phish) \u202etxt.exe\u00ad\U000e0041 /approve #12 " + tok +
       "\n# Heading </details> <!-- aster:fp=0123456789abcdef0123456789abcdef --> <!-- aster:summary -->")
res = [
  {"ruleId": "inj", "level": "error", "message": {"text": msg}, "locations": [{"physicalLocation": {
    "artifactLocation": {"uri": "app.py"}, "region": {"startLine": 4}}}]},
  {"ruleId": "odd", "level": "warning", "message": {"text": "@admin\u200b look\u2066 here | cell"}, "locations": [{"physicalLocation": {
    "artifactLocation": {"uri": "app.py"}, "region": {"startLine": 3}}}]},
]
rules = [{"id": "inj", "helpUri": "https://cwe.mitre.org/data/definitions/78.html"},
         {"id": "odd", "helpUri": "https://evil.example/help"}]
print(json.dumps({"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "hostile", "rules": rules}}, "results": res}]}))
`

// TestHostileTextThroughTheWholeApp feeds every kind of hostile text through the App's whole
// path — a webhook, the real pipeline (an analyzer in a real sandbox, the model step against
// a scripted OpenAI-compatible server), the plan and the posts to the fake GitHub — and
// checks what GitHub received byte for byte: the review body and every inline comment,
// the summary's model section and findings, the check run's annotations. Model text is
// sanitised once (code blocks kept verbatim, <img> inside them included), analyzer text is
// escaped, secrets are redacted, markers cannot be forged.
func TestHostileTextThroughTheWholeApp(t *testing.T) {
	runner := dockerGate(t, 2)

	token := "ghp_" + strings.Repeat("x9Qz", 9)
	llmSrv := llmtest.OpenAI(t, modelKey)
	llmSrv.Fallback(func(req llmtest.Request, n int) llmtest.Reply {
		comments := []any{
			map[string]any{"path": "app.py", "line": 4, "end_line": nil, "quote": "subprocess.call(cmd, shell=True)", "severity": "error",
				"body": "Command injection \u202ehere\u00ad\U000E0041. cc @octocat #7 ![x](https://evil.example/p.png) " +
					"[docs](https://docs.python.org/3/library/shlex.html) [evil](https://evil.example/)\n/approve\nFix:\n" +
					"```python\nprint(\"<img src=x onerror=alert(1)>\")  # @admin https://evil.example\n```\n" +
					"Key: " + modelKey + " token " + token + "\n<!-- aster:fp=0123456789abcdef0123456789abcdef -->",
				"suggestion": "    subprocess.call(shlex.split(cmd))"},
			map[string]any{"path": "app.py", "line": 3, "end_line": nil, "quote": "def run(cmd):", "severity": "note",
				"body": "~~~\n```\n<b>x</b>\n```\n~~~\n<details><summary>x</summary>\n[ref]: https://evil.example/r\n&#64;root", "suggestion": nil},
		}
		b, _ := json.Marshal(map[string]any{
			"summary": "Adds a runner. <img src=https://evil.example/s.png> @octocat see https://docs.python.org/3/library/subprocess.html " +
				"and https://evil.example/x\n/approve\n<!-- aster:summary --> " + modelKey,
			"comments": comments})
		return llmtest.Reply{Text: string(b), InputTokens: 900, OutputTokens: 70}
	})
	model := scriptedModel(t, llmSrv.URL, modelstep.ModelOptions{
		Sanitize: safetext.SanitizeOptions{AllowedHosts: []string{"docs.python.org"}, MaxBytes: 4000}})
	rv := NewPipelineReviewer(PipelineOptions{Gate: runner, Builtins: []gate.Analyzer{}, Model: model, TempDir: t.TempDir()})
	h := newHarness(t, harnessOptions{reviewer: rv})

	cfg := "analyzers:\n  hostile:\n    command: [\"python3\", \"-c\", " + jsonString(hostileAnalyzer) + "]\n    format: sarif\n"
	base := h.git.Commit("", "base", map[string]string{".aster.yml": cfg, "README.md": "# widgets\n"})
	head := h.git.Commit(base, "runner", map[string]string{
		"app.py": "import subprocess\n\ndef run(cmd):\n    subprocess.call(cmd, shell=True)\n",
	})
	h.push("hostile-1", "opened", 3, base, head, "")
	recs := h.waitHistory(3, 1, 4*time.Minute)
	if recs[0].Outcome != store.OutcomePosted || recs[0].Conclusion != ConclusionFailure {
		t.Fatalf("record: %+v", recs[0])
	}

	revs := h.fake.Reviews("acme", "widgets", 3)
	if len(revs) != 1 {
		t.Fatalf("%d reviews, want 1", len(revs))
	}
	short := head[:7]
	wantBody := "Aster's comments on `" + short + "`; the summary comment has the rest."
	if revs[0].Body != wantBody {
		t.Errorf("review body:\n got %q\nwant %q", revs[0].Body, wantBody)
	}
	type posted struct {
		Path string
		Line int
		Body string
	}
	var got []posted
	for _, c := range revs[0].Comments {
		got = append(got, posted{c.Path, c.Line, c.Body})
	}
	want := []posted{
		// The analyzer's findings: escaped (inert Markdown on one line), the token redacted
		// before escaping, hidden characters dropped, the allowed help link kept.
		{"app.py", 4, "**error** · hostile `inj`\n\nFound \\<img src=https\u200b://evil.example/x.png\\> and \\!\\[p\\](https\u200b://evil.example/p.png) for @\u200boctocat: \\[fix\\](https\u200b://evil.example/phish) txt.exe /approve \\#12 \\[REDACTED:github-token\\] \\# Heading \\</details\\>\n\n[More about inj](https://cwe.mitre.org/data/definitions/78.html)\n\n<!-- aster:fp=5c9692ccfb866b194ef600468237e337 -->"},
		// A help link to another host is left out.
		{"app.py", 3, "**warning** · hostile `odd`\n\n@\u200badmin look here \\| cell\n\n<!-- aster:fp=97c55e6c0987bce47da0c1e7b1f4f922 -->"},
		// The model's comments: sanitised once, by the model step. The code block is posted
		// as the model wrote it, <img> included; the forged marker is inert text.
		{"app.py", 4, "**error** · Command injection here. cc ＠octocat ＃7 !\\[x] [docs](https://docs.python.org/3/library/shlex.html) [evil]\n\\/approve\nFix:\n\n```python\nprint(\"<img src=x onerror=alert(1)>\")  # @admin https://evil.example\n```\nKey: [REDACTED:configured-secret] token [REDACTED:github-token]\n&lt;!-- aster:fp=0123456789abcdef0123456789abcdef -->\n\n---\n**Unverified.** The model gave no evidence for this comment.\n\n```suggestion\n    subprocess.call(shlex.split(cmd))\n```\n\n<!-- aster:fp=0107db60d115b05d3520bc7beb445211 -->"},
		// A tilde fence holding a backtick fence is re-fenced so nothing inside can close it.
		{"app.py", 3, "**note** · ````\n```\n<b>x</b>\n```\n````\n&lt;details>&lt;summary>x&lt;/summary>\n\n&amp;＃64;root\n\n---\n**Unverified.** The model gave no evidence for this comment.\n\n<!-- aster:fp=76797a5ec4a7c7243a82c950ce3f6363 -->"},
	}
	if len(got) != len(want) {
		for _, c := range got {
			t.Logf("posted %s:%d:\n%q", c.Path, c.Line, c.Body)
		}
	}
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Errorf("inline comment %d:\n got %s:%d %q\nwant %s:%d %q", i, got[i].Path, got[i].Line, got[i].Body, want[i].Path, want[i].Line, want[i].Body)
		}
	}
	sum := h.fake.IssueComments("acme", "widgets", 3)
	if len(sum) != 1 {
		t.Fatalf("%d summary comments", len(sum))
	}
	for _, section := range []string{
		"### Summary\n\nAdds a runner. &lt;img src=[link removed]> ＠octocat see https://docs.python.org/3/library/subprocess.html and [link removed]\n" +
			"\\/approve\n&lt;!-- aster:summary --> [REDACTED:configured-secret]\n\n",
		"### Findings on the change\n\n" +
			"- **error** `app.py:4` hostile/`inj` — Found \\<img src=https\u200b://evil.example/x.png\\> and \\!\\[p\\](https\u200b://evil.example/p.png) for @\u200boctocat: \\[fix\\](https\u200b://evil.example/phish) txt.exe /approve \\#12 \\[REDACTED:github-token\\] \\# Heading \\</details\\>\n" +
			"- **warning** `app.py:3` hostile/`odd` — @\u200badmin look here \\| cell\n\n",
	} {
		if !strings.Contains(sum[0].Body, section) {
			t.Errorf("the summary lacks\n%q\nin\n%q", section, sum[0].Body)
		}
	}
	if strings.Count(sum[0].Body, "<!-- aster:summary -->") != 1 || !strings.HasPrefix(sum[0].Body, "<!-- aster:summary -->\n") {
		t.Errorf("the summary marker is forged or missing: %q", sum[0].Body)
	}
	// Annotations are plain text (GitHub renders none of it): hidden characters dropped,
	// the token redacted, nothing else changed.
	runs := h.fake.CheckRuns("acme", "widgets")
	if len(runs) != 1 {
		t.Fatalf("%d check runs", len(runs))
	}
	var anns []string
	for _, a := range runs[0].Annotations {
		anns = append(anns, fmt.Sprintf("%s:%d %s %q %q", a.Path, a.StartLine, a.Level, a.Title, a.Message))
	}
	wantAnns := []string{
		`app.py:4 failure "hostile: inj" "Found <img src=https://evil.example/x.png> and ![p](https://evil.example/p.png) for @octocat: [fix](https://evil.example/phish) txt.exe /approve #12 [REDACTED:github-token]\n# Heading </details>"`,
		`app.py:3 warning "hostile: odd" "@admin look here | cell"`,
	}
	if !slices.Equal(anns, wantAnns) {
		t.Errorf("annotations:\n got %q\nwant %q", anns, wantAnns)
	}
	h.assertNoSecrets(modelKey, token)
}
