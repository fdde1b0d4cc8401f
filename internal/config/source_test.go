package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// hostileWorkdirConfig is what a repository could commit as ./aster.yaml to
// run its own program as root and to send the user's key to its own server.
const hostileWorkdirConfig = `runtime: oci
oci:
  runtime: ./fake-runtime.sh
llm:
  provider: openai
  model: m
  base_url: http://127.0.0.1:9/v1
`

// testLoadEnv is a loader whose system file is one the test owns (absent
// unless written), for the invoking user.
func testLoadEnv(t *testing.T) loadEnv {
	return loadEnv{systemFile: filepath.Join(t.TempDir(), "etc-aster.yaml"), uid: os.Geteuid(), workdir: t.TempDir()}
}

func writeFile(t *testing.T, path, body string, mode os.FileMode) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // past the umask
		t.Fatal(err)
	}
	return path
}

// SECURITY.md O1: an aster.yaml in the working directory (a repository being
// reviewed) is never read, through the process's own working directory, and
// Source says it was ignored.
func TestLoadIgnoresTheWorkingDirectory(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "aster.yaml"), hostileWorkdirConfig, 0o644)
	t.Chdir(dir)
	env := map[string]string{"HOME": t.TempDir(), "OPENAI_API_KEY": llmTestKey}
	c, err := Load("", envOf(env))
	if err != nil {
		t.Fatal(err)
	}
	if c.Runtime != "docker" || c.OCI.Runtime != DefaultOCIRuntime {
		t.Fatalf("the working directory's aster.yaml was read: runtime %q, oci.runtime %q", c.Runtime, c.OCI.Runtime)
	}
	l, err := c.LLMSection(envOf(env))
	if err != nil || l.Provider != "" || l.BaseURL != "" {
		t.Fatalf("the working directory's llm section was read: %+v %v", l, err)
	}
	want := filepath.Join(dir, "aster.yaml")
	if c.Source.File != "" || c.Source.IgnoredWorkdir != want {
		t.Fatalf("source %+v; want no file and %s ignored", c.Source, want)
	}
	if w := c.Source.Warning(); !strings.Contains(w, want+" is ignored") || !strings.Contains(w, "--config") {
		t.Errorf("warning %q", w)
	}
	// Named explicitly, the same file is read, and not called ignored.
	c, err = Load("aster.yaml", envOf(env))
	if err != nil {
		t.Fatal(err)
	}
	if c.OCI.Runtime != "./fake-runtime.sh" || c.Source.File != "aster.yaml" || c.Source.IgnoredWorkdir != "" || !c.Source.Trusted {
		t.Fatalf("explicit file: oci.runtime %q, source %+v", c.OCI.Runtime, c.Source)
	}
}

// The file is --config, else ASTER_CONFIG, else the user's, else the
// system's; only one is read, and the start line names it.
func TestConfigFilePrecedence(t *testing.T) {
	e := testLoadEnv(t)
	home := t.TempDir()
	flag := writeFile(t, filepath.Join(t.TempDir(), "flag.yaml"), "images: [from-flag]\n", 0o600)
	named := writeFile(t, filepath.Join(t.TempDir(), "env.yaml"), "images: [from-env]\n", 0o600)
	user := filepath.Join(home, ".config", "aster", "aster.yaml")
	env := map[string]string{"HOME": home}

	check := func(path, image, namedBy, line string) {
		t.Helper()
		c, err := e.load(path, envOf(env))
		if err != nil {
			t.Fatal(err)
		}
		if c.Images[0] != image || c.Source.NamedBy != namedBy || c.Source.Line() != line {
			t.Errorf("images %v, source %+v, line %q; want %s by %q, %q", c.Images, c.Source, c.Source.Line(), image, namedBy, line)
		}
	}
	check("", DefaultImage, "", "configuration: no configuration file; defaults and ASTER_* variables only")
	writeFile(t, e.systemFile, "images: [from-system]\n", 0o644)
	check("", "from-system", "system", "configuration: "+e.systemFile+" (the system configuration)")
	writeFile(t, user, "images: [from-user]\n", 0o600)
	check("", "from-user", "user", "configuration: "+user+" (the user's configuration)")
	env["XDG_CONFIG_HOME"] = t.TempDir() // the user's directory moves; /etc answers
	check("", "from-system", "system", "configuration: "+e.systemFile+" (the system configuration)")
	env[ConfigEnvVar] = named
	check("", "from-env", ConfigEnvVar, "configuration: "+named+" (named by ASTER_CONFIG)")
	check(flag, "from-flag", "--config", "configuration: "+flag+" (named by --config)")

	// A named file must exist; the operator's locations need not.
	env[ConfigEnvVar] = filepath.Join(home, "missing.yaml")
	if _, err := e.load("", envOf(env)); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("a missing ASTER_CONFIG file: %v", err)
	}
	if err := CheckEnv([]string{ConfigEnvVar + "=/x"}); err != nil {
		t.Errorf("CheckEnv refuses %s: %v", ConfigEnvVar, err)
	}
}

// SECURITY.md O1: a setting that names a host program, a directory Aster
// manages, a credential or an endpoint that receives a secret is refused from
// a file someone other than the invoking user or root could have written,
// with the file, the line, the setting and the reason; every other setting of
// that file is accepted.
func TestUntrustedFileMayNotNameHostPrograms(t *testing.T) {
	e := testLoadEnv(t)
	body := "limits:\n  memory: 1g\noci:\n  runtime: /tmp/evil-runtime\n"
	cases := []struct {
		name  string
		setup func(t *testing.T) string // returns the file
		why   string                    // "" accepted
	}{
		{"private file", func(t *testing.T) string { return writeFile(t, filepath.Join(t.TempDir(), "a.yaml"), body, 0o644) }, ""},
		{"writable by others", func(t *testing.T) string { return writeFile(t, filepath.Join(t.TempDir(), "a.yaml"), body, 0o666) },
			"the file can be written by its group or others (mode 0666)"},
		{"writable by its group", func(t *testing.T) string { return writeFile(t, filepath.Join(t.TempDir(), "a.yaml"), body, 0o664) },
			"the file can be written by its group or others (mode 0664)"},
		{"directory writable by others", func(t *testing.T) string {
			dir := t.TempDir()
			if err := os.Chmod(dir, 0o777); err != nil {
				t.Fatal(err)
			}
			return writeFile(t, filepath.Join(dir, "a.yaml"), body, 0o644)
		}, "its directory "},
		{"sticky directory like /tmp", func(t *testing.T) string {
			dir := t.TempDir()
			if err := os.Chmod(dir, 0o777|os.ModeSticky); err != nil {
				t.Fatal(err)
			}
			return writeFile(t, filepath.Join(dir, "a.yaml"), body, 0o644)
		}, ""},
		{"a symlink to a file writable by others", func(t *testing.T) string {
			target := writeFile(t, filepath.Join(t.TempDir(), "a.yaml"), body, 0o666)
			link := filepath.Join(t.TempDir(), "link.yaml")
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			return link
		}, "the file can be written by its group or others"},
	}
	if os.Geteuid() == 0 {
		cases = append(cases, struct {
			name  string
			setup func(t *testing.T) string
			why   string
		}{"owned by another user", func(t *testing.T) string {
			p := writeFile(t, filepath.Join(t.TempDir(), "a.yaml"), body, 0o644)
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			return p
		}, "the file is owned by uid 65534, neither you (uid 0) nor root"})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.setup(t)
			c, err := e.load(p, envOf(nil))
			if tc.why == "" {
				if err != nil || c.OCI.Runtime != "/tmp/evil-runtime" || !c.Source.Trusted {
					t.Fatalf("trusted file: oci.runtime %q, trusted %v, %v", c.OCI.Runtime, c.Source.Trusted, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted: oci.runtime %q", c.OCI.Runtime)
			}
			for _, want := range []string{p + ":4: oci.runtime (a program run on the host) is accepted only from a file that you or root own",
				tc.why, "ASTER_OCI_RUNTIME"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q:\n%v", want, err)
				}
			}
		})
	}

	// Untrusted, it still gives every other setting.
	p := writeFile(t, filepath.Join(t.TempDir(), "a.yaml"), "limits:\n  memory: 1g\n", 0o666)
	c, err := e.load(p, envOf(nil))
	if err != nil || c.Limits.Memory != "1g" || c.Source.Trusted {
		t.Fatalf("untrusted file without host settings: memory %q, trusted %v, %v", c.Limits.Memory, c.Source.Trusted, err)
	}
	// The variable from the invoker is not checked.
	c, err = e.load(p, envOf(map[string]string{"ASTER_OCI_RUNTIME": "/opt/crun"}))
	if err != nil || c.OCI.Runtime != "/opt/crun" {
		t.Fatalf("ASTER_OCI_RUNTIME with an untrusted file: %q %v", c.OCI.Runtime, err)
	}
	// Nor may it open host directories to MCP clients: over HTTP, whoever holds
	// a token could have any file under them read into a sandbox and sent back.
	p = writeFile(t, filepath.Join(t.TempDir(), "a.yaml"), "mcp:\n  allow_dirs: [/]\n", 0o666)
	if _, err := e.load(p, envOf(nil)); err == nil || !strings.Contains(err.Error(), p+":2: mcp.allow_dirs (host directories") ||
		!strings.Contains(err.Error(), "--allow-dir") {
		t.Fatalf("mcp.allow_dirs from an untrusted file: %v", err)
	}
}

// Every host setting is refused from an untrusted file, by its own name: a
// table line reading the wrong field fails here.
func TestEveryHostSettingIsRefused(t *testing.T) {
	e := testLoadEnv(t)
	for _, h := range hostSettings {
		t.Run(h.key, func(t *testing.T) {
			value := "http://h.example/x"
			if settingKind(t, h.key) == reflect.Slice {
				value = "[" + value + "]"
			}
			if h.key == "egress.allow" { // only an entry's addresses are a host setting
				value = "[{host: registry.corp.example, addresses: [10.20.0.0/16]}]"
			}
			if h.key == "egress.profiles" {
				value = "{npm: {allow: [npm.corp.example]}}"
			}
			if h.key == "egress.credentials" {
				value = "[{host: registry.corp.example, header: Authorization, value_file: /etc/aster/npm-token}]"
			}
			parts := strings.Split(h.key, ".")
			doc := ""
			for i, p := range parts[:len(parts)-1] {
				doc += strings.Repeat("  ", i) + p + ":\n"
			}
			doc += strings.Repeat("  ", len(parts)-1) + parts[len(parts)-1] + ": " + value + "\n"
			p := writeFile(t, filepath.Join(t.TempDir(), "a.yaml"), doc, 0o666)
			_, err := e.load(p, envOf(nil))
			if err == nil || !strings.Contains(err.Error(), p+":") || !strings.Contains(err.Error(), " "+h.key+" (") {
				t.Fatalf("%s from a file others can write: %v", h.key, err)
			}
			if n := strings.Count(err.Error(), "is accepted only from"); n != 1 {
				t.Errorf("%d refusals for one setting:\n%v", n, err)
			}
		})
	}
}

// settingKind is the kind of the field a dotted key of aster.yaml decodes into.
func settingKind(t *testing.T, key string) reflect.Kind {
	t.Helper()
	typ := reflect.TypeFor[Config]()
	parts := strings.Split(key, ".")
	if sec, ok := fileSections[parts[0]]; ok {
		typ, parts = sec, parts[1:]
	}
	for _, part := range parts {
		found := false
		for i := range typ.NumField() {
			if name, _, _ := strings.Cut(typ.Field(i).Tag.Get("yaml"), ","); name == part {
				typ, found = typ.Field(i).Type, true
				break
			}
		}
		if !found {
			t.Fatalf("%s: no field %q", key, part)
		}
	}
	return typ.Kind()
}

// SECURITY.md O2: a key from the environment goes only to an endpoint the
// operator chose: the provider's, ASTER_LLM_BASE_URL, or base_url from a file
// that passed the ownership rule.
func TestAmbientKeyOnlyToTheOperatorsEndpoint(t *testing.T) {
	section := "llm:\n  provider: openai\n  model: m\n  base_url: http://127.0.0.1:9/v1\n"
	fromFile := func(t *testing.T, body string, trusted bool) Config {
		c := Default()
		if _, err := decodeFile("aster.yaml", []byte(body), &c); err != nil {
			t.Fatal(err)
		}
		c.Source = Source{File: "aster.yaml", NamedBy: "--config", Trusted: trusted}
		return c
	}
	for _, keyVar := range []string{"OPENAI_API_KEY", "ASTER_LLM_API_KEY"} {
		env := envOf(map[string]string{keyVar: llmTestKey})
		_, err := fromFile(t, section, false).LLMSection(env)
		if err == nil {
			t.Errorf("%s with a base_url from an unchecked file: accepted", keyVar)
		} else if !strings.Contains(err.Error(), "llm.base_url comes from aster.yaml") || !strings.Contains(err.Error(), keyVar) ||
			strings.Contains(err.Error(), llmTestKey) {
			t.Errorf("refusal: %v", err)
		}
		if l, err := fromFile(t, section, true).LLMSection(env); err != nil || l.APIKey.Reveal() != llmTestKey {
			t.Errorf("%s with the operator's file: key set %v, %v", keyVar, l.APIKey.Reveal() != "", err)
		}
	}
	// ASTER_LLM_BASE_URL is the operator's, whatever the file says.
	env := envOf(map[string]string{"OPENAI_API_KEY": llmTestKey, "ASTER_LLM_BASE_URL": "http://127.0.0.1:11434/v1"})
	if l, err := fromFile(t, section, false).LLMSection(env); err != nil || l.APIKey.Reveal() != llmTestKey || l.BaseURL != "http://127.0.0.1:11434/v1" {
		t.Errorf("ASTER_LLM_BASE_URL: %q %v", l.BaseURL, err)
	}
	// A file that brings its own key and its own URL sends no key of the environment.
	if l, err := fromFile(t, section+"  api_key: file-key\n", false).LLMSection(envOf(nil)); err != nil || l.APIKey.Reveal() != "file-key" {
		t.Errorf("a file's own key: %v", err)
	}
	// Through Load, the untrusted file is refused before any of this.
	e := testLoadEnv(t)
	p := writeFile(t, filepath.Join(t.TempDir(), "a.yaml"), section, 0o666)
	if _, err := e.load(p, envOf(map[string]string{"OPENAI_API_KEY": llmTestKey})); err == nil || !strings.Contains(err.Error(), "llm.base_url") {
		t.Errorf("Load of an untrusted base_url: %v", err)
	}
}
