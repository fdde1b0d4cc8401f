package review

import (
	"slices"

	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/safetext"
)

// Check-run conclusions of a review.
const (
	CheckSuccess = "success"
	CheckFailure = "failure"
	CheckNeutral = "neutral" // the review could not finish (an analyzer, the tests, the config)
)

// CheckConclusion is the check run's conclusion for the review: decided by the static
// checks and the tests against the repository's threshold, never by the model; neutral
// (grey, never a green that hides a skip) when something could not run.
func (c Conclusion) CheckConclusion() string {
	switch c {
	case Success:
		return CheckSuccess
	case Failure:
		return CheckFailure
	}
	return CheckNeutral
}

// ShortSHALen is how many hex digits of a commit id Aster shows: in posts, logs,
// errors, the CLI's tables and the bench's reports alike.
const ShortSHALen = 7

// ShortSHA is a commit id as Aster shows it (ShortSHALen digits).
func ShortSHA(sha string) string {
	if len(sha) > ShortSHALen {
		return sha[:ShortSHALen]
	}
	return sha
}

// ReportedBySeverity returns the findings reported on the change, most
// severe first and in their order within each severity, at most max of them,
// and how many more there are: what a report lists, and its "and N more".
func ReportedBySeverity(fs []gate.Marked, max int) (shown []gate.Marked, more int) {
	for _, f := range fs {
		if f.Reported {
			shown = append(shown, f)
		}
	}
	slices.SortStableFunc(shown, func(a, b gate.Marked) int { return b.Severity.Rank() - a.Severity.Rank() })
	if len(shown) > max {
		return shown[:max], len(shown) - max
	}
	return shown, 0
}

// RedactReport returns a copy of rep with every text from the repository, the analyzers
// and the model redacted by rd: what the posts render. Fingerprints are left as found, so
// a finding is recognised across runs whatever its text.
func RedactReport(rep *Report, rd *safetext.Redactor) *Report {
	r := rd.RedactString
	out := *rep
	out.Findings = slices.Clone(rep.Findings)
	for i := range out.Findings {
		out.Findings[i] = RedactFinding(out.Findings[i], rd)
	}
	out.Model.Comments = slices.Clone(rep.Model.Comments)
	for i := range out.Model.Comments {
		out.Model.Comments[i] = RedactComment(out.Model.Comments[i], rd)
	}
	out.Model.Summary, out.Model.Note = r(rep.Model.Summary), r(rep.Model.Note)
	out.Model.OmittedFiles = redactOmitted(rep.Model.OmittedFiles, rd)
	out.Analyzers = slices.Clone(rep.Analyzers)
	for i := range out.Analyzers {
		a := &out.Analyzers[i]
		a.Name, a.Version, a.Reason = r(a.Name), r(a.Version), r(a.Reason)
	}
	if t := rep.Tests; t != nil {
		tc := *t
		tc.Reason, tc.Output = r(tc.Reason), r(tc.Output)
		if in := t.Install; in != nil {
			ic := *in
			ic.Reason = r(ic.Reason)
			ic.Command = slices.Clone(ic.Command)
			for i := range ic.Command {
				ic.Command[i] = r(ic.Command[i])
			}
			ic.ErrorLines = slices.Clone(ic.ErrorLines)
			for i := range ic.ErrorLines {
				ic.ErrorLines[i] = r(ic.ErrorLines[i])
			}
			tc.Install = &ic
		}
		tc.Summary.Failures = slices.Clone(tc.Summary.Failures)
		for i := range tc.Summary.Failures {
			f := &tc.Summary.Failures[i]
			f.Suite, f.Name, f.Message = r(f.Suite), r(f.Name), r(f.Message)
		}
		out.Tests = &tc
	}
	out.Files.Omitted = redactOmitted(rep.Files.Omitted, rd)
	out.Notes = slices.Clone(rep.Notes)
	for i := range out.Notes {
		out.Notes[i] = r(out.Notes[i])
	}
	return &out
}

func redactOmitted(fs []OmittedFile, rd *safetext.Redactor) []OmittedFile {
	out := slices.Clone(fs)
	for i := range out {
		out[i].Path, out[i].Reason = rd.RedactString(out[i].Path), rd.RedactString(out[i].Reason)
	}
	return out
}

// RedactFinding is m with its texts redacted by rd.
func RedactFinding(m gate.Marked, rd *safetext.Redactor) gate.Marked {
	r := rd.RedactString
	m.Path, m.Analyzer, m.RuleID, m.Message, m.HelpURI = r(m.Path), r(m.Analyzer), r(m.RuleID), r(m.Message), r(m.HelpURI)
	if len(m.Flow) > 0 {
		m.Flow = slices.Clone(m.Flow)
		for i := range m.Flow {
			m.Flow[i].Path, m.Flow[i].Text = r(m.Flow[i].Path), r(m.Flow[i].Text)
		}
	}
	return m
}

// RedactComment is c with its texts redacted by rd.
func RedactComment(c Comment, rd *safetext.Redactor) Comment {
	c.Path, c.Body, c.Suggestion = rd.RedactString(c.Path), rd.RedactString(c.Body), rd.RedactString(c.Suggestion)
	return c
}

// NotReviewed is the report of a change that could not be reviewed at all (its base
// configuration is unusable, GitHub will not render its diff): nothing ran, the check is
// neutral, and the notes say why.
func NotReviewed(modelNote string, notes ...string) *Report {
	return &Report{
		Version: ReportVersion, Analyzers: []gate.AnalyzerResult{}, Findings: []gate.Marked{}, Superseded: []finding.Finding{}, Conclusion: Incomplete,
		Files: FilesInfo{Omitted: []OmittedFile{}}, Notes: notes, DurationsMS: map[string]int64{},
		Model: ModelReport{Status: ModelSkipped, Note: modelNote, Comments: []Comment{}, DroppedComments: []DroppedComment{}, OmittedFiles: []OmittedFile{}},
	}
}
