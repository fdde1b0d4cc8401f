package app

import (
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/github"
	"github.com/asterhq/aster/internal/publish"
)

// A review folded after the forge refused its inline comments names that forge.
func TestFoldedNamesTheForge(t *testing.T) {
	opts := github.PostReviewOptions{Body: "review", Comments: []publish.Comment{{Path: "a.py", Line: 3, Body: "x"}}}
	for _, c := range []struct {
		forge GitHub
		want  string
	}{{AppGitHub{}, "GitHub refused"}, {GiteaForge{}, "Gitea refused"}} {
		got := folded(opts, forgeName(c.forge))
		if !strings.Contains(got.Body, c.want) {
			t.Errorf("%T: body %q lacks %q", c.forge, got.Body, c.want)
		}
		if !got.Comments[0].BodyOnly || opts.Comments[0].BodyOnly {
			t.Errorf("%T: the folded comment must be body-only and the original untouched", c.forge)
		}
	}
}
