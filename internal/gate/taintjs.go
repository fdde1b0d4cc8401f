package gate

import (
	"strings"

	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/gate/taint"
)

// TaintJS is the name of the analyzer that runs Aster's JavaScript and
// TypeScript taint engine.
const TaintJS = "taint-js"

// taintJSAnalyzer runs the JavaScript/TypeScript engine (package gate/taint,
// engine/js) on the change's JavaScript, TypeScript, EJS and Handlebars
// files. It parses with the image's espree and typescript-estree (ESLintDir);
// it reads the rest of the snapshot only to follow imports and templates,
// and a changed template brings the code that renders it. No file of the
// repository is loaded as code or configuration.
func taintJSAnalyzer() Analyzer {
	cmd := taintCommand(TaintJS, []string{"node"}, taint.JS+"/main.js")
	cmd = append(cmd, "--modules", ESLintDir+"/node_modules", "--memory-mb", "1024")
	return Analyzer{
		Name:    TaintJS,
		Command: cmd,
		Input:   InputTaintJS,
		Format:  finding.FormatSARIF,
		Files: []string{"*.js", "*.jsx", "*.mjs", "*.cjs", "*.ts", "*.tsx", "*.mts", "*.cts",
			"*.ejs", "*.hbs", "*.handlebars"},
		OKExitCodes:    []int{0},
		Timeout:        "5m",
		Memory:         "1536m",
		InformationURI: "https://github.com/asterhq/aster/blob/main/docs/review.md#the-javascript-taint-engine",
	}
}

// jsCoveredByTaint are the rules without data flow, of ESLint's security
// plugin and of Aster's own ast-grep pack, in the categories the JavaScript
// taint engine follows data into: they flag every call of a kind (a file
// name that is not a literal, any child_process use, any eval), so where
// taint-js judged a sink of their category on the finding's line (reported
// it or found it safe), their findings are not reported (Result.Superseded
// keeps them); one at a place the engine never judged stays. The others stay: unsafe regular expressions,
// timing attacks, weak crypto, hard-coded credentials, disabled TLS.
var jsCoveredByTaint = map[string]string{
	"security/detect-non-literal-fs-filename": "path-traversal",
	"security/detect-child-process":           "command-injection",
	"security/detect-non-literal-require":     "code-injection",
	"security/detect-eval-with-expression":    "code-injection",
	"no-eval":                                 "code-injection",
	"no-implied-eval":                         "code-injection",
	"no-new-func":                             "code-injection",
	"security/detect-disable-mustache-escape": "xss",
	"aster.js.sql-injection":                  "sql-injection",
	"aster.js.nosql-injection":                "nosql-injection",
	"aster.js.command-injection":              "command-injection",
	"aster.js.code-injection":                 "code-injection",
	"aster.js.path-traversal":                 "path-traversal",
	"aster.js.ssrf":                           "ssrf",
	"aster.js.open-redirect":                  "open-redirect",
	"aster.js.xss":                            "xss",
	"aster.js.xxe":                            "xxe",
	"aster.js.insecure-deserialization":       "insecure-deserialization",
}

// JSCategory is the taint category of an ESLint or ast-grep rule that the
// JavaScript taint engine supersedes, "" for the others.
func JSCategory(rule string) string { return jsCoveredByTaint[rule] }

// taintJSTargets reports which files taint-js was given: those of the
// change its globs match. Nil when it is not among the analyzers.
func taintJSTargets(list []Analyzer, changed map[string]bool) func(string) bool {
	a, ok := Lookup(list, TaintJS)
	if !ok {
		return nil
	}
	globs, err := CompileGlobs(a.Files)
	if err != nil {
		return nil
	}
	return func(p string) bool { return (changed == nil || changed[p]) && globs.Match(p) }
}

// supersedeJS takes out of fs the ESLint and ast-grep findings of rules
// the JavaScript taint engine covers, when it ran ok, on the lines of the
// files it analysed where it judged a sink of their category (never in a
// file it left out: it judged nothing there). It returns the
// findings kept and those taken, and counts the taken ones in each
// analyzer's result.
func supersedeJS(results []AnalyzerResult, fs []finding.Finding, target func(string) bool) (kept, taken []finding.Finding) {
	ti := -1
	for i, r := range results {
		if r.Name == TaintJS && r.Status == StatusOK {
			ti = i
		}
	}
	if ti < 0 || target == nil {
		return fs, nil
	}
	judged := results[ti].Judged
	kept = fs[:0]
	count := map[string]int{}
	for _, f := range fs {
		if (f.Analyzer == "eslint" || f.Analyzer == "ast-grep") && jsCoveredByTaint[f.RuleID] != "" &&
			!strings.HasSuffix(f.Path, ".html") && target(f.Path) && jsJudged(judged, f) {
			taken = append(taken, f)
			count[f.Analyzer]++
			continue
		}
		kept = append(kept, f)
	}
	for i := range results {
		if n := count[results[i].Name]; n > 0 {
			results[i].Superseded += n
			results[i].Findings -= n
		}
	}
	return kept, taken
}

// jsJudged reports whether taint-js judged a sink of f's category on f's lines.
func jsJudged(judged finding.Judged, f finding.Finding) bool {
	ok, _ := judged.Has(f.Path, f.StartLine, f.EndLine, jsCoveredByTaint[f.RuleID])
	return ok
}
