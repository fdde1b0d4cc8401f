package finding

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
)

// actionlint's `-format '{{json .}}'` output: one JSON array of errors per
// invocation (xargs may run several).
type actionlintError struct {
	Message   string `json:"message"`
	Filepath  string `json:"filepath"`
	Line      int    `json:"line"`
	Column    int    `json:"column"`
	EndColumn int    `json:"end_column"`
	Kind      string `json:"kind"`
}

// actionlintUntrusted is how actionlint's expression check words a value an
// outsider controls (a pull request's title, an issue's body, a branch name)
// expanded into an inline script: `"github.event.issue.title" is potentially
// untrusted. avoid using it directly in inline scripts...`.
var actionlintUntrusted = regexp.MustCompile(`\bis potentially untrusted\b`)

// actionlintCredentials is its check of hard-coded container credentials.
const actionlintCredentials = "credentials"

// ReadActionlint reads `actionlint -format '{{json .}}'` output. An
// untrusted value expanded into a script is an injection into the runner's
// shell (CWE-78) or the script's language (CWE-94), an error; hard-coded
// credentials are a warning (CWE-798); the rest of what actionlint checks
// (syntax, types, unknown actions or inputs) makes a workflow fail, not a
// security finding, and is a note. Rule ids are "actionlint." plus the kind.
func ReadActionlint(r io.Reader, opts ReadOptions) (ReadResult, error) {
	c, data, err := startRead(r, opts)
	if err != nil {
		return ReadResult{}, err
	}
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '[' {
		return ReadResult{}, fmt.Errorf("%w: actionlint JSON: not an array (run actionlint -format '{{json .}}')", ErrInvalid)
	}
	docs, err := decodeDocuments[[]actionlintError](data, "actionlint JSON")
	if err != nil {
		return ReadResult{}, err
	}
	for _, d := range docs {
		for _, e := range d {
			f := Finding{
				RuleID:      "actionlint." + e.Kind,
				Severity:    Note,
				Path:        e.Filepath,
				StartLine:   e.Line,
				StartColumn: e.Column,
				EndLine:     e.Line,
				EndColumn:   e.EndColumn,
				Message:     e.Message,
				HelpURI:     "https://github.com/rhysd/actionlint/blob/main/docs/checks.md",
			}
			switch {
			case e.Kind == "expression" && actionlintUntrusted.MatchString(e.Message):
				f.RuleID = "actionlint.untrusted-input"
				f.Severity = Error
				f.CWE = []string{"CWE-78", "CWE-94"}
			case e.Kind == actionlintCredentials:
				f.Severity = Warning
				f.CWE = []string{"CWE-798"}
			}
			c.add(f)
		}
	}
	return c.result(), nil
}
