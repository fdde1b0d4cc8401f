package finding

import (
	"encoding/json"
	"io"
	"net/url"
	"slices"
	"strings"

	"github.com/asterhq/aster/internal/textclip"
)

// RunInfo describes one analyzer's run for the SARIF writer: every analyzer
// becomes one SARIF run, with an invocation that says whether it succeeded.
type RunInfo struct {
	Analyzer string
	// InformationURI is the tool's home page, when known.
	InformationURI string
	// Version is the tool's own version, when known.
	Version string
	// Succeeded is false when the analyzer failed, timed out or was skipped;
	// Message then says why.
	Succeeded bool
	Message   string
	ExitCode  *int
}

// WriteOptions tune WriteSARIF.
type WriteOptions struct {
	// ToolVersion is Aster's version, recorded on every run.
	ToolVersion string
	// Runs lists the analyzers in order; analyzers of findings not listed get a
	// run of their own after them.
	Runs []RunInfo
	// Properties, when set, returns extra properties for finding i (for
	// example whether it lies inside the diff). Keys should be namespaced.
	Properties func(i int) map[string]any
	// Suppressed, when set, returns a justification for finding i to be
	// written as an external, accepted suppression (viewers hide it; the
	// result stays in the log), or "" to leave it unsuppressed.
	Suppressed func(i int) string
	// SourceRoot, when set, is the absolute local path of the repository root,
	// recorded as the SRCROOT base of every location.
	SourceRoot string
}

// SRCROOT is the uriBaseId of every written location: the repository root.
const SRCROOT = "SRCROOT"

// WriteSARIF writes findings as a SARIF 2.1.0 log.
func WriteSARIF(w io.Writer, findings []Finding, opts WriteOptions) error {
	runs := slices.Clone(opts.Runs)
	index := map[string]int{}
	for i, r := range runs {
		index[r.Analyzer] = i
	}
	for _, f := range findings {
		if _, ok := index[f.Analyzer]; !ok {
			index[f.Analyzer] = len(runs)
			runs = append(runs, RunInfo{Analyzer: f.Analyzer, Succeeded: true})
		}
	}
	log := sarifLog{Schema: SARIFSchemaURI, Version: "2.1.0", Runs: make([]sarifRun, len(runs))}
	ruleIndex := make([]map[string]int, len(runs))
	for i, r := range runs {
		name := r.Analyzer
		if name == "" {
			name = "unknown"
		}
		inv := sarifInvocation{ExecutionSuccessful: r.Succeeded, ExitCode: r.ExitCode}
		if r.Message != "" {
			level := "note"
			if !r.Succeeded {
				level = "error"
			}
			inv.ToolExecutionNotifications = []sarifNotification{{Level: level, Message: sarifMessage{Text: sentence(r.Message)}}}
		}
		log.Runs[i] = sarifRun{
			Tool: sarifTool{Driver: sarifComponent{
				Name:           name,
				Version:        clip(textclip.OneLine(r.Version, 0), 64),
				InformationURI: absoluteURL(r.InformationURI),
				Rules:          []sarifRule{},
			}},
			Invocations: []sarifInvocation{inv},
			Results:     []sarifResult{},
			ColumnKind:  "unicodeCodePoints",
			Properties:  map[string]any{"aster": map[string]any{"version": opts.ToolVersion}},
		}
		if opts.SourceRoot != "" && strings.HasPrefix(opts.SourceRoot, "/") {
			u := url.URL{Scheme: "file", Path: strings.TrimSuffix(opts.SourceRoot, "/") + "/"}
			log.Runs[i].OriginalURIBaseIDs = map[string]sarifArtifactLocation{SRCROOT: {URI: u.String()}}
		}
		ruleIndex[i] = map[string]int{}
	}
	for i, f := range findings {
		ri := index[f.Analyzer]
		run := &log.Runs[ri]
		id := f.RuleID
		if id == "" {
			id = "unknown"
		}
		ruleIdx, ok := ruleIndex[ri][id]
		if !ok {
			ruleIdx = len(run.Tool.Driver.Rules)
			ruleIndex[ri][id] = ruleIdx
			rule := sarifRule{ID: id, HelpURI: absoluteURL(f.HelpURI)}
			if f.RuleName != "" && isPascalish(f.RuleName) {
				rule.Name = f.RuleName
			}
			rule.ShortDescription = &sarifMessage{Text: sentence(ruleSummary(f))}
			if len(f.CWE) > 0 {
				rule.Properties = &sarifRuleProperties{Tags: cweTags(f.CWE)}
			}
			run.Tool.Driver.Rules = append(run.Tool.Driver.Rules, rule)
		}
		res := sarifResult{
			RuleID:    id,
			RuleIndex: &ruleIdx,
			Level:     string(f.Severity),
			Message:   sarifMessage{Text: sentence(f.Message)},
		}
		if f.Path != "" {
			loc := sarifPhysicalLocation{ArtifactLocation: artifactLocation(f.Path)}
			if f.StartLine > 0 {
				loc.Region = &sarifRegion{StartLine: f.StartLine, EndLine: max(f.EndLine, f.StartLine)}
				if f.StartColumn > 0 {
					loc.Region.StartColumn = f.StartColumn
					if f.EndColumn > 0 {
						loc.Region.EndColumn = f.EndColumn
					}
				}
			}
			res.Locations = []sarifLocation{{PhysicalLocation: &loc}}
		}
		if f.Fingerprint != "" {
			res.PartialFingerprints = map[string]string{"asterFingerprint/v2": f.Fingerprint}
		}
		if f.Fix != nil && len(f.Fix.Replacements) > 0 {
			res.Fixes = []sarifFix{writeFix(f.Fix)}
		}
		if len(f.Flow) > 0 {
			res.CodeFlows = []sarifCodeFlow{writeFlow(f.Flow)}
		}
		if opts.Suppressed != nil {
			if j := opts.Suppressed(i); j != "" {
				res.Suppressions = []sarifSuppression{{Kind: "external", Status: "accepted", Justification: j}}
			}
		}
		if opts.Properties != nil {
			if p := opts.Properties(i); len(p) > 0 {
				res.Properties = p
			}
		}
		run.Results = append(run.Results, res)
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(log)
}

func writeFix(fx *Fix) sarifFix {
	out := sarifFix{}
	if fx.Description != "" {
		out.Description = &sarifMessage{Text: sentence(fx.Description)}
	}
	byPath := map[string]int{}
	for _, r := range fx.Replacements {
		i, ok := byPath[r.Path]
		if !ok {
			i = len(out.ArtifactChanges)
			byPath[r.Path] = i
			out.ArtifactChanges = append(out.ArtifactChanges, sarifArtifactChange{ArtifactLocation: *artifactLocation(r.Path)})
		}
		rep := sarifReplacement{DeletedRegion: sarifRegion{StartLine: r.StartLine, StartColumn: r.StartColumn, EndLine: r.EndLine, EndColumn: r.EndColumn}}
		rep.InsertedContent = &sarifArtifactContent{Text: r.Text}
		out.ArtifactChanges[i].Replacements = append(out.ArtifactChanges[i].Replacements, rep)
	}
	return out
}

// writeFlow writes a finding's flow as one thread flow, source first.
func writeFlow(flow []FlowStep) sarifCodeFlow {
	tf := sarifThreadFlow{Locations: make([]sarifThreadFlowLocation, 0, len(flow))}
	for _, st := range flow {
		loc := &sarifFlowLocation{}
		if st.Path != "" {
			pl := &sarifPhysicalLocation{ArtifactLocation: artifactLocation(st.Path)}
			if st.Line > 0 {
				pl.Region = &sarifRegion{StartLine: st.Line}
			}
			loc.PhysicalLocation = pl
		}
		if st.Text != "" {
			loc.Message = &sarifMessage{Text: st.Text}
		}
		tf.Locations = append(tf.Locations, sarifThreadFlowLocation{Location: loc})
	}
	return sarifCodeFlow{ThreadFlows: []sarifThreadFlow{tf}}
}

// artifactLocation locates a path: relative to SRCROOT, or as a file:// URI
// when an analyzer reported an absolute path outside the repository.
func artifactLocation(p string) *sarifArtifactLocation {
	if strings.HasPrefix(p, "/") {
		return &sarifArtifactLocation{URI: "file://" + pathURI(p)}
	}
	return &sarifArtifactLocation{URI: pathURI(p), URIBaseID: SRCROOT}
}

// pathURI percent-encodes a relative path as a URI reference.
func pathURI(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}

func absoluteURL(s string) string {
	if safeURL(s) {
		return s
	}
	return ""
}

// sentence ends a message with a period, as SARIF's guidance asks.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return "No message."
	}
	switch s[len(s)-1] {
	case '.', '!', '?':
		return s
	}
	return s + "."
}

func ruleSummary(f Finding) string {
	if f.RuleName != "" {
		return f.RuleName
	}
	return f.RuleID
}

// isPascalish reports whether a rule name is a single identifier-like word, as
// SARIF recommends for rule.name; other names go to the description only.
func isPascalish(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}
