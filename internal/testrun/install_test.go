package testrun

import (
	"slices"
	"strings"
	"testing"
)

func TestDetectInstall(t *testing.T) {
	for _, c := range []struct {
		names     []string
		framework string
		kind      string
		argv      []string
		manifests []string
	}{
		{[]string{"package.json", "package-lock.json"}, "npm", "npm", []string{"npm", "ci", "--no-audit", "--no-fund"}, []string{"package.json", "package-lock.json"}},
		{[]string{"package.json", "npm-shrinkwrap.json"}, "npm", "npm", []string{"npm", "ci", "--no-audit", "--no-fund"}, []string{"package.json", "npm-shrinkwrap.json"}},
		{[]string{"package.json"}, "npm", "npm", []string{"npm", "install", "--no-audit", "--no-fund"}, []string{"package.json"}},
		{[]string{"go.mod", "go.sum", "package.json"}, "go", "go", []string{"go", "mod", "download", "-x"}, []string{"go.mod", "go.sum"}},
		{[]string{"requirements.txt", "pyproject.toml"}, "pytest", "pip", nil, []string{"requirements.txt", "pyproject.toml"}},
		{[]string{"pyproject.toml"}, "pytest", "pip", nil, []string{"pyproject.toml"}},
		// A custom command takes the first ecosystem the project has: Go, Python, npm.
		{[]string{"package.json", "requirements.txt"}, "custom", "pip", nil, []string{"package.json", "requirements.txt"}[1:]},
		{[]string{"sub/package.json", "package.json"}, "custom", "npm", []string{"npm", "install", "--no-audit", "--no-fund"}, []string{"package.json"}},
	} {
		in, ok := DetectInstall(c.names, c.framework, "")
		if !ok || in.Kind != c.kind || !slices.Equal(in.Manifests, c.manifests) || (c.argv != nil && !slices.Equal(in.Argv, c.argv)) {
			t.Errorf("%v %s: %+v %v", c.names, c.framework, in, ok)
		}
	}
	for _, c := range []struct {
		names     []string
		framework string
	}{
		{[]string{"go.mod"}, "go"}, // no go.sum: nothing to download
		{[]string{"test_x.py"}, "pytest"},
		{[]string{"main.sh"}, "custom"},
		{[]string{"package.json"}, "go"},
	} {
		if in, ok := DetectInstall(c.names, c.framework, ""); ok {
			t.Errorf("%v %s: detected %+v", c.names, c.framework, in)
		}
	}
	in, _ := DetectInstall([]string{"requirements.txt"}, "pytest", "svc/api")
	if got := strings.Join(in.Command(), " "); !strings.Contains(got, "/work/svc/api/.venv") || !strings.Contains(got, "pip install -r requirements.txt") {
		t.Errorf("pip command %q", got)
	}
}

func TestSetupValidated(t *testing.T) {
	in, err := Setup([]string{"sh", "-c", "make deps"}, []string{"go.mod", "go.sum", "README"})
	if err != nil || in.Kind != "custom" || !slices.Equal(in.Manifests, []string{"go.mod", "go.sum"}) {
		t.Fatalf("%+v %v", in, err)
	}
	for _, bad := range [][]string{{}, {""}, {"a\x00b"}, {strings.Repeat("x", MaxSetupArgBytes+1)}, slices.Repeat([]string{"a"}, MaxSetupArgs+1)} {
		if _, err := Setup(bad, nil); err == nil {
			t.Errorf("%.40q accepted", bad)
		}
	}
}

func TestWithInstall(t *testing.T) {
	in, _ := DetectInstall([]string{"requirements.txt"}, "pytest", "")
	p := PytestPlan().WithInstall(in, "")
	if !slices.Contains(p.Argv, "/work/.venv/bin/python") || slices.Contains(p.Argv, "python3") {
		t.Errorf("pytest argv %q", p.Argv)
	}
	if !strings.HasPrefix(p.Env["PATH"], "/work/.venv/bin:") {
		t.Errorf("PATH %q", p.Env["PATH"])
	}
	g := GoPlan().WithInstall(Install{Kind: "go"}, "mod")
	if g.Env["GOMODCACHE"] != "/work/mod/.aster/gomod" || g.Env["GOPROXY"] != "off" || g.Env["GOFLAGS"] != "-mod=mod" {
		t.Errorf("go env %v", g.Env)
	}
	env := InstallEnv("http://127.0.0.1:3128", "mod", Registries{GoProxy: "https://proxy.invalid"}, map[string]string{"GOFLAGS": "-x"})
	if env["GOMODCACHE"] != "/work/mod/.aster/gomod" || env["GOPROXY"] != "https://proxy.invalid" || env["GOFLAGS"] != "-x" || env["HTTPS_PROXY"] != "http://127.0.0.1:3128" {
		t.Errorf("install env %v", env)
	}
	if _, ok := InstallEnv("p", "", Registries{}, nil)["GOPROXY"]; ok {
		t.Error("an empty registry setting replaced the tool's default")
	}
}
