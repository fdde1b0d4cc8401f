package modelstep

import "github.com/asterhq/aster/internal/evidence"

// evidenceSchema is the comment's evidence in the strict answer schema:
// null, or files (as path/content pairs: strict mode has no free-form
// maps), the command and what it should do if the claim is true.
func evidenceSchema() map[string]any {
	return map[string]any{"anyOf": []any{
		map[string]any{"type": "null"},
		map[string]any{
			"type":                 "object",
			"additionalProperties": false,
			"required":             []any{"files", "argv", "expect"},
			"properties": map[string]any{
				"files": map[string]any{"type": "array", "description": "test files added over the head revision, paths relative to the repository root",
					"items": map[string]any{"type": "object", "additionalProperties": false, "required": []any{"path", "content"},
						"properties": map[string]any{"path": map[string]any{"type": "string"}, "content": map[string]any{"type": "string"}}}},
				"argv":   map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "the command, run in the repository root with no network"},
				"expect": map[string]any{"type": "string", "enum": []any{"fail", "pass"}, "description": "what the command does if the comment is right"},
			},
		},
	}}
}

// rejectedEvidence records evidence that failed validation: it never ran.
func rejectedEvidence(why string) *evidence.Verification {
	if why == "" {
		return nil
	}
	return &evidence.Verification{Status: evidence.Inconclusive, Reason: "evidence rejected: " + why, Argv: []string{}, Files: []string{}}
}
