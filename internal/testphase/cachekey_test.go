package testphase

import (
	"archive/tar"
	"bytes"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/depcache"
	"github.com/asterhq/aster/internal/testrun"
)

// file is one entry of a test tree: a body and, for a script, its mode.
type file struct {
	body string
	mode int64
}

func treeTar(t testing.TB, files map[string]file) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		f := files[name]
		mode := f.mode
		if mode == 0 {
			mode = 0o644
		}
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: int64(len(f.body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(f.body))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// keyOf is the cache key the Runner computes for the tree.
func keyOf(t *testing.T, files map[string]file, in testrun.Install, env map[string]string) depcache.Key {
	t.Helper()
	r := &Runner{Cache: openCache(t), Digest: digest}
	b := treeTar(t, files)
	j := Job{Image: "img", Install: &in, Env: env, Repo: "github:org/a", Scope: depcache.DefaultScope,
		Open: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }}
	k, err := r.cacheKey(t.Context(), j)
	if err != nil || k.Repo == "" {
		t.Fatalf("cache key: %v", err)
	}
	return k
}

const cleanLock = `{"lockfileVersion":3,"packages":{"":{"name":"p","dependencies":{"left-pad":"1.3.0"}},
"node_modules/left-pad":{"version":"1.3.0","resolved":"https://registry.example/left-pad/-/left-pad-1.3.0.tgz","integrity":"sha512-x"}}}`

// Issue 35: the key holds everything the install may read. For each
// install step, a change the install can see changes the key, and (where
// the install runs no code of the tree) a change it cannot see keeps it, so
// the cache still hits across commits that touch only sources.
func TestCacheKeyHoldsWhatTheInstallReads(t *testing.T) {
	// Manifests as testrun names them (before issue 35 they alone were the key).
	npmFiles := []string{"package.json", "package-lock.json", "npm-shrinkwrap.json"}
	pipFiles := []string{"requirements.txt", "pyproject.toml", "setup.py", "setup.cfg"}
	npmCI := testrun.Install{Kind: "npm", Argv: []string{"npm", "ci", "--no-audit", "--no-fund"}, Manifests: npmFiles}
	npmInstall := testrun.Install{Kind: "npm", Argv: []string{"npm", "install", "--no-audit", "--no-fund"}, Manifests: npmFiles}
	goDownload := testrun.Install{Kind: "go", Argv: []string{"go", "mod", "download", "-x"}, Manifests: []string{"go.mod", "go.sum"}}
	pipReq := testrun.Install{Kind: "pip", Argv: []string{"sh", "-c", "...", "aster-install", "/work/.venv", "-r", "requirements.txt"}, Manifests: pipFiles}
	pipDot := testrun.Install{Kind: "pip", Argv: []string{"sh", "-c", "...", "aster-install", "/work/.venv", "."}, Manifests: pipFiles}
	setup := testrun.Install{Kind: "custom", Argv: []string{"sh", "scripts/install.sh"}, Manifests: slices.Concat(npmFiles, []string{"go.mod", "go.sum"}, pipFiles)}

	npmTree := map[string]file{"package.json": {body: `{"name":"p","dependencies":{"left-pad":"1.3.0"}}`}, "package-lock.json": {body: cleanLock},
		"index.js": {body: "module.exports = 1"}, "test/a.test.js": {body: "test"}}
	goTree := map[string]file{"go.mod": {body: "module m\nrequire x v1.0.0\nreplace x => ./x\n"}, "go.sum": {body: "x v1.0.0 h1:abc\n"},
		"x/go.mod": {body: "module x\n"}, "main.go": {body: "package main"}, "main_test.go": {body: "package main"}}
	pipTree := map[string]file{"requirements.txt": {body: "# pinned\nrequests==2.32.3 \\\n    --hash=sha256:abcdef0123\nurllib3>=2 ; python_version >= \"3.8\"\n--index-url https://pypi.example/simple\n"},
		"app.py": {body: "print(1)"}, "test_app.py": {body: "def test(): pass"}}
	scriptTree := map[string]file{"scripts/install.sh": {body: "mkdir -p .aster && echo main > .aster/marker", mode: 0o755}, "package.json": {body: `{"name":"p"}`},
		"src/a.js": {body: "a"}}

	with := func(base map[string]file, name, body string) map[string]file {
		m := maps.Clone(base)
		m[name] = file{body: body, mode: base[name].mode}
		return m
	}
	cases := []struct {
		name    string
		in      testrun.Install
		base    map[string]file
		changed map[string]file
		env     map[string]string
		same    bool
	}{
		// The case: a setup command runs a script the manifests do not name.
		{"setup script", setup, scriptTree, with(scriptTree, "scripts/install.sh", "mkdir -p .aster && echo evil > .aster/marker"), nil, false},
		{"setup script mode", setup, scriptTree, map[string]file{"scripts/install.sh": {body: scriptTree["scripts/install.sh"].body, mode: 0o644}, "package.json": scriptTree["package.json"], "src/a.js": scriptTree["src/a.js"]}, nil, false},
		{"setup any file", setup, scriptTree, with(scriptTree, "src/a.js", "b"), nil, false},
		{"npm ci source only", npmCI, npmTree, with(npmTree, "index.js", "module.exports = 2"), nil, true},
		{"npm ci test only", npmCI, npmTree, with(npmTree, "test/a.test.js", "other"), nil, true},
		{"npm ci manifest", npmCI, npmTree, with(npmTree, "package.json", `{"name":"p","dependencies":{"left-pad":"1.3.1"}}`), nil, false},
		{"npm ci lockfile", npmCI, npmTree, with(npmTree, "package-lock.json", strings.Replace(cleanLock, "sha512-x", "sha512-y", 1)), nil, false},
		{"npm ci committed node_modules", npmCI, npmTree, with(npmTree, "node_modules/left-pad/index.js", "evil"), nil, false},
		{"npm lifecycle script", npmCI, with(npmTree, "package.json", `{"name":"p","scripts":{"postinstall":"node scripts/post.js"}}`),
			with(with(npmTree, "package.json", `{"name":"p","scripts":{"postinstall":"node scripts/post.js"}}`), "scripts/post.js", "evil"), nil, false},
		{"npm prepare script", npmCI, with(npmTree, "package.json", `{"name":"p","scripts":{"prepare":"x"}}`),
			with(with(npmTree, "package.json", `{"name":"p","scripts":{"prepare":"x"}}`), "index.js", "evil"), nil, false},
		{"npm dependency install script", npmCI, with(npmTree, "package-lock.json", strings.Replace(cleanLock, `"integrity"`, `"hasInstallScript":true,"integrity"`, 1)),
			with(with(npmTree, "package-lock.json", strings.Replace(cleanLock, `"integrity"`, `"hasInstallScript":true,"integrity"`, 1)), "prisma/schema.prisma", "evil"), nil, false},
		{"npm file dependency", npmCI, with(npmTree, "package-lock.json", strings.Replace(cleanLock, "https://registry.example/left-pad/-/left-pad-1.3.0.tgz", "file:vendor/left-pad", 1)),
			with(with(npmTree, "package-lock.json", strings.Replace(cleanLock, "https://registry.example/left-pad/-/left-pad-1.3.0.tgz", "file:vendor/left-pad", 1)), "vendor/left-pad/index.js", "evil"), nil, false},
		{"npm workspaces", npmCI, with(npmTree, "package.json", `{"name":"p","workspaces":["pkgs/*"]}`),
			with(with(npmTree, "package.json", `{"name":"p","workspaces":["pkgs/*"]}`), "pkgs/a/index.js", "evil"), nil, false},
		{"npm binding.gyp", npmCI, with(npmTree, "binding.gyp", "{}"), with(with(npmTree, "binding.gyp", "{}"), "src/addon.cc", "evil"), nil, false},
		{"npm .npmrc", npmCI, with(npmTree, ".npmrc", "node-options=--require ./x.js"), with(with(npmTree, ".npmrc", "node-options=--require ./x.js"), "x.js", "evil"), nil, false},
		{"npm install without lockfile", npmInstall, map[string]file{"package.json": npmTree["package.json"], "index.js": {body: "1"}},
			map[string]file{"package.json": npmTree["package.json"], "index.js": {body: "2"}}, nil, false},
		{"go source only", goDownload, goTree, with(goTree, "main.go", "package main // changed"), nil, true},
		{"go local replacement", goDownload, goTree, with(goTree, "x/go.mod", "module x\nrequire y v1.0.0\n"), nil, false},
		{"go workspace", goDownload, goTree, with(goTree, "go.work", "go 1.22\nuse ./x\n"), nil, false},
		{"go module cache committed", goDownload, goTree, with(goTree, ".aster/gomod/cache/download/x/@v/v1.0.0.ziphash", "h1:forged"), nil, false},
		{"go env names a file", goDownload, with(goTree, "alt.mod", "module m"), with(goTree, "alt.mod", "module m\nrequire evil v1.0.0\n"), map[string]string{"GOFLAGS": "-modfile=alt.mod"}, false},
		{"go quiet env", goDownload, goTree, with(goTree, "main.go", "package main // changed"), map[string]string{"HOME": "/tmp", "CGO_ENABLED": "0"}, true},
		{"pip index requirements source only", pipReq, pipTree, with(pipTree, "app.py", "print(2)"), nil, true},
		{"pip requirements", pipReq, pipTree, with(pipTree, "requirements.txt", "requests==2.32.4\n"), nil, false},
		{"pip committed venv", pipReq, pipTree, with(pipTree, ".venv/pip.conf", "[global]\nindex-url = https://evil.example/\n"), nil, false},
		{"pip editable path", pipReq, with(pipTree, "requirements.txt", "-e ./lib\n"), with(with(pipTree, "requirements.txt", "-e ./lib\n"), "lib/setup.py", "evil"), nil, false},
		{"pip local index", pipReq, with(pipTree, "requirements.txt", "--index-url file:///work/wheels\nx\n"), with(with(pipTree, "requirements.txt", "--index-url file:///work/wheels\nx\n"), "wheels/x/index.html", "evil"), nil, false},
		{"pip archive name", pipReq, with(pipTree, "requirements.txt", "dist.tar.gz\n"), with(with(pipTree, "requirements.txt", "dist.tar.gz\n"), "dist.tar.gz", "evil"), nil, false},
		{"pip included file", pipReq, with(pipTree, "requirements.txt", "-r base.txt\n"), with(with(pipTree, "requirements.txt", "-r base.txt\n"), "base.txt", "evil==1"), nil, false},
		{"pip direct reference", pipReq, with(pipTree, "requirements.txt", "x @ file:///work/x\n"), with(with(pipTree, "requirements.txt", "x @ file:///work/x\n"), "x/setup.py", "evil"), nil, false},
		{"pip install .", pipDot, map[string]file{"pyproject.toml": {body: "[project]\nname='p'"}, "p/version.py": {body: "1"}},
			map[string]file{"pyproject.toml": {body: "[project]\nname='p'"}, "p/version.py": {body: "2"}}, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, b := keyOf(t, c.base, c.in, c.env), keyOf(t, c.changed, c.in, c.env)
			if got := a.ID() == b.ID(); got != c.same {
				t.Errorf("same key: %v, want %v\nbase inputs %v\nchanged inputs %v", got, c.same, a.Inputs, b.Inputs)
			}
		})
	}
}

func TestIndexOnlyRequirements(t *testing.T) {
	for _, ok := range []string{
		"", "# only a comment\n", "requests\n", "requests==2.32.3\n", "Django>=4.2,<5 # web\n", "a[b,c]~=1.0\n",
		"urllib3>=2 ; python_version >= \"3.8\"\n", "x==1 \\\n    --hash=sha256:0123abcd \\\n    --hash=sha256:ffff\n",
		"--index-url https://pypi.example/simple\nx\n", "-i https://a.example/\n", "--extra-index-url=https://b.example/\n",
		"--only-binary=:all:\n", "--pre\n", "--require-hashes\n", "zope.interface==6\n", "a-b_c.d\r\n",
	} {
		if !indexOnlyRequirements([]byte(ok)) {
			t.Errorf("refused %q", ok)
		}
	}
	for _, bad := range []string{
		"-e .\n", "-e ./lib\n", "./lib\n", ".\n", "../x\n", "/abs/path\n", "lib/\n", "x @ https://h.example/x.whl\n", "x @ file:///x\n",
		"-r other.txt\n", "-c constraints.txt\n", "--requirement=x.txt\n", "-f ./wheels\n", "--find-links https://x.example\n",
		"--index-url file:///work/w\n", "-i ./w\n", "--no-index\n", "x.whl\n", "dist.tar.gz\n", "pkg.zip\n", "x==1 --global-option=build\n",
		"x==1 --config-settings=a=b\n", "${VAR}\n", "git+https://h.example/x\n", "x==1 --hash sha256:abc\n", "x==1; platform_release == 'a/b'\n",
		"-x\n", "--pre=1\n", "x\\y\n",
	} {
		if indexOnlyRequirements([]byte(bad)) {
			t.Errorf("accepted %q", bad)
		}
	}
}

func TestNpmRunsNoTreeCode(t *testing.T) {
	pkg := `{"name":"p","scripts":{"test":"node --test","build":"tsc"}}`
	if !npmRunsNoTreeCode([]byte(pkg), []byte(cleanLock)) {
		t.Fatal("a clean project refused")
	}
	for name, c := range map[string][2]string{
		"preinstall":          {`{"scripts":{"preinstall":"x"}}`, cleanLock},
		"install":             {`{"scripts":{"install":"x"}}`, cleanLock},
		"postinstall":         {`{"scripts":{"postinstall":"x"}}`, cleanLock},
		"prepare":             {`{"scripts":{"prepare":"x"}}`, cleanLock},
		"dependencies":        {`{"scripts":{"dependencies":"x"}}`, cleanLock},
		"workspaces":          {`{"workspaces":["a"]}`, cleanLock},
		"workspaces object":   {`{"workspaces":{"packages":["a"]}}`, cleanLock},
		"gypfile":             {`{"gypfile":true}`, cleanLock},
		"bad package.json":    {`{`, cleanLock},
		"scripts not object":  {`{"scripts":[1]}`, cleanLock},
		"lockfile v1":         {pkg, `{"lockfileVersion":1,"dependencies":{}}`},
		"no packages":         {pkg, `{"lockfileVersion":3}`},
		"install script":      {pkg, strings.Replace(cleanLock, `"integrity"`, `"hasInstallScript":true,"integrity"`, 1)},
		"root install script": {pkg, strings.Replace(cleanLock, `"name":"p",`, `"name":"p","hasInstallScript":true,`, 1)},
		"link":                {pkg, strings.Replace(cleanLock, `"version":"1.3.0",`, `"link":true,`, 1)},
		"file resolved":       {pkg, strings.Replace(cleanLock, "https://registry.example/left-pad/-/left-pad-1.3.0.tgz", "file:../x", 1)},
		"git resolved":        {pkg, strings.Replace(cleanLock, "https://registry.example/left-pad/-/left-pad-1.3.0.tgz", "git+ssh://git@h.example/x.git#abc", 1)},
		"no resolved":         {pkg, strings.Replace(cleanLock, `"resolved":"https://registry.example/left-pad/-/left-pad-1.3.0.tgz",`, "", 1)},
		"bad lockfile":        {pkg, `[`},
	} {
		if npmRunsNoTreeCode([]byte(c[0]), []byte(c[1])) {
			t.Errorf("%s: accepted", name)
		}
	}
}

// A manifest past its bound is not parsed: the key holds the whole tree.
func TestCacheKeyManifestPastBound(t *testing.T) {
	in := testrun.Install{Kind: "pip", Argv: []string{"sh", "-c", "...", "aster-install", "/work/.venv", "-r", "requirements.txt"}}
	big := strings.Repeat("requests==2.32.3\n", maxManifestBytes/17+1)
	a := keyOf(t, map[string]file{"requirements.txt": {body: big}, "app.py": {body: "1"}}, in, nil)
	b := keyOf(t, map[string]file{"requirements.txt": {body: big}, "app.py": {body: "2"}}, in, nil)
	if a.ID() == b.ID() {
		t.Fatal("a requirements file past its bound gave a key by files")
	}
	if _, ok := a.Inputs[inputTree]; !ok {
		t.Fatalf("inputs %v, want the whole tree", a.Inputs)
	}
}

// The requirements and npm files come from the repository: whatever they
// hold, the checks answer without panicking, and a requirements file they
// accept names no path, URL or included file.
func FuzzCacheKeyParsers(f *testing.F) {
	f.Add([]byte("requests==2.32.3 \\\n  --hash=sha256:ab\n-i https://x.example/\n"), []byte(`{"scripts":{"test":"x"}}`), []byte(cleanLock))
	f.Add([]byte("-e ./lib\n"), []byte(`{"workspaces":["a"]}`), []byte(`{"lockfileVersion":3}`))
	f.Add([]byte("x @ file:///x # c\n"), []byte(`{`), []byte(`[`))
	f.Fuzz(func(t *testing.T, req, pkg, lock []byte) {
		if indexOnlyRequirements(req) {
			text := strings.ReplaceAll(string(req), "\\\n", " ")
			for line := range strings.SplitSeq(text, "\n") {
				if i := commentStart(line); i >= 0 {
					line = line[:i]
				}
				line = strings.TrimSpace(line)
				if strings.HasPrefix(line, "-r") || strings.HasPrefix(line, "-c") || strings.HasPrefix(line, "-e") || strings.HasPrefix(line, "-f") ||
					strings.HasPrefix(line, ".") || strings.HasPrefix(line, "/") || strings.Contains(line, "@") || strings.Contains(line, "file:") {
					t.Fatalf("accepted %q", line)
				}
			}
		}
		npmRunsNoTreeCode(pkg, lock)
		b := treeTar(t, map[string]file{"requirements.txt": {body: string(req)}, "package.json": {body: string(pkg)}, "package-lock.json": {body: string(lock)}})
		s, err := scanTree(bytes.NewReader(b), "")
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range []testrun.Install{{Kind: "npm", Argv: []string{"npm", "ci"}}, {Kind: "pip", Argv: []string{"x", "-r", "requirements.txt"}}} {
			if inputs, _ := s.inputs(&in, nil); inputs[inputDeps] == "" {
				t.Fatal("no dependency directories in the key")
			}
		}
	})
}

// BenchmarkScanTree is the cost of a key by the whole tree: one pass over a
// 64 MiB archive of 1,024 files.
func BenchmarkScanTree(b *testing.B) {
	files := map[string]file{}
	body := strings.Repeat("x", 64<<10)
	for i := range 1024 {
		files["src/"+strings.Repeat("d", i%7)+"/f"+string(rune('a'+i%26))+strings.Repeat("0", i/26)] = file{body: body}
	}
	tree := treeTar(b, files)
	b.SetBytes(int64(len(tree)))
	for b.Loop() {
		if _, err := scanTree(bytes.NewReader(tree), ""); err != nil {
			b.Fatal(err)
		}
	}
}
