package app

import (
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/github"
	"github.com/asterhq/aster/internal/publish"
)

// FuzzDecideThread: whatever people write in a thread, it is read without a panic, a thread
// Aster did not open is never acted on, a reader never dismisses, and every answer carries
// the marker of the comment it answers.
func FuzzDecideThread(f *testing.F) {
	id := strings.Repeat("ab", 16)
	f.Add("/aster ignore not reachable", "octocat", true, "")
	f.Add("/aster unignore", "mallory", false, "octocat")
	f.Add("  /aster ignore\n/aster unignore", "octocat", true, "aster-test[bot]")
	f.Add("/aster ignore <!-- aster:ack=1 --> @team", "x", true, "x")
	f.Fuzz(func(t *testing.T, body, author string, writer bool, resolvedBy string) {
		const bot = "aster-test[bot]"
		mk := func(first string) github.ReviewThread {
			return github.ReviewThread{ID: "T", Resolved: resolvedBy != "", ResolvedBy: resolvedBy, Comments: []github.ThreadComment{
				{ID: 1, Author: first, Body: publish.WithMarker("finding", id)},
				{ID: 2, Author: author, Body: body},
			}}
		}
		mayWrite := func(string) bool { return writer }
		present := map[string]string{id: "run.sh"}
		if author != bot {
			if dec := decideThread(mk("someone"), bot, present, mayWrite); dec != nil {
				t.Fatalf("acted on a thread a person opened: %+v", dec)
			}
		}
		dec := decideThread(mk(bot), bot, present, mayWrite)
		if dec == nil {
			return
		}
		if !writer && (dec.dismiss != nil || dec.undismiss) {
			t.Fatalf("a reader changed a dismissal: %+v", dec)
		}
		for _, a := range dec.answers {
			if a.to != 1 || a.cmd != 2 || !strings.HasSuffix(a.body, "<!-- aster:ack=2 -->") || strings.Count(a.body, "<!--") != 1 {
				t.Fatalf("answer %+v", a)
			}
		}
	})
}
