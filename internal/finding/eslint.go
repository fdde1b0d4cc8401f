package finding

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ESLint's --format json output: one array per invocation, one entry per file.
type eslintFile struct {
	FilePath string          `json:"filePath"`
	Messages []eslintMessage `json:"messages"`
}

type eslintMessage struct {
	RuleID    *string `json:"ruleId"`
	Severity  int     `json:"severity"` // 1 warning, 2 error
	Fatal     bool    `json:"fatal"`
	Message   string  `json:"message"`
	Line      int     `json:"line"`
	Column    int     `json:"column"`
	EndLine   int     `json:"endLine"`
	EndColumn int     `json:"endColumn"`
}

// eslintCWE maps the rules of Aster's ESLint configuration (eslint-plugin-
// security and the core rules against evaluating strings) to the weakness
// each detects. ESLint itself says nothing about CWEs. Rules with no fitting
// CWE (bidi and invisible characters) are left out.
var eslintCWE = map[string]string{
	"no-eval":                                        "CWE-95",
	"no-implied-eval":                                "CWE-95",
	"no-new-func":                                    "CWE-95",
	"security/detect-eval-with-expression":           "CWE-95",
	"security/detect-child-process":                  "CWE-78",
	"security/detect-non-literal-fs-filename":        "CWE-22",
	"security/detect-non-literal-require":            "CWE-829",
	"security/detect-non-literal-regexp":             "CWE-1333",
	"security/detect-unsafe-regex":                   "CWE-1333",
	"security/detect-pseudoRandomBytes":              "CWE-338",
	"security/detect-possible-timing-attacks":        "CWE-208",
	"security/detect-no-csrf-before-method-override": "CWE-352",
	"security/detect-buffer-noassert":                "CWE-119",
	"security/detect-disable-mustache-escape":        "CWE-79",
	"security/detect-object-injection":               "CWE-1321",
	"security/detect-new-buffer":                     "CWE-908",
}

// ReadESLint reads `eslint --format json` output, one or more arrays (xargs
// runs ESLint once per batch). Severity 2 is error, 1 warning. A fatal
// message (a file ESLint could not parse) is a tool error, not a finding.
func ReadESLint(r io.Reader, opts ReadOptions) (ReadResult, error) {
	c, data, err := startRead(r, opts)
	if err != nil {
		return ReadResult{}, err
	}
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] != '[' {
		return ReadResult{}, fmt.Errorf("%w: ESLint JSON: not an array of files", ErrInvalid)
	}
	docs, err := decodeDocuments[[]eslintFile](data, "ESLint JSON")
	if err != nil {
		return ReadResult{}, err
	}
	for _, doc := range docs {
		for _, file := range doc {
			for _, m := range file.Messages {
				if m.Fatal || m.RuleID == nil || *m.RuleID == "" {
					c.toolError(file.FilePath + ":" + strconv.Itoa(m.Line) + ": " + m.Message)
					continue
				}
				f := Finding{
					RuleID:      *m.RuleID,
					Severity:    Warning,
					Path:        file.FilePath,
					StartLine:   m.Line,
					StartColumn: m.Column,
					EndLine:     m.EndLine,
					EndColumn:   m.EndColumn,
					Message:     m.Message,
					CWE:         cweList(eslintCWE[*m.RuleID]),
					HelpURI:     eslintRuleURL(*m.RuleID),
				}
				if m.Severity == 2 {
					f.Severity = Error
				}
				c.add(f)
			}
		}
	}
	return c.result(), nil
}

// eslintRuleURL is the documentation page of a core or security-plugin rule.
func eslintRuleURL(id string) string {
	if name, ok := strings.CutPrefix(id, "security/"); ok {
		return "https://github.com/eslint-community/eslint-plugin-security/blob/main/docs/rules/" + name + ".md"
	}
	if !strings.Contains(id, "/") {
		return "https://eslint.org/docs/latest/rules/" + id
	}
	return ""
}
