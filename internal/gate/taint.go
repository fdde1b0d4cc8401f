package gate

import (
	"strconv"
	"strings"

	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/gate/taint"
)

// TaintPython is the name of the analyzer that runs Aster's Python taint
// engine.
const TaintPython = "taint-python"

// taintEngine is the taint engine an analyzer's input carries, "" for none.
func (a Analyzer) taintEngine() string {
	switch a.Input {
	case InputTaintPython:
		return taint.Python
	case InputTaintJS:
		return taint.JS
	}
	return ""
}

// taintCommand runs an engine's entry point (python/main.py, js/main.js)
// with the interpreter argv0, over the snapshot at /work and the target
// files listed in the tar.
func taintCommand(name string, interpreter []string, entry string) []string {
	cmd := []string{"sh", "-c", taint.Script, name}
	cmd = append(cmd, interpreter...)
	return append(cmd, taint.Dir+"/"+entry, "--root", "/work",
		"--files-from", taint.Dir+"/"+taint.TargetsFile,
		"--file-budget-ms", "5000", "--max-results", "2000")
}

// taintPythonAnalyzer runs the Python engine (package gate/taint) on the
// Python files and the Jinja2/Django templates of the change. It runs only
// in a snapshot with Python code (a template is read through the code that
// renders it). python3 -I: no PYTHON* variable, no user site, and not the
// repository's directory on sys.path.
func taintPythonAnalyzer() Analyzer {
	return Analyzer{
		Name: TaintPython,
		// A run's CPU budget, and a wall-clock deadline, below its 5 min
		// timeout: past either the files not reached are named and what was
		// analysed is reported, where a timeout would report nothing.
		Command: append(taintCommand(TaintPython, []string{"python3", "-I", "-B"}, taint.Python+"/main.py"),
			"--run-budget-ms", strconv.Itoa(taintPythonRunBudgetMS), "--run-deadline-ms", strconv.Itoa(taintPythonRunDeadlineMS)),
		Input:       InputTaintPython,
		Format:      finding.FormatSARIF,
		Files:       []string{"*.py", "*.html", "*.htm", "*.jinja", "*.jinja2", "*.j2", "*.djhtml"},
		Requires:    []string{"*.py"},
		OKExitCodes: []int{0},
		Timeout:     "5m",
		// every module is held for the summary passes: 1.1 GiB peak on
		// 2,497 files of ansible and sympy (docs/performance.md)
		Memory:         "2g",
		InformationURI: "https://github.com/asterhq/aster/blob/main/docs/review.md#the-taint-engines",
	}
}

// The Python engine's CPU budget and wall-clock deadline for one run (its
// sandbox times out at 5 min).
const (
	taintPythonRunBudgetMS   = 200_000
	taintPythonRunDeadlineMS = 240_000
)

// banditCoveredByTaint are Bandit's tests that have no data flow (they flag
// every call, import or string of a kind) in the categories the Python taint
// engine follows data into: where taint-python judged a sink of the category
// on the finding's line (reported it or found it safe), the finding is not
// reported (Result.Superseded keeps it); one at a place the engine never
// judged stays. Bandit's rules that judge a call by itself stay: weak
// hashes, TLS, debug mode; yaml.load and pickle (banditJudgedByCall) stay
// unless the engine judged the very call safe by its own arguments.
var banditCoveredByTaint = map[string]string{
	"B102": "code-injection", "B307": "code-injection",
	"B404": "command-injection", "B601": "command-injection", "B602": "command-injection",
	"B603": "command-injection", "B604": "command-injection", "B605": "command-injection",
	"B606": "command-injection", "B607": "command-injection", "B609": "command-injection",
	"B608": "sql-injection", "B610": "sql-injection", "B611": "sql-injection",
	"B310": "ssrf", "B311": "weak-randomness",
	"B308": "xss", "B703": "xss", "B704": "xss",
	"B313": "xxe", "B314": "xxe", "B315": "xxe", "B316": "xxe", "B317": "xxe", "B318": "xxe",
	"B319": "xxe", "B320": "xxe", "B405": "xxe", "B406": "xxe", "B407": "xxe", "B408": "xxe",
	"B409": "xxe", "B410": "xxe", "B411": "xxe",
}

// banditJudgedByCall are Bandit's deserialization tests: superseded only
// where the engine reported the call or judged it safe by its own arguments
// (a loader that builds no objects, a constant document), not where it only
// saw no source (a file read back may still hold an upload).
var banditJudgedByCall = map[string]string{
	"B301": "insecure-deserialization", "B302": "insecure-deserialization", "B506": "insecure-deserialization",
}

// astgrepPyCoveredByTaint are Aster's ast-grep Python rules in the engine's
// categories: they follow one assignment from the request at most, so where
// the engine judged the same sink safe they are superseded like Bandit's
// (the deserialization rule only where the call was judged safe by
// itself); where it reported the sink, the two merge.
var astgrepPyCoveredByTaint = map[string]string{
	"aster.python.code-injection": "code-injection", "aster.python.command-injection": "command-injection",
	"aster.python.open-redirect": "open-redirect", "aster.python.path-traversal": "path-traversal",
	"aster.python.sql-injection": "sql-injection", "aster.python.ssrf": "ssrf", "aster.python.xss": "xss",
	"aster.python.xxe": "xxe",
}

// BanditCategory is the taint category a Bandit test that the taint engine
// supersedes belongs to, "" for the others.
func BanditCategory(test string) string {
	if c := banditCoveredByTaint[test]; c != "" {
		return c
	}
	return banditJudgedByCall[test]
}

// supersede takes out of fs the Bandit findings of tests the Python taint
// engine covers, when it ran ok, on the lines where it judged a sink of
// their category (never in a file it left out: it judged nothing there).
// It returns the findings kept and those taken, and counts the taken ones
// in Bandit's result.
func supersede(results []AnalyzerResult, fs []finding.Finding) (kept, taken []finding.Finding) {
	ti := -1
	for i, r := range results {
		if r.Name == TaintPython && r.Status == StatusOK {
			ti = i
		}
	}
	if ti < 0 {
		return fs, nil
	}
	judged := results[ti].Judged
	flagged := engineLines(fs, TaintPython)
	kept = fs[:0]
	for _, f := range fs {
		if (f.Analyzer == "bandit" || f.Analyzer == "ast-grep" && strings.HasSuffix(f.Path, ".py")) && judgedBy(judged, flagged, f) {
			taken = append(taken, f)
			continue
		}
		kept = append(kept, f)
	}
	for i := range results {
		n := 0
		for _, f := range taken {
			if f.Analyzer == results[i].Name {
				n++
			}
		}
		if n > 0 {
			results[i].Superseded += n
			results[i].Findings -= n
		}
	}
	return kept, taken
}

// judgedBy reports whether the taint engine's judgements supersede Bandit's
// finding f.
func judgedBy(judged finding.Judged, flagged map[string]bool, f finding.Finding) bool {
	covered, byCallOnly := banditCoveredByTaint[f.RuleID], banditJudgedByCall[f.RuleID]
	if f.Analyzer == "ast-grep" {
		covered, byCallOnly = astgrepPyCoveredByTaint[f.RuleID], ""
		if f.RuleID == "aster.python.insecure-deserialization" {
			byCallOnly = "insecure-deserialization"
		}
	}
	if c := covered; c != "" {
		ok, _ := judged.Has(f.Path, f.StartLine, f.EndLine, c)
		if f.Analyzer == "ast-grep" && flagged[lineKey(f.Path, f.StartLine, c)] {
			// the engine reported the same sink: the two merge into one
			// finding (ast-grep's, also taint-python's, with the flow)
			return false
		}
		// Bandit's goes where the engine judged the sink or reported it
		// (a function nothing here calls, its parameter in a shell command)
		return ok || flagged[lineKey(f.Path, f.StartLine, c)]
	}
	if c := byCallOnly; c != "" {
		_, byCall := judged.Has(f.Path, f.StartLine, f.EndLine, c)
		return byCall || flagged[lineKey(f.Path, f.StartLine, c)]
	}
	return false
}

// engineLines are the (path, line, category) of an engine's findings.
func engineLines(fs []finding.Finding, analyzer string) map[string]bool {
	out := map[string]bool{}
	for _, f := range fs {
		if f.Analyzer == analyzer {
			if c := taint.Category(f.RuleID); c != "" {
				out[lineKey(f.Path, f.StartLine, c)] = true
			}
		}
	}
	return out
}

func lineKey(path string, line int, category string) string {
	return path + "\x00" + strconv.Itoa(line) + "\x00" + category
}
