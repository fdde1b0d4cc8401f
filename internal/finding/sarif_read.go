package finding

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ReadSARIF reads a SARIF 2.1.0 log (one or more concatenated logs) written by
// any tool. Every result of kind "fail" (the default), "open" or "review" becomes a
// Finding (with an empty Path when it names no file); its severity is the result's level, else its
// rule's default level, else warning. Results with an accepted suppression are
// counted, not returned. Error-level tool execution notifications become
// ToolErrors.
func ReadSARIF(r io.Reader, opts ReadOptions) (ReadResult, error) {
	c, data, err := startRead(r, opts)
	if err != nil {
		return ReadResult{}, err
	}
	logs, err := decodeDocuments[sarifLog](data, "SARIF", "version", "runs")
	if err != nil {
		return ReadResult{}, err
	}
	for _, log := range logs {
		if log.Version != "2.1.0" {
			return ReadResult{}, fmt.Errorf("%w: SARIF version %q, want 2.1.0", ErrInvalid, clip(log.Version, 32))
		}
		for _, run := range log.Runs {
			readRun(c, &run)
		}
	}
	return c.result(), nil
}

func readRun(c *collector, run *sarifRun) {
	for _, inv := range run.Invocations {
		for _, n := range inv.ToolExecutionNotifications {
			switch n.Level {
			case "error":
				c.toolError(n.Message.Text)
			case "warning":
				if p, _, _, _, _ := firstLocation(n.Locations, run); p != "" {
					c.notice(p, n.Message.Text)
				}
			}
		}
		if st, ok := runStats(inv.Properties); ok && c.res.Stats == nil {
			c.res.Stats = &st
		}
		c.res.Judged = readJudged(inv.Properties, c.opts.Root, c.res.Judged)
	}
	rules := run.Tool.Driver.Rules
	byID := make(map[string]*sarifRule, len(rules))
	for i := range rules {
		byID[rules[i].ID] = &rules[i]
	}
	for i := range run.Results {
		res := &run.Results[i]
		switch res.Kind {
		case "", "fail", "open", "review":
		default: // pass, notApplicable, informational
			continue
		}
		if suppressed(res.Suppressions) {
			c.res.Suppressed++
			continue
		}
		rule := ruleOf(res, rules, byID)
		f := Finding{RuleID: res.RuleID}
		if f.RuleID == "" && res.Rule != nil {
			f.RuleID = res.Rule.ID
		}
		if rule != nil {
			if f.RuleID == "" {
				f.RuleID = rule.ID
			}
			f.RuleName = rule.Name
			f.HelpURI = rule.HelpURI
		}
		if lvl, ok := sarifLevel(res.Level); ok {
			f.Severity = lvl
		} else if rule != nil && rule.DefaultConfiguration != nil {
			f.Severity, _ = sarifLevel(rule.DefaultConfiguration.Level)
		}
		if f.Severity == "" {
			f.Severity = Warning
		}
		f.CWE = resultCWE(res, rule, run)
		f.Message = messageText(res.Message, rule)
		// A result without a file location is about the repository as a
		// whole; it keeps an empty Path.
		f.Path, f.StartLine, f.StartColumn, f.EndLine, f.EndColumn = firstLocation(res.Locations, run)
		f.Fix = sarifFixes(res.Fixes, run)
		f.Flow = sarifFlow(res.CodeFlows, run)
		c.add(f)
	}
}

func suppressed(ss []sarifSuppression) bool {
	for _, s := range ss {
		if s.Status == "" || s.Status == "accepted" {
			return true
		}
	}
	return false
}

func ruleOf(res *sarifResult, rules []sarifRule, byID map[string]*sarifRule) *sarifRule {
	idx := res.RuleIndex
	if idx == nil && res.Rule != nil {
		idx = res.Rule.Index
	}
	if idx != nil && *idx >= 0 && *idx < len(rules) {
		return &rules[*idx]
	}
	id := res.RuleID
	if id == "" && res.Rule != nil {
		id = res.Rule.ID
	}
	if r := byID[id]; r != nil {
		return r
	}
	// Hierarchical ids ("a/b") may name their parent rule.
	if i := strings.LastIndexByte(id, '/'); i > 0 {
		return byID[id[:i]]
	}
	return nil
}

// messageText resolves a message: its text, else the rule's message string
// named by its id, with {N} placeholders replaced by the arguments.
func messageText(m sarifMessage, rule *sarifRule) string {
	text := m.Text
	if text == "" {
		text = m.Markdown
	}
	if text == "" && m.ID != "" && rule != nil {
		if ms, ok := rule.MessageStrings[m.ID]; ok {
			text = ms.Text
		}
	}
	if text == "" && rule != nil && rule.ShortDescription != nil {
		text = rule.ShortDescription.Text
	}
	if len(m.Arguments) > 0 && strings.Contains(text, "{") {
		text = substitute(text, m.Arguments)
	}
	return text
}

// substitute replaces {N} with args[N]; "{{" and "}}" are literal braces.
func substitute(s string, args []string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case strings.HasPrefix(s[i:], "{{"):
			b.WriteByte('{')
			i++
		case strings.HasPrefix(s[i:], "}}"):
			b.WriteByte('}')
			i++
		case s[i] == '{':
			end := strings.IndexByte(s[i:], '}')
			if end > 1 {
				if n, err := strconv.Atoi(s[i+1 : i+end]); err == nil && n >= 0 && n < len(args) {
					b.WriteString(args[n])
					i += end
					continue
				}
			}
			b.WriteByte(s[i])
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

func firstLocation(locs []sarifLocation, run *sarifRun) (p string, sl, sc, el, ec int) {
	for _, l := range locs {
		pl := l.PhysicalLocation
		if pl == nil {
			continue
		}
		uri := artifactURI(pl.ArtifactLocation, run)
		if uri == "" {
			continue
		}
		if reg := pl.Region; reg != nil {
			sl, sc, el, ec = reg.StartLine, reg.StartColumn, reg.EndLine, reg.EndColumn
			if el == 0 {
				el = sl
			}
		}
		return uri, sl, sc, el, ec
	}
	return "", 0, 0, 0, 0
}

// artifactURI resolves an artifact location: its uri, or the uri of the run
// artifact it indexes, prefixed by its uriBaseId's base when that is relative.
func artifactURI(al *sarifArtifactLocation, run *sarifRun) string {
	if al == nil {
		return ""
	}
	uri, base := al.URI, al.URIBaseID
	if uri == "" && al.Index != nil && *al.Index >= 0 && *al.Index < len(run.Artifacts) {
		if a := run.Artifacts[*al.Index].Location; a != nil {
			uri, base = a.URI, a.URIBaseID
		}
	}
	if uri == "" {
		return ""
	}
	if b, ok := run.OriginalURIBaseIDs[base]; ok && b.URI != "" && !strings.Contains(uri, ":") && !strings.HasPrefix(uri, "/") {
		prefix := b.URI
		if strings.HasPrefix(prefix, "file:") || strings.HasPrefix(prefix, "/") {
			// An absolute base is the analyzer's checkout root: the uri is
			// already relative to the repository.
			return uri
		}
		return strings.TrimSuffix(prefix, "/") + "/" + uri
	}
	return uri
}

func sarifFixes(fixes []sarifFix, run *sarifRun) *Fix {
	for _, fx := range fixes {
		out := &Fix{}
		if fx.Description != nil {
			out.Description = fx.Description.Text
		}
		for _, ch := range fx.ArtifactChanges {
			p := artifactURI(&ch.ArtifactLocation, run)
			for _, rp := range ch.Replacements {
				d := rp.DeletedRegion
				if d.StartLine <= 0 {
					continue // byte-offset regions are not supported
				}
				r := Replacement{Path: p, StartLine: d.StartLine, StartColumn: max(d.StartColumn, 1), EndLine: d.EndLine, EndColumn: d.EndColumn}
				if r.EndLine == 0 {
					r.EndLine = r.StartLine
				}
				if r.EndColumn == 0 {
					r.EndColumn = r.StartColumn
				}
				if rp.InsertedContent != nil {
					r.Text = rp.InsertedContent.Text
				}
				out.Replacements = append(out.Replacements, r)
			}
		}
		if len(out.Replacements) > 0 {
			return out
		}
	}
	return nil
}

// resultCWE finds the CWEs of a result: its own CWE taxa, then its rule's
// CWE relationships (gosec), then its rule's tags ("external/cwe/cwe-89",
// GitHub's convention; Semgrep writes "CWE-89: ...").
func resultCWE(res *sarifResult, rule *sarifRule, run *sarifRun) []string {
	var out []string
	for _, t := range res.Taxa {
		if cwe := taxonCWE(t, run); cwe != "" {
			out = append(out, cwe)
		}
	}
	if rule != nil {
		for _, rel := range rule.Relationships {
			if cwe := taxonCWE(rel.Target, run); cwe != "" {
				out = append(out, cwe)
			}
		}
		if rule.Properties != nil {
			out = append(out, cweFromTags(rule.Properties.Tags)...)
		}
	}
	return normalizeCWEs(out)
}

// taxonCWE is the CWE a taxon reference names, when its taxonomy is CWE.
func taxonCWE(t sarifTaxonRef, run *sarifRun) string {
	tc := t.ToolComponent
	if tc == nil {
		return ""
	}
	name := tc.Name
	if name == "" && tc.Index != nil && *tc.Index >= 0 && *tc.Index < len(run.Taxonomies) {
		name = run.Taxonomies[*tc.Index].Name
	}
	if !strings.EqualFold(name, "CWE") {
		return ""
	}
	return NormalizeCWE(t.ID)
}

// sarifFlow reads a result's first thread flow: each step's file, line and
// message, at most MaxFlowSteps of them (the first and last halves of a
// longer one). Steps without a file take the previous step's.
func sarifFlow(flows []sarifCodeFlow, run *sarifRun) []FlowStep {
	for _, cf := range flows {
		for _, tf := range cf.ThreadFlows {
			var out []FlowStep
			prev := ""
			for _, l := range tf.Locations {
				if l.Location == nil {
					continue
				}
				st := FlowStep{Path: prev}
				if pl := l.Location.PhysicalLocation; pl != nil {
					if p := artifactURI(pl.ArtifactLocation, run); p != "" {
						st.Path = p
					}
					if pl.Region != nil && pl.Region.StartLine > 0 {
						st.Line = pl.Region.StartLine
					}
				}
				if l.Location.Message != nil {
					st.Text = l.Location.Message.Text
				}
				if st.Path == "" && st.Text == "" {
					continue
				}
				prev = st.Path
				out = append(out, st)
			}
			if len(out) == 0 {
				continue
			}
			if len(out) > MaxFlowSteps {
				out = append(out[:MaxFlowSteps/2:MaxFlowSteps/2], out[len(out)-MaxFlowSteps/2:]...)
			}
			return out
		}
	}
	return nil
}

// maxStatsPath bounds the slowest file's path taken from a tool's output.
const maxStatsPath = 4096

// runStats reads the numbers of a taint engine's invocation properties.
func runStats(p map[string]any) (RunStats, bool) {
	num := func(k string) (int64, bool) {
		f, ok := p[k].(float64)
		if !ok || f < 0 || f > 1<<50 {
			return 0, false
		}
		return int64(f), true
	}
	files, ok1 := num("files")
	ms, ok2 := num("ms")
	rss, _ := num("max_rss_kb")
	if !ok1 || !ok2 {
		return RunStats{}, false
	}
	cpu, _ := num("cpu_ms")
	st := RunStats{Files: int(files), MS: ms, MaxRSSKB: rss, CPUMS: cpu}
	// slowest: [{path, ms}] (Python) or [{file, ms}] (JavaScript), slowest first
	if sl, ok := p["slowest"].([]any); ok && len(sl) > 0 {
		if first, ok := sl[0].(map[string]any); ok {
			path, _ := first["path"].(string)
			if path == "" {
				path, _ = first["file"].(string)
			}
			if f, ok := first["ms"].(float64); ok && f >= 0 && f <= 1<<50 && path != "" && len(path) <= maxStatsPath && utf8.ValidString(path) {
				st.MaxFileMS, st.Slowest = int64(f), path
			}
		}
	}
	return st, true
}
