package finding

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// kics's JSON report (`--report-formats json`): the queries that matched,
// each with its CWE and severity, and the places it matched.
type kicsReport struct {
	Version string      `json:"kics_version"`
	Queries []kicsQuery `json:"queries"`
}

type kicsQuery struct {
	Name        string     `json:"query_name"`
	ID          string     `json:"query_id"`
	URL         string     `json:"query_url"`
	Severity    string     `json:"severity"`
	CWE         string     `json:"cwe"`
	Description string     `json:"description"`
	Files       []kicsFile `json:"files"`
}

type kicsFile struct {
	Name     string `json:"file_name"`
	Line     int    `json:"line"`
	Expected string `json:"expected_value"`
	Actual   string `json:"actual_value"`
}

// ReadKICS reads kics's JSON report. Its CRITICAL and HIGH queries are
// errors, MEDIUM warnings, LOW notes; INFO and TRACE are left out. The CWE is
// the query's own (a number in the report, not words in a message); the rule
// id is the query's id and the rule name its name.
func ReadKICS(r io.Reader, opts ReadOptions) (ReadResult, error) {
	c, data, err := startRead(r, opts)
	if err != nil {
		return ReadResult{}, err
	}
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
		return ReadResult{}, fmt.Errorf("%w: kics JSON: not an object (run kics scan --report-formats json)", ErrInvalid)
	}
	docs, err := decodeDocuments[kicsReport](data, "kics JSON")
	if err != nil {
		return ReadResult{}, err
	}
	for _, d := range docs {
		if d.Version == "" {
			return ReadResult{}, fmt.Errorf("%w: kics JSON: no kics_version (not a kics report)", ErrInvalid)
		}
		for _, q := range d.Queries {
			var sev Severity
			switch strings.ToUpper(q.Severity) {
			case "CRITICAL", "HIGH":
				sev = Error
			case "MEDIUM":
				sev = Warning
			case "LOW":
				sev = Note
			default:
				continue
			}
			var cwe []string
			if n, err := strconv.Atoi(strings.TrimPrefix(q.CWE, "CWE-")); err == nil && n > 0 {
				cwe = []string{"CWE-" + strconv.Itoa(n)}
			}
			for _, f := range q.Files {
				msg := q.Name
				if q.Description != "" {
					msg += ": " + q.Description
				}
				if f.Expected != "" && f.Actual != "" {
					msg += " (expected " + f.Expected + "; actual " + f.Actual + ")"
				}
				c.add(Finding{RuleID: q.ID, RuleName: q.Name, Severity: sev, Path: f.Name, StartLine: f.Line,
					EndLine: f.Line, Message: msg, HelpURI: q.URL, CWE: cwe})
			}
		}
	}
	return c.result(), nil
}
