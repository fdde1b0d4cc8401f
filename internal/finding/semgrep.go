package finding

import (
	"encoding/json"
	"io"
	"strings"
)

// The subset of Semgrep's --json output (semgrep-interfaces, semgrep_output_v1
// "cli_output") that Aster reads.
type semgrepOutput struct {
	Version string          `json:"version"`
	Results []semgrepResult `json:"results"`
	Errors  []semgrepError  `json:"errors"`
}

type semgrepResult struct {
	CheckID string       `json:"check_id"`
	Path    string       `json:"path"`
	Start   semgrepPos   `json:"start"`
	End     semgrepPos   `json:"end"`
	Extra   semgrepExtra `json:"extra"`
}

type semgrepPos struct {
	Line   int `json:"line"`
	Col    int `json:"col"`
	Offset int `json:"offset"`
}

type semgrepExtra struct {
	Message   string         `json:"message"`
	Severity  string         `json:"severity"`
	Metadata  map[string]any `json:"metadata"`
	Fix       *string        `json:"fix"`
	IsIgnored bool           `json:"is_ignored"`
}

type semgrepError struct {
	Code    int             `json:"code"`
	Level   string          `json:"level"`
	Type    json.RawMessage `json:"type"` // a string, or ["Kind", details...]
	Message string          `json:"message"`
	Path    string          `json:"path"`
}

// ReadSemgrep reads `semgrep --json` output. Severity ERROR (and the newer
// CRITICAL/HIGH) is error, WARNING/MEDIUM warning, INFO/LOW/INVENTORY/EXPERIMENT
// note. Results ignored with nosemgrep are counted as suppressed. A fix becomes
// a replacement of the matched range.
func ReadSemgrep(r io.Reader, opts ReadOptions) (ReadResult, error) {
	c, data, err := startRead(r, opts)
	if err != nil {
		return ReadResult{}, err
	}
	docs, err := decodeDocuments[semgrepOutput](data, "Semgrep JSON", "results")
	if err != nil {
		return ReadResult{}, err
	}
	for _, doc := range docs {
		for _, e := range doc.Errors {
			if strings.EqualFold(e.Level, "error") || e.Level == "" {
				msg := e.Message
				if e.Path != "" {
					msg = e.Path + ": " + msg
				}
				c.toolError(semgrepErrorType(e.Type) + msg)
			}
		}
		for _, res := range doc.Results {
			if res.Extra.IsIgnored {
				c.res.Suppressed++
				continue
			}
			f := Finding{
				RuleID:      res.CheckID,
				RuleName:    lastDotted(res.CheckID),
				Severity:    semgrepSeverity(res.Extra.Severity),
				Path:        res.Path,
				StartLine:   res.Start.Line,
				StartColumn: res.Start.Col,
				EndLine:     res.End.Line,
				EndColumn:   res.End.Col,
				Message:     res.Extra.Message,
				HelpURI:     semgrepHelp(res.Extra.Metadata),
				CWE:         cweList(res.Extra.Metadata["cwe"]),
			}
			if res.Extra.Fix != nil && res.Start.Line > 0 {
				f.Fix = &Fix{Description: "Semgrep autofix", Replacements: []Replacement{{
					Path: res.Path, StartLine: res.Start.Line, StartColumn: max(res.Start.Col, 1),
					EndLine: max(res.End.Line, res.Start.Line), EndColumn: max(res.End.Col, 1), Text: *res.Extra.Fix,
				}}}
			}
			c.add(f)
		}
	}
	return c.result(), nil
}

func semgrepSeverity(s string) Severity {
	switch strings.ToUpper(s) {
	case "ERROR", "CRITICAL", "HIGH":
		return Error
	case "WARNING", "MEDIUM":
		return Warning
	case "INFO", "LOW", "INVENTORY", "EXPERIMENT":
		return Note
	}
	return Warning
}

func semgrepErrorType(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil && s != "" {
		return s + ": "
	}
	var arr []json.RawMessage
	if json.Unmarshal(raw, &arr) == nil && len(arr) > 0 && json.Unmarshal(arr[0], &s) == nil && s != "" {
		return s + ": "
	}
	return ""
}

// semgrepHelp picks a documentation link from rule metadata: "source" (the
// registry page), else the first of "references".
func semgrepHelp(md map[string]any) string {
	if s, ok := md["source"].(string); ok && safeURL(s) {
		return s
	}
	switch refs := md["references"].(type) {
	case string:
		if safeURL(refs) {
			return refs
		}
	case []any:
		for _, r := range refs {
			if s, ok := r.(string); ok && safeURL(s) {
				return s
			}
		}
	}
	return ""
}

func lastDotted(id string) string {
	if i := strings.LastIndexByte(id, '.'); i >= 0 {
		return id[i+1:]
	}
	return id
}
