// Package gate is Aster's cheap static-analysis step: analyzers defined as
// configuration (image, command template, output format, file globs), each run
// in its own sandbox over a repository snapshot, their output normalised to
// findings, and a diff-aware filter that marks (never drops) each finding by
// where it lies relative to the change.
package gate

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/testrun"
	"github.com/asterhq/aster/internal/units"
)

// Analyzer is one static-analysis tool, described entirely by configuration.
type Analyzer struct {
	// Name identifies the analyzer in findings, reports and .aster.yml.
	Name string `yaml:"name" json:"name"`
	// Image runs the tool; empty means the runner's default image. It must be
	// on the operator's image allowlist.
	Image string `yaml:"image,omitempty" json:"image,omitempty"`
	// Command is the argv, run in /work (the snapshot). An element that is
	// exactly "{files}" expands to the target files, one argument each.
	Command []string `yaml:"command" json:"command"`
	// Input "files0" feeds the target files on stdin, NUL-separated, for
	// commands that take their list from xargs -0 (no argv limit). Input
	// "aster-rules" feeds Aster's ast-grep rule pack on stdin as a tar, for
	// the command to unpack outside /work (see AstGrepRulesDir). Inputs
	// "aster-taint-python" and "aster-taint-js" feed one of Aster's taint
	// engines and the target files as a tar (package gate/taint).
	Input string `yaml:"input,omitempty" json:"input,omitempty"`
	// Format of the tool's stdout: sarif, semgrep-json, shellcheck-json,
	// bandit-json, ast-grep-json, gitleaks-json, eslint-json, actionlint-json,
	// cppcheck-xml, kics-json.
	Format finding.Format `yaml:"format" json:"format"`
	// Files are the globs of files the tool applies to; empty means every
	// file. An analyzer with no matching file is skipped.
	Files []string `yaml:"files,omitempty" json:"files,omitempty"`
	// Shells, when set, are the shell dialects the tool reads: a target file
	// whose #! line, shell directive or extension names another shell (zsh,
	// fish) is not given to it, and is counted as skipped by its shell.
	Shells []string `yaml:"shells,omitempty" json:"shells,omitempty"`
	// Sniff, when set, reads the start of each target file and keeps only
	// those the tool analyses (kics: Dockerfiles, and the YAML files that are
	// Kubernetes manifests); the others are skipped and not counted as read.
	Sniff *Sniffer `yaml:"-" json:"-"`
	// Requires are globs of which at least one must match a file of the
	// snapshot for the analyzer to run at all (Semgrep needs rule files).
	Requires []string `yaml:"requires,omitempty" json:"requires,omitempty"`
	// OKExitCodes are the exit codes that mean "ran, maybe found something"
	// (default 0 and 1).
	OKExitCodes []int `yaml:"ok_exit_codes,omitempty" json:"ok_exit_codes,omitempty"`
	// Optional analyzers whose tool is missing from the image (exit 127) are
	// skipped rather than failed: Semgrep runs only where the image has it.
	Optional bool `yaml:"optional,omitempty" json:"optional,omitempty"`
	// Severity, when set, replaces the severity of every finding (gitleaks
	// reports secrets without a level; a leaked secret is an error).
	Severity finding.Severity `yaml:"severity,omitempty" json:"severity,omitempty"`
	// SecretsOnly marks an analyzer that reads every file for secrets and
	// nothing else: a file only it reads is not analysed as code (the
	// review lists it as not analysed, naming its language).
	SecretsOnly bool `yaml:"-" json:"-"`
	// GoModule marks an analyzer that loads the Go module at the snapshot's
	// root with the image's Go: when go.mod declares a newer Go than the
	// image has, it is skipped with a note saying which Go it needs.
	GoModule bool `yaml:"-" json:"-"`
	// Exclude are globs of files never given to the tool, even where Files
	// match them (built in only: ast-grep's minified bundles, gitleaks'
	// ignore list).
	Exclude []string `yaml:"-" json:"-"`
	// TargetsOnly marks a built-in analyzer whose tool reads nothing but the
	// files it is given, or every file of the tree it is given: its
	// sandbox's /work holds only its target files (a batch's, when it runs
	// in batches) and the directories above them, not the whole snapshot.
	TargetsOnly bool `yaml:"-" json:"-"`
	// BatchFiles, when set, runs a tool given its files on stdin (input
	// files0) over at most this many files at a time, each batch in its own
	// sandbox with its own output cap; the findings of all batches are read
	// one batch at a time and kept within one bound (finding.Merge). A large
	// change then cannot lose a tool's whole report to the cap.
	BatchFiles int `yaml:"-" json:"-"`
	// Timeout and Memory override the sandbox limits for this analyzer
	// ("2m", "1g").
	Timeout string `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	Memory  string `yaml:"memory,omitempty" json:"memory,omitempty"`
	// TmpSize, when set, replaces the size of the sandbox's /tmp ("1g"):
	// gosec's Go build cache needs more than the default.
	TmpSize string `yaml:"tmp_size,omitempty" json:"tmp_size,omitempty"`
	// Env is the tool's whole environment besides HOME; never host values.
	Env map[string]string `yaml:"env,omitempty" json:"env,omitempty"`
	// InformationURI is the tool's home page, for SARIF output.
	InformationURI string `yaml:"information_uri,omitempty" json:"information_uri,omitempty"`
}

// ESLintDir is where the sandbox image keeps ESLint, eslint-plugin-security
// and Aster's configuration for them (images/sandbox/eslint.config.mjs).
const ESLintDir = "/opt/aster/eslint"

// Placeholders and inputs.
const (
	FilesPlaceholder = "{files}"
	InputFiles0      = "files0"
	InputAsterRules  = "aster-rules"
	InputTaintPython = "aster-taint-python"
	InputTaintJS     = "aster-taint-js"
)

// Limits on an analyzer definition (it may come from a repository's
// .aster.yml, which is untrusted input).
const (
	MaxCommandArgs     = 64
	MaxCommandArgBytes = 1024
	MaxGlobs           = 64
	MaxEnv             = 32
	MaxAnalyzerTimeout = 30 * time.Minute
)

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
var envKeyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// Validate checks a definition and returns a message that names the field.
func (a Analyzer) Validate() error {
	if !nameRE.MatchString(a.Name) {
		return fmt.Errorf("analyzer name %q: use 1-64 lower-case letters, digits, - or _", a.Name)
	}
	errf := func(format string, args ...any) error {
		return fmt.Errorf("analyzer %s: %s", a.Name, fmt.Sprintf(format, args...))
	}
	if len(a.Command) == 0 || strings.TrimSpace(a.Command[0]) == "" {
		return errf("command is empty")
	}
	if len(a.Command) > MaxCommandArgs {
		return errf("command has %d arguments, more than %d", len(a.Command), MaxCommandArgs)
	}
	for _, arg := range a.Command {
		if len(arg) > MaxCommandArgBytes || strings.ContainsRune(arg, 0) {
			return errf("a command argument is longer than %d bytes or contains NUL", MaxCommandArgBytes)
		}
	}
	if _, err := finding.ParseFormat(string(a.Format)); err != nil {
		return errf("%v", err)
	}
	switch a.Input {
	case "", InputFiles0, InputAsterRules, InputTaintPython, InputTaintJS:
	default:
		return errf("input %q is not files0, aster-rules, aster-taint-python or aster-taint-js", a.Input)
	}
	if len(a.Files) > MaxGlobs {
		return errf("more than %d file globs", MaxGlobs)
	}
	if _, err := CompileGlobs(a.Files); err != nil {
		return errf("files: %v", err)
	}
	if len(a.Requires) > MaxGlobs {
		return errf("more than %d requires globs", MaxGlobs)
	}
	if _, err := CompileGlobs(a.Requires); err != nil {
		return errf("requires: %v", err)
	}
	if len(a.Shells) > MaxGlobs {
		return errf("more than %d shells", MaxGlobs)
	}
	for _, sh := range a.Shells {
		if !nameRE.MatchString(sh) {
			return errf("shell %q is not a shell name", sh)
		}
	}
	if a.Severity != "" && a.Severity.Rank() == 0 {
		return errf("severity %q is not error, warning or note", a.Severity)
	}
	for _, c := range a.OKExitCodes {
		if c < 0 || c > 255 {
			return errf("ok_exit_codes: %d is not an exit code", c)
		}
	}
	if a.Timeout != "" {
		d, err := units.ParseDuration(a.Timeout)
		if err != nil {
			return errf("timeout: %v", err)
		}
		if d < time.Second || d > MaxAnalyzerTimeout {
			return errf("timeout %s is outside 1s to %s", d, MaxAnalyzerTimeout)
		}
	}
	if a.Memory != "" {
		if _, err := units.ParseBytes(a.Memory); err != nil {
			return errf("memory: %v", err)
		}
	}
	if a.TmpSize != "" {
		n, err := units.ParseBytes(a.TmpSize)
		if err != nil {
			return errf("tmp_size: %v", err)
		}
		if n < sandbox.MinTmpfsBytes || n > sandbox.MaxTmpfsBytes {
			return errf("tmp_size %s is outside %s to %s", a.TmpSize, units.FormatBytes(sandbox.MinTmpfsBytes), units.FormatBytes(sandbox.MaxTmpfsBytes))
		}
	}
	if len(a.Env) > MaxEnv {
		return errf("more than %d environment variables", MaxEnv)
	}
	for _, k := range slices.Sorted(maps.Keys(a.Env)) {
		if v := a.Env[k]; !envKeyRE.MatchString(k) || len(v) > MaxCommandArgBytes || strings.ContainsRune(v, 0) {
			return errf("environment variable %q is not valid", k)
		}
	}
	if len(a.Image) > 256 || len(a.InformationURI) > 2048 {
		return errf("image or information_uri too long")
	}
	return nil
}

// usesFiles reports whether the command is given the target files.
func (a Analyzer) usesFiles() bool {
	return a.Input == InputFiles0 || a.Input == InputAsterRules || a.taintEngine() != "" || slices.Contains(a.Command, FilesPlaceholder)
}

func (a Analyzer) okExit(code int) bool {
	if len(a.OKExitCodes) == 0 {
		return code == 0 || code == 1
	}
	return slices.Contains(a.OKExitCodes, code)
}

// Builtins returns the analyzers Aster ships with, in the order they run.
// Semgrep is optional: it runs only where the image has it, and only with the
// repository's own rules (.semgrep/ or .semgrep.yml) — never `--config auto`,
// which needs the network.
func Builtins() []Analyzer {
	return []Analyzer{
		{
			Name: "gitleaks",
			// JSON, not SARIF: it carries each rule's description. Not
			// --redact: the reader keeps only RedactSecret's form of the
			// secret (first characters and length), so messages can say
			// what was found without saying it.
			// The image's copy of gitleaks' default rules (--config), so
			// that a repository's .gitleaks.toml is never read; and no
			// .gitleaksignore of the repository's is in its /work (a
			// fingerprint list that hides findings). It reads the changed
			// files only: a secret elsewhere is outside the review.
			Command: []string{"gitleaks", "dir", "--config", GitleaksConfig,
				"--report-format", "json", "--report-path", "/dev/stdout",
				"--no-banner", "--no-color", "--log-level", "error", "--exit-code", "0",
				"--max-target-megabytes", "5", "."},
			Format:         finding.FormatGitleaks,
			Severity:       finding.Error,
			SecretsOnly:    true,
			TargetsOnly:    true,
			Exclude:        []string{".gitleaksignore"},
			OKExitCodes:    []int{0},
			InformationURI: "https://github.com/gitleaks/gitleaks",
		},
		{
			Name: "shellcheck",
			// xargs takes the list from stdin, so any number of files fits;
			// each batch prints one json1 document. 123: some batch found issues.
			// Warnings and errors only: ShellCheck's info and style levels
			// (unquoted expansions, SC2086, and the like) are how a script is
			// written, not a security finding; a repository that wants them
			// sets this command with --severity=style in .aster.yml. The
			// injections they can hide (eval of an unquoted variable) are
			// Aster's own shell rules'.
			Command:        []string{"xargs", "-0", "-r", "shellcheck", "--format=json1", "--severity=warning", "--external-sources", "--"},
			Input:          InputFiles0,
			Format:         finding.FormatShellcheck,
			Files:          []string{"*.sh", "*.bash", "*.ksh", "*.bats"},
			Shells:         []string{"sh", "bash", "dash", "ksh", "bats"},
			OKExitCodes:    []int{0, 1, 123},
			InformationURI: "https://www.shellcheck.net",
		},
		taintPythonAnalyzer(),
		{
			Name:    "bandit",
			Command: []string{"xargs", "-0", "-r", "bandit", "--format", "json", "--quiet", "--"},
			Input:   InputFiles0,
			// Bandit's JSON carries each result's code excerpt: on 2,500 files
			// of two large projects (thousands of asserts in their tests) one
			// report is over the output cap. A batch of banditBatchFiles is
			// read by itself (docs/performance.md, "Gate speed").
			BatchFiles:     banditBatchFiles,
			TargetsOnly:    true,
			Format:         finding.FormatBandit,
			Files:          []string{"*.py"},
			OKExitCodes:    []int{0, 1, 123},
			InformationURI: "https://bandit.readthedocs.io",
		},
		astGrepAnalyzer(),
		taintJSAnalyzer(),
		{
			// gosec type-checks whole packages, so it is given the tree, not
			// the files; it runs when a Go file is among them. No network:
			// the image's Go toolchain, no proxy, no toolchain download.
			// G104 (an unchecked error) is a code-quality rule, and the
			// loudest: left out. Not -quiet: quiet, gosec prints no report at
			// all when it finds nothing, and an empty output is unreadable;
			// its progress log goes to stderr.
			Name: "gosec",
			// The image's warm build cache of the standard library (see
			// images/sandbox/build.sh) is copied to the writable /tmp first.
			// The sandbox has no module cache: a package whose dependencies
			// do not load is still checked, without their types, and go
			// list names it afterwards (goDepsNotice, a SARIF notice).
			Command: []string{"sh", "-c", goSecScript, "gosec", testrun.GoCacheDir, goDepsNotice,
				"-fmt", "sarif", "-exclude-generated", "-exclude=G104", "./..."},
			GoModule:       true,
			Format:         finding.FormatSARIF,
			Files:          []string{"*.go"},
			OKExitCodes:    []int{0, 1},
			Timeout:        "5m",
			Memory:         "2g",
			TmpSize:        "1g",
			Env:            map[string]string{"GOTOOLCHAIN": "local", "GOPROXY": "off", "GOFLAGS": "-buildvcs=false", "GOCACHE": "/tmp/go-cache", "GOPATH": "/tmp/go", "CGO_ENABLED": "0"},
			InformationURI: "https://github.com/securego/gosec",
		},
		{
			// Aster's own ESLint configuration (security rules only) is the
			// only one loaded: --config skips the repository's eslint.config.*
			// (which could import any code), --no-inline-config its comments.
			Name: "eslint",
			Command: []string{"xargs", "-0", "-r", "node", ESLintDir + "/node_modules/eslint/bin/eslint.js",
				"--config", ESLintDir + "/eslint.config.mjs", "--no-inline-config", "--no-warn-ignored", "--format", "json", "--"},
			Input:          InputFiles0,
			Format:         finding.FormatESLint,
			Files:          []string{"*.js", "*.cjs", "*.mjs", "*.jsx"},
			OKExitCodes:    []int{0, 1, 123},
			Timeout:        "5m",
			InformationURI: "https://github.com/eslint-community/eslint-plugin-security",
		},
		actionlintAnalyzer(),
		tfsecAnalyzer(),
		kicsAnalyzer(),
		cppcheckAnalyzer(),
		flawfinderAnalyzer(),
		{
			Name: "semgrep",
			Command: []string{"semgrep", "scan", "--config", ".semgrep", "--json", "--metrics", "off",
				"--disable-version-check", "--no-git-ignore", "--quiet", "."},
			Format:         finding.FormatSemgrep,
			Requires:       []string{"/.semgrep/**/*.yml", "/.semgrep/**/*.yaml"},
			OKExitCodes:    []int{0, 1},
			Optional:       true,
			Timeout:        "5m",
			Env:            map[string]string{"SEMGREP_SEND_METRICS": "off", "SEMGREP_ENABLE_VERSION_CHECK": "0"},
			InformationURI: "https://semgrep.dev",
		},
	}
}

// GitleaksConfig is where the image keeps gitleaks' default rules, the very
// ones built into its binary (images/sandbox/build.sh).
const GitleaksConfig = "/etc/aster/gitleaks.toml"

// banditBatchFiles is the most files one Bandit sandbox is given: about
// 15.6 MB of JSON for the densest 250 files of py2500 (sympy's tests), under the 32 MiB
// cap with room to spare, while a typical change needs one batch.
const banditBatchFiles = 250

// Lookup returns the analyzer named name from list.
func Lookup(list []Analyzer, name string) (Analyzer, bool) {
	i := slices.IndexFunc(list, func(a Analyzer) bool { return a.Name == name })
	if i < 0 {
		return Analyzer{}, false
	}
	return list[i], true
}

// Names returns the names of list.
func Names(list []Analyzer) []string {
	out := make([]string, len(list))
	for i, a := range list {
		out[i] = a.Name
	}
	return out
}

// ReadsAsCode reports whether a analyses path as code when path is among its
// targets: its Files globs match it (an analyzer without globs reads every
// file), and it looks for more than secrets. A file its run declined after
// reading its start (AnalyzerResult.Declined) is not read either.
func (a Analyzer) ReadsAsCode(path string) bool {
	if a.SecretsOnly {
		return false
	}
	globs, err := CompileGlobs(a.Files)
	if err != nil || len(globs) > 0 && !globs.Match(path) {
		return false
	}
	exclude, err := CompileGlobs(a.Exclude)
	return err == nil && !exclude.Match(path)
}
