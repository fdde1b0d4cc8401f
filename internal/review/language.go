package review

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// languages names the language of a file by its extension, for the files of
// a change no analyzer reads as code.
var languages = map[string]string{
	".java": "Java", ".kt": "Kotlin", ".kts": "Kotlin", ".scala": "Scala", ".groovy": "Groovy",
	".php": "PHP", ".rb": "Ruby", ".cs": "C#", ".fs": "F#", ".vb": "Visual Basic",
	".c": "C", ".h": "C/C++ header", ".cc": "C++", ".cpp": "C++", ".cxx": "C++", ".hpp": "C++", ".hh": "C++",
	".m": "Objective-C", ".mm": "Objective-C++", ".swift": "Swift", ".rs": "Rust", ".zig": "Zig",
	".go": "Go", ".py": "Python", ".pyi": "Python", ".js": "JavaScript", ".mjs": "JavaScript", ".cjs": "JavaScript",
	".jsx": "JavaScript", ".ts": "TypeScript", ".tsx": "TypeScript", ".mts": "TypeScript", ".cts": "TypeScript",
	".sh": "shell", ".bash": "shell", ".zsh": "zsh", ".fish": "fish", ".ksh": "shell", ".bats": "shell",
	".ps1": "PowerShell", ".lua": "Lua", ".pl": "Perl", ".pm": "Perl", ".r": "R", ".dart": "Dart",
	".ex": "Elixir", ".exs": "Elixir", ".erl": "Erlang", ".hs": "Haskell", ".ml": "OCaml", ".clj": "Clojure",
	".sql": "SQL", ".tf": "Terraform", ".hcl": "HCL", ".bicep": "Bicep", ".sol": "Solidity",
	".html": "HTML", ".htm": "HTML", ".vue": "Vue", ".svelte": "Svelte", ".ejs": "EJS", ".hbs": "Handlebars",
	".jinja": "Jinja", ".j2": "Jinja", ".erb": "ERB", ".jsp": "JSP",
	".yml": "YAML", ".yaml": "YAML", ".json": "JSON", ".toml": "TOML", ".xml": "XML", ".ini": "INI",
	".md": "Markdown", ".rst": "reStructuredText", ".txt": "text", ".css": "CSS", ".scss": "SCSS",
}

// Language names the language of path for a reader ("Java", "a GitHub
// Actions workflow", "Dockerfile"); "" when it is not known.
func Language(p string) string {
	base := path.Base(p)
	lower := strings.ToLower(base)
	switch {
	case lower == "dockerfile" || strings.HasPrefix(lower, "dockerfile.") || strings.HasSuffix(lower, ".dockerfile"):
		return "Dockerfile"
	case lower == "makefile" || lower == "gnumakefile":
		return "Makefile"
	case (strings.HasPrefix(p, ".github/workflows/") || strings.Contains(p, "/.github/workflows/")) &&
		(strings.HasSuffix(lower, ".yml") || strings.HasSuffix(lower, ".yaml")):
		return "GitHub Actions workflow"
	}
	return languages[strings.ToLower(path.Ext(base))]
}

// LanguageCounts names the languages of files no analyzer read, most
// files first: "no analyzer for Java ×3, Kotlin".
func LanguageCounts(files []NotAnalysedFile) string {
	n := map[string]int{}
	var langs []string
	for _, f := range files {
		if n[f.Language] == 0 {
			langs = append(langs, f.Language)
		}
		n[f.Language]++
	}
	slices.SortStableFunc(langs, func(a, b string) int { return n[b] - n[a] })
	parts := make([]string, len(langs))
	for i, l := range langs {
		parts[i] = l
		if n[l] > 1 {
			parts[i] = fmt.Sprintf("%s ×%d", l, n[l])
		}
	}
	return "no analyzer for " + strings.Join(parts, ", ")
}

// NotAnalysedText says in one line which changed files the gate did not
// analyse and why: "2 files not analysed (no analyzer for Java ×2): the
// gate says nothing about them".
func NotAnalysedText(files []NotAnalysedFile) string {
	return fmt.Sprintf("%d file%s not analysed (%s): the static gate says nothing about %s",
		len(files), plural(len(files)), LanguageCounts(files), map[bool]string{true: "it", false: "them"}[len(files) == 1])
}
