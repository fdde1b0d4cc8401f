package finding

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// The part of one match of `ast-grep scan --json=stream --include-metadata`
// that Aster reads (ast-grep 0.51: lines and columns are 0-based, the end
// column exclusive).
type astGrepMatch struct {
	File     string         `json:"file"`
	RuleID   string         `json:"ruleId"`
	Severity string         `json:"severity"`
	Message  string         `json:"message"`
	Note     *string        `json:"note"`
	Range    astGrepRange   `json:"range"`
	Metadata map[string]any `json:"metadata"`
}

type astGrepRange struct {
	Start astGrepPos `json:"start"`
	End   astGrepPos `json:"end"`
}

type astGrepPos struct {
	Line   int `json:"line"`
	Column int `json:"column"`
}

// ReadAstGrep reads ast-grep's JSON: the stream style (one match object per
// line; no output at all when nothing matched) or an array (compact and
// pretty styles), several documents in a row allowed. Severity error is
// error, warning warning, info and hint note. metadata.cwe becomes the
// finding's CWE, and its MITRE page the help link when the metadata names no
// other ("help_uri").
func ReadAstGrep(r io.Reader, opts ReadOptions) (ReadResult, error) {
	c, data, err := startRead(r, opts)
	if err != nil {
		return ReadResult{}, err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return c.result(), nil // nothing matched
	}
	docs, err := decodeDocuments[json.RawMessage](data, "ast-grep JSON")
	if err != nil {
		return ReadResult{}, err
	}
	for _, raw := range docs {
		var items []json.RawMessage
		if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '[' {
			if err := json.Unmarshal(raw, &items); err != nil {
				return ReadResult{}, fmt.Errorf("%w: ast-grep JSON: %v", ErrInvalid, err)
			}
		} else {
			items = []json.RawMessage{raw}
		}
		for _, item := range items {
			m, err := decodeAstGrepMatch(item)
			if err != nil {
				return ReadResult{}, err
			}
			c.add(astGrepFinding(m))
		}
	}
	return c.result(), nil
}

// decodeAstGrepMatch decodes one match, which must be an object with the
// fields of a scan result, so that other JSON is not read as a report.
func decodeAstGrepMatch(raw json.RawMessage) (astGrepMatch, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		return astGrepMatch{}, fmt.Errorf("%w: ast-grep JSON: a match is not an object", ErrInvalid)
	}
	for _, k := range []string{"file", "range", "ruleId"} {
		if _, ok := keys[k]; !ok {
			return astGrepMatch{}, fmt.Errorf("%w: ast-grep JSON: a match has no %q field (run ast-grep scan, not run)", ErrInvalid, k)
		}
	}
	var m astGrepMatch
	if err := json.Unmarshal(raw, &m); err != nil {
		return astGrepMatch{}, fmt.Errorf("%w: ast-grep JSON: %v", ErrInvalid, err)
	}
	return m, nil
}

func astGrepFinding(m astGrepMatch) Finding {
	f := Finding{
		RuleID:      m.RuleID,
		RuleName:    lastDotted(m.RuleID),
		Severity:    astGrepSeverity(m.Severity),
		Path:        m.File,
		StartLine:   m.Range.Start.Line + 1,
		StartColumn: m.Range.Start.Column + 1,
		EndLine:     m.Range.End.Line + 1,
		EndColumn:   m.Range.End.Column + 1,
		Message:     m.Message,
		CWE:         cweList(m.Metadata["cwe"]),
	}
	if m.Note != nil && strings.TrimSpace(*m.Note) != "" {
		f.Message = strings.TrimSpace(f.Message) + " " + strings.TrimSpace(*m.Note)
	}
	if s, ok := m.Metadata["help_uri"].(string); ok && safeURL(s) {
		f.HelpURI = s
	} else if len(f.CWE) > 0 {
		f.HelpURI = cweURL(normalizeCWEs(f.CWE)[0])
	}
	return f
}

func astGrepSeverity(s string) Severity {
	switch strings.ToLower(s) {
	case "error":
		return Error
	case "warning":
		return Warning
	case "info", "hint":
		return Note
	}
	return Warning
}
