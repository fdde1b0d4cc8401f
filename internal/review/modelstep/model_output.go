package modelstep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/asterhq/aster/internal/evidence"
	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/review"
	"github.com/asterhq/aster/internal/safetext"
	"github.com/asterhq/aster/internal/textclip"
)

// ReviewSchema is the JSON Schema the model must answer with. It is strict
// mode compatible (every property required, nothing else allowed); optional
// values are nullable.
func ReviewSchema() map[string]any {
	nullable := func(t string) map[string]any { return map[string]any{"type": []any{t, "null"}} }
	return map[string]any{
		"type":                 "object",
		"additionalProperties": false,
		"required":             []any{"summary", "comments"},
		"properties": map[string]any{
			"summary": map[string]any{"type": "string", "description": "two to five sentences: what the change does, its main risks"},
			"comments": map[string]any{
				"type": "array",
				"items": map[string]any{
					"type":                 "object",
					"additionalProperties": false,
					"required":             []any{"path", "line", "end_line", "quote", "severity", "body", "suggestion", "evidence"},
					"properties": map[string]any{
						"path":       map[string]any{"type": "string", "description": "file path exactly as after FILE"},
						"line":       map[string]any{"type": "integer", "description": "new-side line number shown in the diff"},
						"end_line":   nullable("integer"),
						"quote":      map[string]any{"type": "string", "description": "the code on that line, exactly as shown"},
						"severity":   map[string]any{"type": "string", "enum": []any{"error", "warning", "note"}},
						"body":       map[string]any{"type": "string"},
						"suggestion": nullable("string"),
						"evidence":   evidenceSchema(),
					},
				},
			},
		},
	}
}

// modelComment is one comment as the model wrote it, validated field by field.
type modelComment struct {
	Path       string
	Line       int
	EndLine    int
	Quote      string
	Severity   finding.Severity
	Body       string
	Suggestion string
	// Evidence is the comment's test of its claim; EvidenceErr says why
	// the evidence given was rejected (the comment itself stands).
	Evidence    *evidence.Evidence
	EvidenceErr string
}

// modelOutput is a parsed answer. Comments that failed validation are in
// Invalid with the reason; the rest of the answer stands.
type modelOutput struct {
	Summary  string
	Comments []modelComment
	Invalid  []review.DroppedComment
	// Ignored names top-level fields outside the schema (an "event" asking
	// to approve, say): they are never acted on.
	Ignored []string
	// Incomplete is set when the JSON ended early (a truncated answer): the
	// comments read before the cut are kept.
	Incomplete bool
}

// Limits on what one answer may hold; the response itself is capped by the
// provider's HTTP client.
const (
	maxModelComments     = 500
	maxModelFieldBytes   = 64 << 10
	maxModelLine         = 10_000_000
	maxModelIgnoredNames = 10
)

var errNotJSONObject = errors.New("the answer is not a JSON object")

// parseModelOutput reads the model's answer strictly but per comment: the
// top level must be a JSON object (optionally inside a ```json fence), each
// comment is validated on its own, and a comment that fails is dropped with
// its reason while the others stand. A truncated answer keeps the comments
// that were complete. It fails only when nothing usable can be read.
func parseModelOutput(text string) (modelOutput, error) {
	var out modelOutput
	body := strings.TrimSpace(stripJSONFence(text))
	if !strings.HasPrefix(body, "{") {
		return out, errNotJSONObject
	}
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil { // '{'
		return out, errNotJSONObject
	}
	sawSummary, sawComments := false, false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			out.Incomplete = true
			break
		}
		key, ok := tok.(string)
		if !ok {
			return out, errNotJSONObject
		}
		switch key {
		case "summary":
			var s any
			if err := dec.Decode(&s); err != nil {
				out.Incomplete = true
				return finish(out, sawSummary, sawComments)
			}
			str, ok := s.(string)
			if !ok {
				return out, fmt.Errorf("summary is %s, not a string", jsonKind(s))
			}
			out.Summary, sawSummary = capField(str), true
		case "comments":
			sawComments = true
			if err := readComments(dec, &out); err != nil {
				if errors.Is(err, errIncomplete) {
					out.Incomplete = true
					return finish(out, sawSummary, sawComments)
				}
				return out, err
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				out.Incomplete = true
				return finish(out, sawSummary, sawComments)
			}
			if len(out.Ignored) < maxModelIgnoredNames {
				out.Ignored = append(out.Ignored, safetext.Cut(key, 40))
			}
		}
	}
	if _, err := dec.Token(); err != nil && !out.Incomplete { // '}'
		out.Incomplete = true
	}
	return finish(out, sawSummary, sawComments)
}

func finish(out modelOutput, sawSummary, sawComments bool) (modelOutput, error) {
	if !sawSummary && !sawComments {
		if out.Incomplete {
			return out, errors.New("the answer ended before any field")
		}
		return out, errors.New(`the answer has neither "summary" nor "comments"`)
	}
	return out, nil
}

var errIncomplete = errors.New("incomplete")

func readComments(dec *json.Decoder, out *modelOutput) error {
	tok, err := dec.Token()
	if err != nil {
		return errIncomplete
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		if tok == nil { // "comments": null
			return nil
		}
		return fmt.Errorf("comments is not an array")
	}
	for i := 0; dec.More(); i++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return errIncomplete
		}
		if i >= maxModelComments {
			continue
		}
		c, reason := validateComment(raw)
		if reason != "" {
			out.Invalid = append(out.Invalid, review.DroppedComment{Path: safetext.Cut(c.Path, 300), Line: c.Line, Reason: reason})
			continue
		}
		out.Comments = append(out.Comments, c)
	}
	if _, err := dec.Token(); err != nil { // ']'
		return errIncomplete
	}
	return nil
}

// validateComment checks one comment's fields; unknown fields are ignored.
func validateComment(raw json.RawMessage) (modelComment, string) {
	var c modelComment
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil || m == nil {
		return c, "invalid: not a JSON object"
	}
	str := func(k string, required bool) (string, string) {
		v, ok := m[k]
		if !ok || v == nil {
			if required {
				return "", "invalid: missing " + k
			}
			return "", ""
		}
		s, ok := v.(string)
		if !ok {
			return "", fmt.Sprintf("invalid: %s is %s, not a string", k, jsonKind(v))
		}
		return capField(s), ""
	}
	num := func(k string, required bool) (int, string) {
		v, ok := m[k]
		if !ok || v == nil {
			if required {
				return 0, "invalid: missing " + k
			}
			return 0, ""
		}
		n, ok := v.(json.Number)
		if !ok {
			return 0, fmt.Sprintf("invalid: %s is %s, not a number", k, jsonKind(v))
		}
		i, err := n.Int64()
		if err != nil || i < 1 || i > maxModelLine {
			return 0, fmt.Sprintf("invalid: %s %s is not a line number", k, safetext.Cut(n.String(), 20))
		}
		return int(i), ""
	}
	var why string
	if c.Path, why = str("path", true); why != "" {
		return c, why
	}
	if c.Line, why = num("line", true); why != "" {
		return c, why
	}
	if c.EndLine, why = num("end_line", false); why != "" {
		return c, why
	}
	if c.EndLine != 0 && c.EndLine < c.Line {
		return c, fmt.Sprintf("invalid: end_line %d is before line %d", c.EndLine, c.Line)
	}
	if c.Quote, why = str("quote", false); why != "" {
		return c, why
	}
	sev, why := str("severity", true)
	if why != "" {
		return c, why
	}
	if c.Severity, _ = finding.ParseSeverity(sev); c.Severity == "" {
		return c, "invalid: severity " + safetext.Cut(sev, 20)
	}
	if c.Body, why = str("body", true); why != "" {
		return c, why
	}
	if strings.TrimSpace(c.Body) == "" {
		return c, "invalid: empty body"
	}
	if c.Suggestion, why = str("suggestion", false); why != "" {
		return c, why
	}
	if ev, err := evidence.FromJSON(m["evidence"]); err != nil {
		c.EvidenceErr = textclip.OneLine(err.Error(), 300)
	} else {
		c.Evidence = ev
	}
	return c, ""
}

// stripJSONFence accepts an answer wrapped in ```json ... ``` (models do it
// even when asked not to).
func stripJSONFence(s string) string {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "```") {
		return s
	}
	nl := strings.IndexByte(t, '\n')
	if nl < 0 {
		return s
	}
	t = t[nl+1:]
	if i := strings.LastIndex(t, "```"); i >= 0 {
		t = t[:i]
	}
	return t
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return "something else"
}

func capField(s string) string { return safetext.Cut(s, maxModelFieldBytes) }
