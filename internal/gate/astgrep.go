package gate

import (
	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/gate/rules/astgrep"
)

// AstGrepRulesDir is where the ast-grep analyzer unpacks Aster's rule pack in
// its sandbox: under /tmp, outside the repository tree at /work, so the
// snapshot is never changed and no file of the repository (its own
// sgconfig.yml included) is read as configuration.
const AstGrepRulesDir = "/tmp/aster-rules"

// astGrepScript unpacks the tar on stdin into AstGrepRulesDir and runs
// ast-grep with the arguments that follow over the files the pack lists,
// as many at a time as a command line holds (each run prints its own JSON
// lines). A missing ast-grep exits 127, so the optional analyzer is skipped
// on an image without it; a pack that does not unpack exits 2, and a run
// that ends other than 0 or 1 (1: error-level matches) makes xargs end 124
// or 125: each fails the analyzer.
const astGrepScript = `mkdir -p ` + AstGrepRulesDir + ` && tar -x -f - -C ` + AstGrepRulesDir + ` || exit 2; ` +
	`command -v ast-grep >/dev/null || exit 127; ` +
	`exec xargs -0 -r sh -c 'ast-grep "$@"; s=$?; [ "$s" -le 1 ] || exit 255' ast-grep "$@" <` + AstGrepRulesDir + `/` + astgrep.FilesList

// astGrepAnalyzer runs Aster's embedded ast-grep rule pack (package
// gate/rules/astgrep) over the target files: the changed files in its
// languages (its rules read one file at a time), never a minified bundle.
// It is optional until every image has /usr/local/bin/ast-grep.
func astGrepAnalyzer() Analyzer {
	cmd := append([]string{"sh", "-c", astGrepScript, "ast-grep"}, astgrep.ScanArgs(AstGrepRulesDir+"/"+astgrep.ConfigFile)...)
	return Analyzer{
		Name:    "ast-grep",
		Command: cmd,
		Input:   InputAsterRules,
		Format:  finding.FormatAstGrep,
		// Only the languages the pack has rules for; JavaScript and
		// TypeScript are all read as TSX (sgconfig.yml).
		Files: []string{"*.py", "*.pyi", "*.js", "*.jsx", "*.mjs", "*.cjs", "*.ts", "*.mts", "*.cts", "*.tsx",
			"*.go", "*.sh", "*.bash", "*.ksh", "*.bats",
			"*.java", "*.kt", "*.kts", "*.php", "*.rb", "*.cs"},
		Exclude:     []string{"*.min.js"},
		TargetsOnly: true,
		// astGrepScript ends 0 when every run ended 0 or 1 (error-level
		// matches were found).
		OKExitCodes:    []int{0},
		Optional:       true,
		Timeout:        "5m",
		InformationURI: "https://ast-grep.github.io",
	}
}
