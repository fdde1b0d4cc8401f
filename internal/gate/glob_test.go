package gate

import "testing"

func TestGlob(t *testing.T) {
	cases := []struct {
		pattern string
		path    string
		want    bool
	}{
		{"*.py", "app.py", true},
		{"*.py", "a/b/app.py", true},
		{"*.py", "app.pyc", false},
		{"**/*.sh", "deploy.sh", true},
		{"**/*.sh", "scripts/ci/deploy.sh", true},
		{"scripts/*.sh", "scripts/deploy.sh", true},
		{"scripts/*.sh", "scripts/ci/deploy.sh", false},
		{"scripts/*.sh", "other/scripts/deploy.sh", false},
		{"/setup.py", "setup.py", true},
		{"/setup.py", "pkg/setup.py", false},
		{"vendor/", "vendor/github.com/x/y.go", true},
		{"vendor/", "src/vendor/x.go", true},
		{"/vendor/", "src/vendor/x.go", false},
		{"/vendor/", "vendor/x.go", true},
		{"vendor", "src/vendor/x.go", true},
		{"vendor/**", "vendor/a.go", true},
		{"docs/**/*.md", "docs/a.md", true},
		{"docs/**/*.md", "docs/x/y/a.md", true},
		{"**", "anything/at/all", true},
		{"[ab].txt", "b.txt", true},
		{"[ab].txt", "c.txt", false},
		{"*.min.js", "web/app.min.js", true},
		{"node_modules", "web/node_modules/x/index.js", true},
		{"a?c", "abc", true},
	}
	for _, c := range cases {
		g, err := CompileGlob(c.pattern)
		if err != nil {
			t.Fatalf("%q: %v", c.pattern, err)
		}
		if got := g.Match(c.path); got != c.want {
			t.Errorf("%q.Match(%q) = %v, want %v", c.pattern, c.path, got, c.want)
		}
	}
	for _, bad := range []string{"", "/", "a/../b", "[", "a//b", "x\x00"} {
		if _, err := CompileGlob(bad); err == nil {
			t.Errorf("CompileGlob(%q) accepted", bad)
		}
	}
}
