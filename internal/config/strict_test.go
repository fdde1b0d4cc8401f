package config

// aster:env-typos (misspelt ASTER_* names on purpose)

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// typoMarker marks a file whose ASTER_* names are deliberate misspellings,
// which TestEveryASTERNameInTheRepositoryIsKnown skips.
const typoMarker = "aster:env-typos" + " (misspelt ASTER_* names on purpose)"

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "aster.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Every unknown key, at any depth and in any section, is refused with the
// file, its line and the nearest valid name.
func TestLoadRefusesUnknownKeys(t *testing.T) {
	cases := []struct {
		name, body      string
		line            int
		key, suggestion string
	}{
		{"top level", "runtime: docker\nlimts:\n  timeout: 5s\n", 2, "limts", "limits"},
		{"nested", "limits:\n  memory: 1g\n  timout: 5s\n", 3, "limits.timout", "limits.timeout"},
		{"case", "Limits:\n  timeout: 5s\n", 1, "Limits", "limits"},
		{"reaper", "reaper:\n  grace: 1s\n  perod: 1m\n", 3, "reaper.perod", "reaper.period"},
		{"oci", "oci:\n  runtim: runc\n", 2, "oci.runtim", "oci.runtime"},
		{"kubernetes", "kubernetes:\n  namespce: x\n", 2, "kubernetes.namespce", "kubernetes.namespace"},
		{"serve section", "serve:\n  addr: 127.0.0.1:1\n  max_concurent: 4\n", 3, "serve.max_concurent", "serve.max_concurrent"},
		{"serve ceilings", "serve:\n  ceilings:\n    memroy: 1g\n", 3, "serve.ceilings.memroy", "serve.ceilings.memory"},
		{"app section", "app:\n  app_di: \"1\"\n", 2, "app.app_di", "app.app_id"},
		{"llm agentic", "llm:\n  agentic:\n    max_tool_call: 2\n", 3, "llm.agentic.max_tool_call", "llm.agentic.max_tool_calls"},
		{"llm prices entry", "llm:\n  prices:\n    \"gpt*\": {input_per_mtok: 1, output_per_mtk: 2}\n", 3, "llm.prices.gpt*.output_per_mtk", "llm.prices.gpt*.output_per_mtok"},
		{"pool", "pool:\n  wram: 2\n", 2, "pool.wram", "pool.warm"},
		{"mcp", "mcp:\n  allow_dir: [.]\n", 2, "mcp.allow_dir", "mcp.allow_dirs"},
		{"no near name", "zzzzzzzz: 1\n", 1, "zzzzzzzz", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := writeConfig(t, c.body)
			_, err := Load(p, func(string) string { return "" })
			var ke *KeyError
			if !errors.As(err, &ke) {
				t.Fatalf("want a KeyError, got %v", err)
			}
			if ke.File != p || ke.Line != c.line || ke.Key != c.key || ke.Suggestion != c.suggestion {
				t.Fatalf("got %+v, want line %d key %q suggestion %q", ke, c.line, c.key, c.suggestion)
			}
			msg := err.Error()
			if !strings.Contains(msg, p+":") || !strings.Contains(msg, c.key) {
				t.Fatalf("message %q lacks the file, line or key", msg)
			}
			if c.suggestion == "" && !strings.Contains(msg, "valid here: ") {
				t.Fatalf("message %q lists no valid keys", msg)
			}
		})
	}
}

// Every key a configuration type decodes is accepted, including free-form
// maps (labels, prices) and every section.
func TestLoadAcceptsEveryKnownKey(t *testing.T) {
	body := `runtime: docker
docker_host: ""
engine_runtime: ""
init_path: /x/aster-init
images: [a:1, b:2]
limits: {timeout: 5s, memory: 256m, cpus: "1", pids: "64", output_limit: 1m, output_ceiling: 2m, workdir_size: 64m, tmp_size: 16m}
reaper: {grace: 1s, period: 1m, allowance: 2m}
host_tasks: "5000"
labels: {any.key/here: v, other: w}
log_level: debug
oci: {runtime: crun, state_dir: /run/x, cache_dir: /var/x}
kubernetes: {kubeconfig: k, namespace: n, runtime_class: r, init_image: i, image_pull_policy: Never, schedule_timeout: 5s, max_pods: "3"}
serve: {addr: "127.0.0.1:1", ceilings: {memory: 1g}}
app: {app_id: "1", tests: true}
llm:
  provider: openai
  prices: {"m*": {input_per_mtok: 1, output_per_mtok: 2, cached_input_per_mtok: 0.5}}
  agentic: {max_tool_calls: 2}
pool: {warm: "1", max_idle: 1m}
mcp: {http: "127.0.0.1:1", sandbox_url: "http://x", allow_dirs: [.]}
`
	c, err := Load(writeConfig(t, body), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if c.LogLevel != "debug" || c.Labels["any.key/here"] != "v" || c.Limits.Timeout != "5s" {
		t.Fatalf("not decoded: %+v", c)
	}
	if _, err := Load(writeConfig(t, ""), func(string) string { return "" }); err != nil {
		t.Fatalf("empty file: %v", err)
	}
}

func TestLogLevel(t *testing.T) {
	for _, ok := range []string{"debug", "INFO", "warn", "warning", "error"} {
		if _, err := ParseLogLevel(ok); err != nil {
			t.Errorf("%s refused: %v", ok, err)
		}
	}
	cases := []struct {
		file, env string
		want      []string
	}{
		{"runtime: docker\nlog_level: verbose\n", "", []string{"aster.yaml:2: log_level", `"verbose"`, "want debug, info, warn or error"}},
		{"log_level: deubg\n", "", []string{"aster.yaml:1:", `did you mean "debug"?`}},
		{"", "inf", []string{"ASTER_LOG_LEVEL", `did you mean "info"?`}},
		{"log_level: info\n", "eror", []string{"ASTER_LOG_LEVEL", `did you mean "error"?`}},
	}
	for _, c := range cases {
		t.Run(c.file+c.env, func(t *testing.T) {
			_, err := Load(writeConfig(t, c.file), func(k string) string {
				if k == "ASTER_LOG_LEVEL" {
					return c.env
				}
				return ""
			})
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
		})
	}
}

func TestCheckEnv(t *testing.T) {
	cases := []struct {
		env  []string
		want string // empty: accepted
	}{
		{[]string{"ASTER_TIMEOUT=5s", "ASTER_LABELS=a=b", "ASTER_INIT_PATH=/x", "ASTER_REAPER_ALLOWANCE=1s", "HOME=/root"}, ""},
		{[]string{"ASTER_MAX_CONCURRENT=2", "ASTER_APP_ID=1", "ASTER_K8S_NAMESPACE=x", "ASTER_LLM_MODEL=m", "ASTER_WARM=1"}, ""},
		{[]string{"ASTER_REQUIRE_DOCKER=1", "ASTER_REQUIRE_OCI=1", "ASTER_REQUIRE_GVISOR=1", "ASTER_TEST_IMAGE=x", "ASTER_TEST_ANYTHING=1"}, ""},
		{[]string{"ASTER_K8S_STATE=/tmp/x", "ASTER_TOKEN=t", "ASTER_OCTOKIT_DIR=/x"}, ""},
		{[]string{"NOT_ASTER_TIMOUT=1"}, ""},
		// Kubernetes service links of a Service named aster-app.
		{[]string{"ASTER_APP_SERVICE_HOST=10.0.0.1", "ASTER_APP_SERVICE_PORT=8090", "ASTER_APP_SERVICE_PORT_HTTP=8090", "ASTER_APP_PORT=tcp://10.0.0.1:8090",
			"ASTER_APP_PORT_8090_TCP=tcp://10.0.0.1:8090", "ASTER_APP_PORT_8090_TCP_PROTO=tcp", "ASTER_APP_PORT_8090_TCP_PORT=8090", "ASTER_APP_PORT_8090_TCP_ADDR=10.0.0.1"}, ""},
		{[]string{"ASTER_APP_PORT_8090_TCP_ADR=x"}, "unknown environment variable ASTER_APP_PORT_8090_TCP_ADR"},
		{[]string{"ASTER_TIMOUT=5s"}, "unknown environment variable ASTER_TIMOUT (did you mean ASTER_TIMEOUT?)"},
		{[]string{"ASTER_MEMROY=1g"}, "did you mean ASTER_MEMORY?"},
		{[]string{"ASTER_K8S_NAMESPACEE=x"}, "did you mean ASTER_K8S_NAMESPACE?"},
		{[]string{"ASTER_SOMETHING_ELSE_ENTIRELY=1"}, "unknown environment variable ASTER_SOMETHING_ELSE_ENTIRELY; unset it"},
		{[]string{"ASTER_=1"}, "unknown environment variable ASTER_"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.env, " "), func(t *testing.T) {
			err := CheckEnv(c.env)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
}

// Every ASTER_* name the repository mentions (code, scripts, deploy files,
// docs) is configuration, a documented non-config name or reserved: a script
// that exports a new name must list it, or every aster it starts would
// refuse to run.
func TestEveryASTERNameInTheRepositoryIsKnown(t *testing.T) {
	root := filepath.Join("..", "..")
	re := regexp.MustCompile(`\bASTER_[A-Z0-9_]*[A-Z0-9]\b`)
	known := ConfigEnvVars()
	found := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "testdata", "bin":
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(p) {
		case ".go", ".sh", ".md", ".yaml", ".yml", ".mk", ".service", ".json", "":
		default:
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(typoMarker)) {
			return nil // a test of misspelt names
		}
		for _, m := range re.FindAllString(string(b), -1) {
			found[m] = p
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) < 40 {
		t.Fatalf("found only %d names; is the walk looking at the repository?", len(found))
	}
	var unknown []string
	for name, where := range found {
		if _, ok := known[name]; ok {
			continue
		}
		if CheckEnv([]string{name + "=x"}) != nil {
			unknown = append(unknown, name+" ("+where+")")
		}
	}
	sort.Strings(unknown)
	if len(unknown) > 0 {
		t.Fatalf("ASTER_* names used in the repository but refused by CheckEnv; add them to a variable list or NonConfigEnvVars:\n%s", strings.Join(unknown, "\n"))
	}
}

func TestNearest(t *testing.T) {
	names := []string{"limits", "labels", "log_level", "images"}
	for in, want := range map[string]string{"limts": "limits", "lables": "labels", "loglevel": "log_level", "image": "images", "xyz": "", "": ""} {
		if got := Nearest(in, names); got != want {
			t.Errorf("Nearest(%q) = %q, want %q", in, got, want)
		}
	}
}
