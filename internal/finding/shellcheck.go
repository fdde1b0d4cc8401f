package finding

import (
	"bytes"
	"io"
	"strconv"
)

// ShellCheck's json1 output: {"comments":[...]}; its older "json" format is the
// bare array.
type shellcheckOutput struct {
	Comments []shellcheckComment `json:"comments"`
}

type shellcheckComment struct {
	File      string         `json:"file"`
	Line      int            `json:"line"`
	EndLine   int            `json:"endLine"`
	Column    int            `json:"column"`
	EndColumn int            `json:"endColumn"`
	Level     string         `json:"level"`
	Code      int            `json:"code"`
	Message   string         `json:"message"`
	Fix       *shellcheckFix `json:"fix"`
}

type shellcheckFix struct {
	Replacements []shellcheckReplacement `json:"replacements"`
}

type shellcheckReplacement struct {
	Line        int    `json:"line"`
	Column      int    `json:"column"`
	EndLine     int    `json:"endLine"`
	EndColumn   int    `json:"endColumn"`
	Replacement string `json:"replacement"`
}

// ReadShellcheck reads `shellcheck -f json1` (or `-f json`) output, one or more
// documents. Levels error and warning keep their names; info and style are
// notes. Rule ids are "SC" plus the code.
func ReadShellcheck(r io.Reader, opts ReadOptions) (ReadResult, error) {
	c, data, err := startRead(r, opts)
	if err != nil {
		return ReadResult{}, err
	}
	var comments []shellcheckComment
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '[' {
		docs, err := decodeDocuments[[]shellcheckComment](data, "ShellCheck JSON")
		if err != nil {
			return ReadResult{}, err
		}
		for _, d := range docs {
			comments = append(comments, d...)
		}
	} else {
		docs, err := decodeDocuments[shellcheckOutput](data, "ShellCheck json1", "comments")
		if err != nil {
			return ReadResult{}, err
		}
		for _, d := range docs {
			comments = append(comments, d.Comments...)
		}
	}
	for _, cm := range comments {
		id := "SC" + strconv.Itoa(cm.Code)
		f := Finding{
			RuleID:      id,
			Severity:    shellcheckSeverity(cm.Level),
			Path:        cm.File,
			StartLine:   cm.Line,
			StartColumn: cm.Column,
			EndLine:     cm.EndLine,
			EndColumn:   cm.EndColumn,
			Message:     cm.Message,
			HelpURI:     "https://www.shellcheck.net/wiki/" + id,
		}
		if cm.Fix != nil && len(cm.Fix.Replacements) > 0 {
			fx := &Fix{Description: "ShellCheck fix"}
			for _, rp := range cm.Fix.Replacements {
				fx.Replacements = append(fx.Replacements, Replacement{
					Path: cm.File, StartLine: rp.Line, StartColumn: rp.Column,
					EndLine: rp.EndLine, EndColumn: rp.EndColumn, Text: rp.Replacement,
				})
			}
			f.Fix = fx
		}
		c.add(f)
	}
	return c.result(), nil
}

func shellcheckSeverity(level string) Severity {
	switch level {
	case "error":
		return Error
	case "warning":
		return Warning
	}
	return Note
}
