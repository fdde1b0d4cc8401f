package testrun

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
)

// Install is a project's dependency step: what the install phase runs (in a
// sandbox whose only way out is the egress relay) before the tests run with
// no network at all. Dependencies land in Dirs of the working directory,
// which are all the test phase gets of the install phase's workspace.
type Install struct {
	// Kind is "npm", "go", "pip" or "custom" (a given setup command).
	Kind string `json:"kind"`
	// Argv is what the install sandbox executes.
	Argv []string `json:"argv"`
	// Manifests are the names (relative to the working directory) of the files
	// whose content decides the dependencies. They alone do not key the
	// dependency cache: an install may run scripts that read any file
	// (internal/testphase's cachekey.go says what does).
	Manifests []string `json:"manifests"`
}

// MaxSetupArgs and MaxSetupArgBytes bound a given setup command.
const (
	MaxSetupArgs     = 64
	MaxSetupArgBytes = 4096
)

// DepDirs are the directories of the working directory the install phase
// leaves dependencies in; only these are carried to the test phase and
// cached. A given setup command must write there too.
var DepDirs = []string{"node_modules", ".venv", ".aster"}

// MinInstallWorkdirBytes is the least /work a run with an install phase gets
// (within the operator's ceiling): dependencies are large.
const MinInstallWorkdirBytes = 1 << 30

// Manifest files per ecosystem, in the order they are hashed.
var (
	npmManifests    = []string{"package.json", "package-lock.json", "npm-shrinkwrap.json"}
	goManifests     = []string{"go.mod", "go.sum"}
	pipManifests    = []string{"requirements.txt", "pyproject.toml", "setup.py", "setup.cfg"}
	customManifests = slices.Concat(npmManifests, goManifests, pipManifests)
)

// pipInstall makes a virtual environment that still sees the image's own
// packages (pytest) and installs into it. $1 is the environment's path; the
// rest is pip's arguments. pip logs why it could not read an index page
// (a 401 from a private index) only at debug level: when it fails, those
// lines of its debug log are printed, so that the report says why.
const pipInstall = `venv=$1; shift; python3 -m venv --system-site-packages "$venv" || exit; ` +
	`"$venv/bin/python" -m pip --log /tmp/aster-pip.log install "$@" && exit; st=$?; ` +
	`grep -h "Could not fetch URL" /tmp/aster-pip.log | cut -d " " -f 2- | sort -u | head -n 5 >&2; exit $st`

// DetectInstall picks the dependency step for a project from the names of
// its files (relative to the working directory) and the test framework the
// plan runs: go → `go mod download` (go.mod with a go.sum: a module without
// one needs nothing); pytest → a virtual environment
// and `pip install -r requirements.txt`, or `pip install .` for a
// pyproject.toml or setup.py; npm → `npm ci` with a package-lock.json or
// npm-shrinkwrap.json, else `npm install`. A custom test command takes the
// first of those the project has, in that order. ok is false when the project
// has nothing to install. workdir is the working directory relative to /work
// ("" for /work), for the virtual environment's absolute path.
func DetectInstall(names []string, framework, workdir string) (Install, bool) {
	top := map[string]bool{}
	for _, n := range names {
		n = strings.TrimPrefix(path.Clean(strings.TrimPrefix(n, "./")), "/")
		if !strings.Contains(n, "/") {
			top[n] = true
		}
	}
	present := func(list []string) []string {
		var out []string
		for _, m := range list {
			if top[m] {
				out = append(out, m)
			}
		}
		return out
	}
	goStep := func() (Install, bool) {
		// A module with no go.sum requires nothing outside itself.
		if !top["go.mod"] || !top["go.sum"] {
			return Install{}, false
		}
		return Install{Kind: "go", Argv: []string{"go", "mod", "download", "-x"}, Manifests: present(goManifests)}, true
	}
	pipStep := func() (Install, bool) {
		venv := path.Join("/work", workdir, ".venv")
		switch {
		case top["requirements.txt"]:
			return Install{Kind: "pip", Argv: []string{"sh", "-c", pipInstall, "aster-install", venv, "-r", "requirements.txt"}, Manifests: present(pipManifests)}, true
		case top["pyproject.toml"] || top["setup.py"]:
			return Install{Kind: "pip", Argv: []string{"sh", "-c", pipInstall, "aster-install", venv, "."}, Manifests: present(pipManifests)}, true
		}
		return Install{}, false
	}
	npmStep := func() (Install, bool) {
		if !top["package.json"] {
			return Install{}, false
		}
		cmd := "install"
		if top["package-lock.json"] || top["npm-shrinkwrap.json"] {
			cmd = "ci"
		}
		return Install{Kind: "npm", Argv: []string{"npm", cmd, "--no-audit", "--no-fund"}, Manifests: present(npmManifests)}, true
	}
	switch framework {
	case "go":
		return goStep()
	case "pytest":
		return pipStep()
	case "npm":
		return npmStep()
	}
	for _, step := range []func() (Install, bool){goStep, pipStep, npmStep} {
		if in, ok := step(); ok {
			return in, true
		}
	}
	return Install{}, false
}

// Setup is the install step for a given setup command: an argv run directly
// (a shell string is written ["sh", "-c", "..."]), its manifests every known
// one the project has. It is refused when empty, too long, or when an
// argument holds a NUL.
func Setup(argv []string, names []string) (Install, error) {
	if err := ValidateSetup(argv); err != nil {
		return Install{}, err
	}
	if len(argv) == 0 {
		return Install{}, errors.New("setup: empty command")
	}
	top := map[string]bool{}
	for _, n := range names {
		top[strings.TrimPrefix(path.Clean(strings.TrimPrefix(n, "./")), "/")] = true
	}
	var manifests []string
	for _, m := range customManifests {
		if top[m] {
			manifests = append(manifests, m)
		}
	}
	return Install{Kind: "custom", Argv: slices.Clone(argv), Manifests: manifests}, nil
}

// ValidateSetup checks a setup command's shape (an empty one is valid: no setup).
func ValidateSetup(argv []string) error {
	if len(argv) > MaxSetupArgs {
		return fmt.Errorf("setup: more than %d arguments", MaxSetupArgs)
	}
	if len(argv) > 0 && argv[0] == "" {
		return errors.New("setup: the program name is empty")
	}
	for _, a := range argv {
		if len(a) > MaxSetupArgBytes || strings.IndexByte(a, 0) >= 0 {
			return fmt.Errorf("setup: an argument is longer than %d bytes or contains NUL", MaxSetupArgBytes)
		}
	}
	return nil
}

// Command is the install step as reports show it: the pip wrapper's script
// is shown as the two commands it runs.
func (in Install) Command() []string {
	if in.Kind == "pip" && len(in.Argv) > 5 && in.Argv[2] == pipInstall {
		return append([]string{"python3", "-m", "venv", "--system-site-packages", in.Argv[4], "&&", in.Argv[4] + "/bin/python", "-m", "pip", "install"}, in.Argv[5:]...)
	}
	return slices.Clone(in.Argv)
}

// Registries are the operator's package sources for the install phase; an
// empty one leaves the tool's own default.
type Registries struct {
	NPM      string // npm_config_registry
	GoProxy  string // GOPROXY
	PipIndex string // PIP_INDEX_URL
}

// InstallEnv is the install phase's environment: the proxy aster-init serves
// (proxyURL) for every tool that reads one, the operator's registries, the
// Go module cache inside the working directory (so it is carried to the test
// phase), writable caches under /tmp; the caller's variables win.
func InstallEnv(proxyURL, workdir string, reg Registries, caller map[string]string) map[string]string {
	env := depEnv(workdir)
	for _, k := range []string{"HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy", "npm_config_proxy", "npm_config_https_proxy"} {
		env[k] = proxyURL
	}
	set := func(k, v string) {
		if v != "" {
			env[k] = v
		}
	}
	set("npm_config_registry", reg.NPM)
	set("GOPROXY", reg.GoProxy)
	set("PIP_INDEX_URL", reg.PipIndex)
	env["npm_config_cache"] = "/tmp/.npm"
	env["npm_config_update_notifier"] = "false"
	env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
	env["PIP_NO_CACHE_DIR"] = "1"
	env["PIP_PROGRESS_BAR"] = "off"
	// Nothing answers a prompt: a tool asking for a password (pip, git on
	// a 401) fails at once and says why instead of reading end of file.
	env["PIP_NO_INPUT"] = "1"
	env["GIT_TERMINAL_PROMPT"] = "0"
	env["GOFLAGS"] = "-modcacherw"
	env["CI"] = "true"
	for k, v := range caller {
		env[k] = v
	}
	return env
}

// depEnv points Go's module cache and the virtual environment into the
// working directory's dependency directories; both phases use it.
func depEnv(workdir string) map[string]string {
	wd := path.Join("/work", workdir)
	env := cloneEnv(goEnv)
	delete(env, "GOPROXY")
	env["GOMODCACHE"] = path.Join(wd, ".aster", "gomod")
	env["VIRTUAL_ENV"] = path.Join(wd, ".venv")
	env["PATH"] = path.Join(wd, ".venv", "bin") + ":/usr/local/bin:/usr/bin:/bin"
	return env
}

// WithInstall is the test plan for the workspace an install phase produced:
// Go reads the module cache of the working directory with no proxy (and may
// complete go.sum from it), Python runs from the virtual environment.
func (p Plan) WithInstall(in Install, workdir string) Plan {
	q := p
	q.Argv = slices.Clone(p.Argv)
	env := depEnv(workdir)
	for k, v := range p.Env {
		env[k] = v
	}
	// After the plan's own: its GOPATH cache must not hide the one installed.
	env["GOMODCACHE"] = depEnv(workdir)["GOMODCACHE"]
	env["GOPROXY"] = "off"
	env["GOFLAGS"] = "-mod=mod"
	q.Env = env
	if p.Framework == "pytest" && in.Kind == "pip" {
		venvPython := path.Join("/work", workdir, ".venv", "bin", "python")
		for i, a := range q.Argv {
			if a == "python3" {
				q.Argv[i] = venvPython
				break
			}
		}
	}
	return q
}
