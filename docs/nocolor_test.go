package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every script that colours its output does so only on a terminal and never with
// NO_COLOR set: an escape sequence appears only in a script that checks both.
func TestScriptsHonourNoColor(t *testing.T) {
	escape := regexp.MustCompile(`\\033\[|\\e\[|\\x1b\[`)
	n := 0
	err := filepath.WalkDir(filepath.Join("..", "scripts"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".sh") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		s := string(b)
		if !escape.MatchString(s) {
			return nil
		}
		n++
		if !strings.Contains(s, "NO_COLOR") || !regexp.MustCompile(`\[\[ -t [12]`).MatchString(s) {
			t.Errorf("%s colours its output without checking NO_COLOR and a terminal", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Error("no script colours anything: the check found nothing to check")
	}
}
