package finding

import (
	"io"
	"strings"
)

// Bandit's -f json output.
type banditOutput struct {
	Errors  []banditError  `json:"errors"`
	Results []banditResult `json:"results"`
}

type banditError struct {
	Filename string `json:"filename"`
	Reason   string `json:"reason"`
}

type banditResult struct {
	Filename        string `json:"filename"`
	LineNumber      int    `json:"line_number"`
	ColOffset       *int   `json:"col_offset"`     // 0-based; bandit >= 1.7.3
	EndColOffset    *int   `json:"end_col_offset"` // bandit >= 1.7.5
	IssueSeverity   string `json:"issue_severity"`
	IssueConfidence string `json:"issue_confidence"`
	IssueText       string `json:"issue_text"`
	TestID          string `json:"test_id"`
	TestName        string `json:"test_name"`
	MoreInfo        string `json:"more_info"`
	// IssueCWE is {"id": 89, "link": "..."} (bandit >= 1.7.5); id 0 means none.
	IssueCWE *struct {
		ID any `json:"id"`
	} `json:"issue_cwe"`
}

// ReadBandit reads `bandit -f json` output, one or more documents. Severity
// HIGH is error, MEDIUM warning, LOW note (weak-hash tests: warning at most);
// a LOW-confidence result is lowered one step, since Bandit itself says it is
// likely noise.
func ReadBandit(r io.Reader, opts ReadOptions) (ReadResult, error) {
	c, data, err := startRead(r, opts)
	if err != nil {
		return ReadResult{}, err
	}
	docs, err := decodeDocuments[banditOutput](data, "Bandit JSON", "results")
	if err != nil {
		return ReadResult{}, err
	}
	for _, doc := range docs {
		for _, e := range doc.Errors {
			c.toolError(e.Filename + ": " + e.Reason)
		}
		for _, res := range doc.Results {
			f := Finding{
				RuleID:    res.TestID,
				RuleName:  res.TestName,
				Severity:  banditSeverity(res.TestID, res.IssueSeverity, res.IssueConfidence),
				Path:      res.Filename,
				StartLine: res.LineNumber,
				EndLine:   res.LineNumber,
				Message:   banditMessage(res.TestID, res.IssueText),
				HelpURI:   res.MoreInfo,
			}
			if res.IssueCWE != nil {
				switch id := res.IssueCWE.ID.(type) {
				case float64:
					f.CWE = cweList(id)
				case string:
					f.CWE = cweList(id)
				}
			}
			// line_range is not used: Bandit pads it with following lines.
			if res.ColOffset != nil && *res.ColOffset >= 0 {
				f.StartColumn = *res.ColOffset + 1
				if res.EndColOffset != nil && *res.EndColOffset > *res.ColOffset && f.EndLine == f.StartLine {
					f.EndColumn = *res.EndColOffset + 1
				}
			}
			c.add(f)
		}
	}
	return c.result(), nil
}

// weakHashTests are Bandit's tests of MD5/SHA-1 use (B303, B324). Bandit
// rates B324 HIGH, but whether a digest protects anything depends on its use
// (a cache key, an HMAC, a protocol that requires it, such as HTTP digest
// auth): Aster reports them as warnings at most, as its own weak-hash rules.
var weakHashTests = map[string]bool{"B303": true, "B324": true}

func banditSeverity(test, sev, confidence string) Severity {
	s := Warning
	switch strings.ToUpper(sev) {
	case "HIGH":
		s = Error
	case "LOW":
		s = Note
	}
	if s == Error && weakHashTests[test] {
		s = Warning
	}
	if strings.EqualFold(confidence, "LOW") {
		switch s {
		case Error:
			s = Warning
		case Warning:
			s = Note
		}
	}
	return s
}

// banditMessage keeps secrets out of messages: Bandit 1.7's hard-coded
// password rules (B105-B107) quote the value they found, and a message goes
// into reports and pull-request comments.
func banditMessage(id, text string) string {
	switch id {
	case "B105", "B106", "B107":
		if i := strings.Index(text, ": "); i >= 0 {
			return text[:i] + " (value redacted)"
		}
		return "Possible hardcoded password (value redacted)"
	}
	return text
}
