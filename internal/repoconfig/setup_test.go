package repoconfig

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParseTestsSetup(t *testing.T) {
	for _, c := range []struct {
		yaml string
		want []string
		none bool // setup: [] turns the install phase off
	}{
		{"tests:\n  setup: make deps\n", []string{"sh", "-c", "make deps"}, false},
		{"tests:\n  setup: [npm, ci, --ignore-scripts]\n", []string{"npm", "ci", "--ignore-scripts"}, false},
		{"tests:\n  setup: []\n", []string{}, true},
		{"tests:\n  command: [go, test, ./...]\n", nil, false},
	} {
		cfg, err := Parse([]byte(c.yaml))
		if err != nil {
			t.Fatalf("%q: %v", c.yaml, err)
		}
		got := []string(cfg.Tests.Setup)
		if !slices.Equal(got, c.want) || (got != nil) != (c.want != nil) {
			t.Errorf("%q: setup %#v, want %#v", c.yaml, got, c.want)
		}
		if c.none && (got == nil || len(got) != 0) {
			t.Errorf("%q: [] must be an empty, present setup", c.yaml)
		}
	}
	for _, bad := range []string{
		"tests:\n  setup: [\"\"]\n",
		"tests:\n  setup: [" + strings.Repeat("a,", 65) + "a]\n",
		"tests:\n  setup: [\"" + strings.Repeat("x", 5000) + "\"]\n",
		"tests:\n  setup: {a: b}\n",
	} {
		if _, err := Parse([]byte(bad)); !errors.Is(err, ErrInvalid) {
			t.Errorf("%.60q: err = %v, want ErrInvalid", bad, err)
		}
	}
}
