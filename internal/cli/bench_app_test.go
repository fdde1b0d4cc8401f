package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// aster bench app refuses, before anything starts, what it cannot run, and says how to fix it.
func TestBenchAppUsage(t *testing.T) {
	bundle := filepath.Join(t.TempDir(), "x.bundle")
	if err := os.WriteFile(bundle, []byte("not read before the checks"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"bench", "app"}, "--bundles: name the git bundles"},
		{[]string{"bench", "app", "--bundles", filepath.Join(t.TempDir(), "none.bundle")}, "is not a file"},
		{[]string{"bench", "app", "--bundles", bundle, "--prs", "0"}, `--prs: "0" is not a number from 1 to 1000`},
		{[]string{"bench", "app", "--bundles", bundle, "--files", "0"}, "--files 0: want 1 to 1000"},
		{[]string{"bench", "app", "--bundles", bundle, "--stores", "postgres"}, "--stores postgres needs --postgres URL"},
		{[]string{"bench", "app", "--bundles", bundle, "--stores", "mysql"}, `unknown store "mysql" (have sqlite, postgres)`},
		{[]string{"bench", "app", "--bundles", bundle, "--workers"}, "flag needs an argument"},
		{[]string{"bench", "app", "--bundles", bundle, "stray"}, `unexpected argument "stray": arguments for app serve go after --`},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args[2:], " "), func(t *testing.T) {
			code, stdout, stderr := run(t, c.args...)
			if code != ExitUsage || stdout != "" {
				t.Fatalf("exit %d stdout %q stderr %q; want exit 2 and nothing on stdout", code, stdout, stderr)
			}
			if !strings.Contains(stderr, c.want) {
				t.Errorf("stderr %q lacks %q", stderr, c.want)
			}
		})
	}
}
