package review

import "github.com/asterhq/aster/internal/gate"

// Dismissed is what a person dismissed on the repository, by index into a report's
// findings and model comments, with who did it.
type Dismissed struct {
	Findings map[int]string
	Comments map[int]string
}

// ApplyDismissals takes what d names out of rep: each finding is kept in the report,
// marked DismissedBy and no longer reported (counted as dismissed in the summary); each
// model comment moves to the dropped comments with the reason. The summary and the
// conclusion are counted again, so a dismissed error no longer fails the check.
func ApplyDismissals(rep *Report, d Dismissed) {
	if len(d.Findings) == 0 && len(d.Comments) == 0 {
		return
	}
	for i, by := range d.Findings {
		if i >= 0 && i < len(rep.Findings) {
			rep.Findings[i].Reported = false
			rep.Findings[i].DismissedBy = by
		}
	}
	if len(d.Comments) > 0 {
		kept := rep.Model.Comments[:0:0]
		for i, c := range rep.Model.Comments {
			if by, ok := d.Comments[i]; ok {
				rep.Model.DroppedComments = append(rep.Model.DroppedComments, DroppedComment{Path: c.Path, Line: c.Line,
					Reason: "dismissed on this repository by " + by})
				continue
			}
			kept = append(kept, c)
		}
		rep.Model.Comments = kept
	}
	rep.Summary = gate.Summarize(rep.Findings)
	if rep.Conclusion == Failure || rep.Conclusion == Success {
		if failOn, err := ParseFailOn(rep.FailOn); err == nil {
			rep.Conclusion = conclude(rep, failOn)
		}
	}
}
