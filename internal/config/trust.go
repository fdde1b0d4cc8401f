package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"go.yaml.in/yaml/v3"
)

// The ownership rule (SECURITY.md O1). Some settings decide what runs on the
// host or where a secret goes: a runtime binary, QEMU, the guest kernel, the
// init binary, a kubeconfig (which can run credential programs), the
// directories Aster manages as root, a credential or trust anchor, an endpoint
// that receives a key or a token. Such a setting is accepted from a file only
// when the file could not have been written by anyone but the invoking user or
// root: they own it and its directory, and neither is writable by its group or
// others (a sticky directory, like /tmp, may be). A file that fails the rule
// and sets one of them stops the command with an error naming the file, the
// setting and the reason; its other settings would have been accepted.
// Variables and flags come from the invoker and are not checked.

// hostSetting is a setting only a trusted file may give.
type hostSetting struct {
	key string // dotted, as in aster.yaml
	// names says what the setting names, for the refusal.
	names string
	// instead is how the invoker sets it ("" when only a file can).
	instead string
	value   func(f *fileLayer) string
}

// fileLayer is what a configuration file sets, section by section, before
// anything else is laid over it.
type fileLayer struct {
	root   Config
	llm    LLMConfig
	app    AppConfig
	mcp    MCPConfig
	serve  ServeConfig
	tests  TestsConfig
	egress EgressConfig
}

const (
	namesProgram    = "a program run on the host"
	namesDir        = "a directory Aster manages on the host"
	namesCredential = "a credential file"
)

var hostSettings = []hostSetting{
	{"init_path", "the init binary every sandbox starts", "ASTER_INIT_PATH or --init-path", func(f *fileLayer) string { return f.root.InitPath }},
	{"docker_host", "the engine that is handed every workspace and supplies the images", "ASTER_DOCKER_HOST or --docker-host", func(f *fileLayer) string { return f.root.DockerHost }},
	{"oci.runtime", namesProgram, "ASTER_OCI_RUNTIME or --oci-runtime", func(f *fileLayer) string { return f.root.OCI.Runtime }},
	{"oci.state_dir", namesDir, "ASTER_OCI_STATE_DIR", func(f *fileLayer) string { return f.root.OCI.StateDir }},
	{"oci.cache_dir", namesDir, "ASTER_OCI_CACHE_DIR", func(f *fileLayer) string { return f.root.OCI.CacheDir }},
	{"gvisor.runsc", namesProgram, "ASTER_GVISOR_RUNSC or --runsc", func(f *fileLayer) string { return f.root.GVisor.Runsc }},
	{"microvm.qemu", namesProgram, "ASTER_MICROVM_QEMU", func(f *fileLayer) string { return f.root.MicroVM.QEMU }},
	{"microvm.kernel_dir", "the kernel every microVM boots", "ASTER_MICROVM_KERNEL_DIR", func(f *fileLayer) string { return f.root.MicroVM.KernelDir }},
	{"microvm.state_dir", namesDir, "ASTER_MICROVM_STATE_DIR", func(f *fileLayer) string { return f.root.MicroVM.StateDir }},
	{"microvm.cache_dir", namesDir, "ASTER_MICROVM_CACHE_DIR", func(f *fileLayer) string { return f.root.MicroVM.CacheDir }},
	{"kubernetes.kubeconfig", "a kubeconfig, which can run credential programs on the host", "ASTER_KUBECONFIG or --kubeconfig", func(f *fileLayer) string { return f.root.Kubernetes.Kubeconfig }},
	{"llm.base_url", "an endpoint that receives the model API key", "ASTER_LLM_BASE_URL", func(f *fileLayer) string { return f.llm.BaseURL }},
	{"app.github_api_url", "an endpoint that receives the App's tokens", "ASTER_GITHUB_API_URL or --github-api-url", func(f *fileLayer) string { return f.app.GitHubAPIURL }},
	{"app.sandbox_url", "an endpoint that receives the sandbox token", "ASTER_SANDBOX_URL or --sandbox-url", func(f *fileLayer) string { return f.app.SandboxURL }},
	{"app.sandbox_token_file", namesCredential, "ASTER_SANDBOX_TOKEN_FILE or --sandbox-token-file", func(f *fileLayer) string { return f.app.SandboxTokenFile }},
	{"app.private_key_file", namesCredential, "ASTER_APP_PRIVATE_KEY_FILE or --private-key", func(f *fileLayer) string { return f.app.PrivateKeyFile }},
	{"app.webhook_secret_file", namesCredential, "ASTER_APP_WEBHOOK_SECRET_FILE or --webhook-secret-file", func(f *fileLayer) string { return f.app.WebhookSecretFile }},
	{"mcp.sandbox_url", "an endpoint that receives the sandbox token", "--sandbox-url", func(f *fileLayer) string { return f.mcp.SandboxURL }},
	{"mcp.allow_dirs", "host directories whose files a client may have read into a sandbox and sent back", "--allow-dir",
		func(f *fileLayer) string { return strings.Join(f.mcp.AllowDirs, "") }},
	{"serve.token_file", "the bearer tokens the server accepts", "ASTER_TOKEN_FILE or --token-file", func(f *fileLayer) string { return f.serve.TokenFile }},
	{"serve.runs.database_url", "a database that receives every asynchronous run and its result", "ASTER_RUNS_DATABASE_URL", func(f *fileLayer) string { return f.serve.Runs.DatabaseURL }},
	{"serve.callbacks.allow", "hosts that receive run results signed with the callback secret", "--callback-allow",
		func(f *fileLayer) string { return strings.Join(f.serve.Callbacks.Allow, "") }},
	{"serve.callbacks.secret_file", namesCredential, "--callback-secret-file", func(f *fileLayer) string { return f.serve.Callbacks.SecretFile }},
	{"tests.ca_file", "a certificate authority the install phase trusts", "", func(f *fileLayer) string { return f.tests.CAFile }},
	{"tests.cache_dir", namesDir, "", func(f *fileLayer) string { return f.tests.CacheDir }},
	{"egress.credentials", "credentials the egress relay sends to hosts, and the roots it trusts for them", "", func(f *fileLayer) string {
		var b strings.Builder
		for _, c := range f.egress.Credentials {
			b.WriteString(c.Host + c.ValueFile + c.CAFile + c.Header)
		}
		return b.String()
	}},
	{"egress.profiles", "the hosts and private ranges sessions may reach", "", func(f *fileLayer) string {
		var b strings.Builder
		for name, p := range f.egress.Profiles {
			b.WriteString(name + p.MaxBytes + p.MaxConnections)
			for _, a := range p.Allow {
				b.WriteString(a.Host + a.plain + strings.Join(a.Addresses, ""))
			}
		}
		return b.String()
	}},
	{"egress.allow", "private address ranges the install phase may reach (addresses of an entry)", "", func(f *fileLayer) string {
		var b strings.Builder
		for _, a := range f.egress.Allow {
			b.WriteString(strings.Join(a.Addresses, ""))
		}
		return b.String()
	}},
}

// HostSettingKeys lists the settings only a trusted file may give, dotted.
func HostSettingKeys() []string {
	out := make([]string, len(hostSettings))
	for i, h := range hostSettings {
		out[i] = h.key
	}
	return out
}

// newFileLayer decodes the sections of file that hold host settings. A
// section that does not decode is checked for what it did decode all the same;
// its owner reports the error when it reads it.
func newFileLayer(file Config) *fileLayer {
	f := &fileLayer{root: file}
	_ = file.decodeSection("llm", &f.llm)
	_ = file.decodeSection("app", &f.app)
	_ = file.decodeSection("mcp", &f.mcp)
	_ = file.decodeSection("serve", &f.serve)
	_ = file.decodeSection("tests", &f.tests)
	_ = file.decodeSection("egress", &f.egress)
	return f
}

// refuseHostSettings reports every host setting that file (decoded from doc,
// read from path) gives, when why says the file is not trusted.
func refuseHostSettings(path string, doc *yaml.Node, file Config, why string) error {
	layer := newFileLayer(file)
	var errs []error
	for _, h := range hostSettings {
		if strings.TrimSpace(h.value(layer)) == "" {
			continue
		}
		where := path
		if line := dottedKeyLine(doc, h.key); line > 0 {
			where = fmt.Sprintf("%s:%d", path, line)
		}
		fix := "fix the file's owner and mode"
		if h.instead != "" {
			fix = "set it with " + h.instead + " instead, or " + fix
		}
		errs = append(errs, fmt.Errorf("%s: %s (%s) is accepted only from a file that you or root own and no one else can write, and %s; %s",
			where, h.key, h.names, why, fix))
	}
	return errors.Join(errs...)
}

// fileTrust says why the file at path, whose status is fi (taken from the
// descriptor it is read through), may not give host settings: "" when the
// invoking user (uid) or root owns it and its directory, and neither can be
// written by anyone else.
func fileTrust(path string, fi fs.FileInfo, uid int) string {
	if why := ownedPrivately("the file", fi, uid, false); why != "" {
		return why
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fmt.Sprintf("its directory cannot be checked (%v)", err)
	}
	dir := filepath.Dir(real)
	di, err := os.Stat(dir)
	if err != nil {
		return fmt.Sprintf("its directory cannot be checked (%v)", err)
	}
	return ownedPrivately("its directory "+dir, di, uid, true)
}

// ownedPrivately says why what (described by fi) fails the rule, or "". A
// sticky directory writable by all passes: no one but the file's owner may
// replace the file in it.
func ownedPrivately(what string, fi fs.FileInfo, uid int, dir bool) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return what + " has no owner to check"
	}
	if int(st.Uid) != uid && st.Uid != 0 {
		return fmt.Sprintf("%s is owned by uid %d, neither you (uid %d) nor root", what, st.Uid, uid)
	}
	perm := fi.Mode().Perm()
	if perm&0o022 != 0 && !(dir && fi.Mode()&fs.ModeSticky != 0) {
		return fmt.Sprintf("%s can be written by its group or others (mode %04o)", what, perm)
	}
	return ""
}

// dottedKeyLine is the line of a key such as oci.runtime in doc, or 0.
func dottedKeyLine(doc *yaml.Node, key string) int {
	n := doc
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return 0
		}
		n = n.Content[0]
	}
	line := 0
	for _, part := range strings.Split(key, ".") {
		for n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		if n.Kind != yaml.MappingNode {
			return 0
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == part {
				line, next = n.Content[i].Line, n.Content[i+1]
			}
		}
		if next == nil {
			return 0
		}
		n = next
	}
	return line
}
