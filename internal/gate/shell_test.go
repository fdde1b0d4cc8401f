package gate

import (
	"testing"

	"github.com/asterhq/aster/internal/finding"
)

func TestShellOf(t *testing.T) {
	for _, c := range []struct{ name, head, want string }{
		{"a.sh", "#!/bin/sh\necho", "sh"},
		{"a.sh", "#!/bin/bash -e\n", "bash"},
		{"a.sh", "#!/usr/bin/env zsh\n", "zsh"},
		{"a.sh", "#!/usr/bin/env -S zsh -f\n", "zsh"},
		{"a.sh", "#!/bin/zsh\n", "zsh"},
		{"a.sh", "#! /usr/local/bin/fish\n", "fish"},
		{"a.sh", "#!/usr/bin/env bash5\n", "bash"},
		{"a.sh", "#compdef wd\n", "zsh"},
		{"a.sh", "#autoload\n", "zsh"},
		{"a.sh", "# helpers\n# shellcheck shell=zsh\nfoo() {}\n", "zsh"},
		{"a.zsh", "#!/bin/bash\n# shellcheck shell=bash\n", "bash"},
		{"a.sh", "# sourced by the others\nfoo() {}\n", ""},
		{"a.zsh", "foo() {}\n", "zsh"},
		{"a.fish", "", "fish"},
		{"a.bash", "", "bash"},
		{"a.bats", "", "bash"},
		{"a.ksh", "", "ksh"},
		{"a.sh", "", ""},
	} {
		if got := ShellOf(c.name, []byte(c.head)); got != c.want {
			t.Errorf("%s %q: %q, want %q", c.name, c.head, got, c.want)
		}
	}
}

func TestDropUnjudged(t *testing.T) {
	f := func(path, rule string) finding.Finding {
		return finding.Finding{Analyzer: "shellcheck", Path: path, RuleID: rule}
	}
	fs := []finding.Finding{
		f("z.sh", "SC1071"),
		f("lib.sh", "SC1073"), f("lib.sh", "SC1072"), f("lib.sh", "SC2086"), // undeclared, does not parse
		f("bad.sh", "SC1073"), f("bad.sh", "SC2086"), // declares sh: a real parse error, kept
		f("ok.sh", "SC2086"),
	}
	skipped := map[string]int{}
	out := dropUnjudged(fs, []string{"lib.sh", "ok.sh"}, skipped)
	if len(out) != 3 || out[0].Path != "bad.sh" || out[2].Path != "ok.sh" {
		t.Errorf("kept %+v", out)
	}
	if skipped[SkipUnsupportedShell] != 1 || skipped[SkipUnparsedShell] != 1 {
		t.Errorf("skipped %v", skipped)
	}
	if got := skippedText(map[string]int{"zsh": 3, "fish": 1}); got != "fish (1 file), zsh (3 files)" {
		t.Errorf("skippedText: %q", got)
	}
}
