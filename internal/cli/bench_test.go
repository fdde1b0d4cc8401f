package cli

import (
	"bytes"
	"strings"
	"testing"
)

func TestBenchFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "--systems", "nope"},
		{"bench", "--jobs", "ruby"},
		{"bench", "--concurrency", "0"},
	} {
		var out, errb bytes.Buffer
		code := Run(t.Context(), args, IO{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }})
		if code != ExitUsage {
			t.Errorf("%v: exit %d, want %d (%s)", args, code, ExitUsage, errb.String())
		}
	}
}
