package gate

import (
	"path"
	"regexp"
	"strings"

	"github.com/asterhq/aster/internal/finding"
)

// The analyzers of this file are optional: on an image without their tool
// (one built before they were added, or an operator's) they are skipped,
// saying so, and the files they read are named as not analysed.

// KICSDir is where the sandbox image keeps kics's Rego libraries and the
// queries Aster runs (images/sandbox/build.sh): Dockerfile and Kubernetes
// checks of high and medium severity.
const KICSDir = "/opt/aster/kics"

// actionlintAnalyzer checks GitHub Actions workflows, among them for script
// injection: a value an outsider controls (github.event.*) expanded into a
// run: script. Its ShellCheck and pyflakes passes over run: scripts are off
// (style, and the shell rules run on scripts of their own); the
// repository's .github/actionlint.yaml is not read (an empty configuration
// is given instead), so a repository cannot silence a check.
func actionlintAnalyzer() Analyzer {
	return Analyzer{
		Name: "actionlint",
		Command: []string{"sh", "-c", `: >/tmp/actionlint.yaml && exec xargs -0 -r actionlint "$@"`, "actionlint",
			"-format", "{{json .}}", "-no-color", "-shellcheck=", "-pyflakes=", "-config-file", "/tmp/actionlint.yaml", "--"},
		Input:  InputFiles0,
		Format: finding.FormatActionlint,
		Files:  []string{"/.github/workflows/*.yml", "/.github/workflows/*.yaml"},
		// 1: errors found; xargs says 123 when any batch exited 1.
		OKExitCodes:    []int{0, 1, 123},
		Optional:       true,
		InformationURI: "https://github.com/rhysd/actionlint",
	}
}

// tfsecAnalyzer checks Terraform with tfsec's built-in checks, offline (no
// module is downloaded). The repository's .tfsec/ (configuration, custom
// checks) is not read: an empty configuration and an empty check directory
// are given instead.
func tfsecAnalyzer() Analyzer {
	return Analyzer{
		Name: "tfsec",
		Command: []string{"sh", "-c", `echo '{}' >/tmp/tfsec.json && mkdir -p /tmp/tfsec-checks && exec tfsec "$@"`, "tfsec",
			"--format", "sarif", "--no-color", "--no-module-downloads", "--soft-fail", "--disable-grouping",
			"--config-file", "/tmp/tfsec.json", "--custom-check-dir", "/tmp/tfsec-checks", "."},
		Format:         finding.FormatSARIF,
		Files:          []string{"*.tf"},
		OKExitCodes:    []int{0},
		Timeout:        "5m",
		Optional:       true,
		InformationURI: "https://github.com/aquasecurity/tfsec",
	}
}

// kicsAnalyzer checks Dockerfiles and Kubernetes manifests with the kics
// queries the image carries (KICSDir). kics writes its report to a
// directory, printed afterwards: JSON, which carries each query's CWE and
// severity as fields; --ignore-on-exit results makes its exit code say only
// whether it ran.
func kicsAnalyzer() Analyzer {
	return Analyzer{
		Name: "kics",
		Command: []string{"sh", "-c", `kics "$@" >&2 && exec cat /tmp/kics/results.json`, "kics",
			"scan", "--path", "/work", "--queries-path", KICSDir + "/queries", "--libraries-path", KICSDir + "/libraries",
			"--type", "Dockerfile,Kubernetes", "--output-path", "/tmp/kics", "--output-name", "results",
			"--report-formats", "json", "--ignore-on-exit", "results", "--disable-secrets", "--no-progress",
			"--silent"},
		Format: finding.FormatKICS,
		Files: []string{"Dockerfile", "Dockerfile.*", "*.dockerfile", "*.Dockerfile",
			"*.yaml", "*.yml"},
		Sniff:          &Sniffer{Keep: kicsReads, Reason: "not a Kubernetes manifest"},
		OKExitCodes:    []int{0},
		Timeout:        "5m",
		Memory:         "1g",
		Optional:       true,
		InformationURI: "https://kics.io",
	}
}

// cppcheckAnalyzer runs cppcheck's checks for errors and warnings (buffer
// overruns, out-of-bounds access, use after free, null dereferences, leaks)
// over the C and C++ files. Inline suppressions are not honoured (no
// --inline-suppr) and no project file is read.
func cppcheckAnalyzer() Analyzer {
	return Analyzer{
		Name: "cppcheck",
		// XML, not SARIF: it carries each problem's CWE and cppcheck's
		// own severity. The file list comes NUL-separated on stdin;
		// cppcheck reads it one name a line.
		Command: []string{"sh", "-c", `tr '\0' '\n' >/tmp/cppcheck-files && exec cppcheck "$@" --file-list=/tmp/cppcheck-files 2>&1 >/dev/null`, "cppcheck",
			"--xml", "--enable=warning", "--quiet", "--max-configs=4", "--error-exitcode=0", "-j", "2"},
		Input:          InputFiles0,
		Format:         finding.FormatCppcheck,
		Files:          cFiles,
		OKExitCodes:    []int{0},
		Timeout:        "5m",
		Optional:       true,
		InformationURI: "https://cppcheck.sourceforge.io",
	}
}

// flawfinderAnalyzer runs flawfinder over the C and C++ files at risk level
// 4 and above: command execution through a shell, unbounded copies and
// formats (strcpy, sprintf, gets), format strings from variables; the
// lower levels (fixed-size buffers, rand, getenv) are mostly noise.
func flawfinderAnalyzer() Analyzer {
	return Analyzer{
		Name:           "flawfinder",
		Command:        []string{"xargs", "-0", "-r", "flawfinder", "--sarif", "--minlevel=4", "--falsepositive", "--"},
		Input:          InputFiles0,
		Format:         finding.FormatSARIF,
		Files:          cFiles,
		OKExitCodes:    []int{0},
		Timeout:        "5m",
		Optional:       true,
		InformationURI: "https://dwheeler.com/flawfinder/",
	}
}

// cFiles are the C and C++ sources and headers.
var cFiles = []string{"*.c", "*.h", "*.cc", "*.cpp", "*.cxx", "*.c++", "*.hpp", "*.hh", "*.hxx", "*.h++"}

// kubernetesKeys are the two top-level keys every Kubernetes object has.
var kubernetesKeys = [...]*regexp.Regexp{regexp.MustCompile(`(?m)^apiVersion:[ \t]*\S`), regexp.MustCompile(`(?m)^kind:[ \t]*\S`)}

// kicsReads reports whether kics, scanning for Dockerfile and Kubernetes
// problems, analyses the file: any Dockerfile, and a YAML file with
// top-level apiVersion and kind keys in its start (a workflow, a compose
// file or an application's settings are not read by those queries).
func kicsReads(name string, head []byte) bool {
	switch strings.ToLower(path.Ext(name)) {
	case ".yaml", ".yml":
		return kubernetesKeys[0].Match(head) && kubernetesKeys[1].Match(head)
	}
	return true
}
