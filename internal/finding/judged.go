package finding

// Judged are the sinks a taint engine judged in its run, whether it
// reported them or found them safe: by file, line and category, whether it
// judged the call safe by the call's own arguments (a loader that builds no
// objects, a constant document) rather than for want of a source. The gate
// supersedes a rule without data flow only where the engine judged the
// same category on the same line, so a finding the engine never looked at
// stays.
type Judged map[string]map[int]map[string]bool

// MaxJudged caps the judged sites read from one run.
const MaxJudged = 200000

// Has reports whether category was judged on one of the lines from..to of
// path, and whether one such judgement was safe by the call itself.
func (j Judged) Has(path string, from, to int, category string) (judged, byCall bool) {
	lines := j[path]
	if lines == nil {
		return false, false
	}
	if to < from {
		to = from
	}
	if to > from+200 {
		to = from + 200
	}
	for l := from; l <= to; l++ {
		if b, ok := lines[l][category]; ok {
			judged = true
			byCall = byCall || b
		}
	}
	return judged, byCall
}

// readJudged reads a taint engine's "judged" invocation property:
// {"path": [[line, "category", "flow"|"call"], ...]}. Malformed entries are
// skipped; at most MaxJudged are kept.
func readJudged(p map[string]any, root string, into Judged) Judged {
	m, ok := p["judged"].(map[string]any)
	if !ok {
		return into
	}
	n := 0
	for _, lines := range into {
		for _, cats := range lines {
			n += len(cats)
		}
	}
	for path, v := range m {
		list, ok := v.([]any)
		if !ok || path == "" || len(path) > 4096 {
			continue
		}
		path = cleanPath(path, root)
		for _, e := range list {
			if n >= MaxJudged {
				return into
			}
			t, ok := e.([]any)
			if !ok || len(t) != 3 {
				continue
			}
			line, ok1 := t[0].(float64)
			cat, ok2 := t[1].(string)
			basis, ok3 := t[2].(string)
			if !ok1 || !ok2 || !ok3 || line < 1 || line > 1<<30 || cat == "" || len(cat) > 64 {
				continue
			}
			if into == nil {
				into = Judged{}
			}
			if into[path] == nil {
				into[path] = map[int]map[string]bool{}
			}
			l := int(line)
			if into[path][l] == nil {
				into[path][l] = map[string]bool{}
			}
			if _, seen := into[path][l][cat]; !seen {
				n++
			}
			into[path][l][cat] = into[path][l][cat] || basis == "call"
		}
	}
	return into
}
