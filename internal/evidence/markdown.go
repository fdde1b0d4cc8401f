package evidence

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/asterhq/aster/internal/safetext"
)

// Markdown renders the verification under a comment: the verdict, the
// command, the files the evidence added, the revision each run was on with
// its time, and the tail of the head run's output in a fence its text
// cannot close. unverified says the comment is posted without
// confirmation (the preferred mode).
func (v *Verification) Markdown(secrets []string) string {
	rd := safetext.NewRedactor(secrets)
	var b strings.Builder
	b.WriteString("\n\n---\n")
	switch v.Status {
	case Confirmed:
		b.WriteString("**Verified by running it.** ")
	case Refuted:
		b.WriteString("**Refuted by running it.** ")
	default:
		b.WriteString("**Unverified.** ")
	}
	// The reason can quote model text (a rejected path): it is sanitised
	// like a comment body, so it cannot mention, link or close anything.
	reason, _ := safetext.Sanitize(oneLine(rd.RedactString(v.Reason)), safetext.SanitizeOptions{MaxBytes: 600})
	b.WriteString(reason)
	b.WriteString("\n")
	if len(v.Argv) == 0 {
		return b.String()
	}
	fmt.Fprintf(&b, "\nCommand: %s", codeSpan(rd.RedactString(strings.Join(v.Argv, " "))))
	if len(v.Files) > 0 {
		names := make([]string, len(v.Files))
		for i, f := range v.Files {
			names[i] = codeSpan(f)
		}
		fmt.Fprintf(&b, " with %s", strings.Join(names, ", "))
	}
	b.WriteString("\n")
	for _, r := range []struct {
		side string
		run  *Run
	}{{"head", v.Head}, {"base", v.Base}} {
		if r.run == nil {
			continue
		}
		fmt.Fprintf(&b, "- %s %s: %s", r.side, codeSpan(short(r.run.Revision)), r.run.Status)
		if r.run.ExitCode >= 0 {
			fmt.Fprintf(&b, " (exit %d)", r.run.ExitCode)
		}
		fmt.Fprintf(&b, " in %.1fs\n", float64(r.run.DurationMS)/1000)
	}
	if v.Head != nil && strings.TrimSpace(v.Head.Output) != "" {
		out := excerpt(v.Head.Output, 1200)
		fmt.Fprintf(&b, "\nOutput on the head (tail):\n%s", fenced(out))
	}
	return b.String()
}

// excerpt keeps the last n bytes, whole lines, printable.
func excerpt(s string, n int) string {
	s = printable(s)
	if len(s) > n {
		s = s[len(s)-n:]
		if i := strings.IndexByte(s, '\n'); i >= 0 && i < len(s)-1 {
			s = s[i+1:]
		}
		s = strings.ToValidUTF8(s, "")
		s = "…\n" + s
	}
	return strings.TrimRight(s, "\n")
}

// printable shows control and invisible characters as [U+XXXX].
func printable(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	for _, r := range s {
		if r != '\n' && r != '\t' && (unicode.IsControl(r) || safetext.Hidden(r)) {
			fmt.Fprintf(&b, "[U+%04X]", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// fenced wraps text in a code fence longer than any backtick run in it.
func fenced(s string) string {
	f := strings.Repeat("`", max(3, longestRun(s, '`')+1))
	return f + "text\n" + s + "\n" + f + "\n"
}

// codeSpan is an inline code span its text cannot close.
func codeSpan(s string) string {
	s = oneLine(s)
	f := strings.Repeat("`", longestRun(s, '`')+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return f + s + f
}

func longestRun(s string, c byte) int {
	best, n := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n++
			best = max(best, n)
		} else {
			n = 0
		}
	}
	return best
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(printable(clip(s, 500))), " ")
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	if sha == "" {
		return "unknown"
	}
	return sha
}
