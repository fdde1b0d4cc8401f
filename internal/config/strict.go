package config

import (
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Strict configuration: a typo in aster.yaml or in an ASTER_* variable would
// otherwise be ignored silently and the default used instead, which is the
// worst outcome for a limit. Every key of the file and every ASTER_* name of
// the environment is checked here, in one place, against the types that
// decode them and the variable lists of this package.

// fileSections are the sections of aster.yaml decoded by their owners after
// Load (kept in Config.Extra); their keys are checked at load time all the
// same, so a typo fails every command, not only the one that reads it.
var fileSections = map[string]reflect.Type{
	"serve":  reflect.TypeFor[ServeConfig](),
	"app":    reflect.TypeFor[AppConfig](),
	"llm":    reflect.TypeFor[LLMConfig](),
	"pool":   reflect.TypeFor[PoolConfig](),
	"mcp":    reflect.TypeFor[MCPConfig](),
	"egress": reflect.TypeFor[EgressConfig](),
	"tests":  reflect.TypeFor[TestsConfig](),
}

// MCPConfig is the `mcp:` section of aster.yaml, for `aster mcp`. Admission,
// ceilings, the token file and the body cap come from the `serve:` section.
type MCPConfig struct {
	HTTP       string   `yaml:"http"`
	SandboxURL string   `yaml:"sandbox_url"`
	AllowDirs  []string `yaml:"allow_dirs"`
	// MaxSessions, MaxSessionsPerToken and SessionTimeout bound the sessions
	// of the streamable HTTP transport (see MCPSessions); empty is the default.
	MaxSessions         string `yaml:"max_sessions"`
	MaxSessionsPerToken string `yaml:"max_sessions_per_token"`
	SessionTimeout      string `yaml:"session_timeout"`
}

// KeyError is an unknown key of aster.yaml.
type KeyError struct {
	File string
	Line int
	// Key is the dotted path of the key, e.g. limits.timout.
	Key string
	// Suggestion is the nearest valid key at the same place (dotted), or empty.
	Suggestion string
	// Valid lists the keys allowed at that place when none is near.
	Valid []string
}

func (e *KeyError) Error() string {
	var hint string
	switch {
	case e.Suggestion != "":
		hint = fmt.Sprintf(" (did you mean %q?)", e.Suggestion)
	case len(e.Valid) > 0:
		hint = " (valid here: " + strings.Join(e.Valid, ", ") + ")"
	}
	return fmt.Sprintf("%s:%d: unknown key %q%s", e.File, e.Line, e.Key, hint)
}

// checkFileKeys reports every key of doc that no configuration type decodes.
func checkFileKeys(file string, doc *yaml.Node) error {
	root := doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return nil
		}
		root = root.Content[0]
	}
	var errs []error
	fields := yamlFields(reflect.TypeFor[Config]())
	for name, t := range fileSections {
		fields[name] = t
	}
	checkMapping(file, root, fields, "", &errs)
	return errors.Join(errs...)
}

var unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()

// checkNode checks n against the type t that will decode it. Shapes that do
// not match t are left to the decoder, which reports them with their line.
func checkNode(file string, n *yaml.Node, t reflect.Type, path string, errs *[]error) {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeFor[yaml.Node]() || reflect.PointerTo(t).Implements(unmarshalerType) {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind == yaml.MappingNode {
			checkMapping(file, n, yamlFields(t), path, errs)
		}
	case reflect.Map:
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				checkNode(file, n.Content[i+1], t.Elem(), join(path, n.Content[i].Value), errs)
			}
		}
	case reflect.Slice, reflect.Array:
		if n.Kind == yaml.SequenceNode {
			for _, el := range n.Content {
				checkNode(file, el, t.Elem(), path+"[]", errs)
			}
		}
	}
}

func checkMapping(file string, n *yaml.Node, fields map[string]reflect.Type, path string, errs *[]error) {
	if n.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Tag == "!!merge" || k.Value == "<<" {
			continue
		}
		if t, ok := fields[k.Value]; ok {
			checkNode(file, v, t, join(path, k.Value), errs)
			continue
		}
		names := make([]string, 0, len(fields))
		for name := range fields {
			names = append(names, name)
		}
		sort.Strings(names)
		e := &KeyError{File: file, Line: k.Line, Key: join(path, k.Value)}
		if s := Nearest(k.Value, names); s != "" {
			e.Suggestion = join(path, s)
		} else {
			e.Valid = names
		}
		*errs = append(*errs, e)
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// yamlFields returns the keys a struct decodes, by their yaml names (inline
// structs flattened; an inline map, such as Config.Extra, adds none).
func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if slices.Contains(strings.Split(opts, ","), "inline") {
			if f.Type.Kind() == reflect.Struct {
				for k, v := range yamlFields(f.Type) {
					out[k] = v
				}
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name) // yaml.v3's default
		}
		out[name] = f.Type
	}
	return out
}

// Nearest returns the candidate closest to s by edit distance (letter case
// ignored), if it is close enough to be a plausible typo; else "".
func Nearest(s string, candidates []string) string {
	best, bestD := "", -1
	ls := strings.ToLower(s)
	for _, c := range candidates {
		d := editDistance(ls, strings.ToLower(c))
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	// One edit in three characters, at least one and at most three.
	if bestD < 0 || bestD > min(3, max(1, len(s)/3)) {
		return ""
	}
	return best
}

// editDistance is the edit distance of a and b in bytes, counting an
// insertion, a deletion, a substitution or a swap of two neighbours (the
// commonest typo) as one edit.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// LogLevels are the values of log_level, --log-level and ASTER_LOG_LEVEL.
var LogLevels = []string{"debug", "info", "warn", "error"}

// ParseLogLevel reads a log level (letter case ignored; "warning" is warn).
func ParseLogLevel(s string) (slog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	msg := fmt.Sprintf("log level %q: want debug, info, warn or error", s)
	if n := Nearest(strings.TrimSpace(s), append(slices.Clone(LogLevels), "warning")); n != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", n)
	}
	return slog.LevelInfo, errors.New(msg)
}

// LogFormats are the values of log_format, --log-format and ASTER_LOG_FORMAT.
var LogFormats = []string{"text", "json"}

// ParseLogFormat reads a log format (letter case ignored): "text" or "json".
func ParseLogFormat(s string) (string, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	if slices.Contains(LogFormats, v) {
		return v, nil
	}
	msg := fmt.Sprintf("log format %q: want text or json", s)
	if n := Nearest(strings.TrimSpace(s), LogFormats); n != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", n)
	}
	return "", errors.New(msg)
}

// NonConfigEnvVars are the ASTER_* names that are not configuration but are
// set where aster runs, so they are accepted: the repository's scripts and
// test harnesses export them (aster itself reads none of them but
// ASTER_SERVER, the client commands' server), and the
// README's examples keep a bearer token in ASTER_TOKEN. Besides these, every
// name under ReservedEnvPrefixes is accepted.
var NonConfigEnvVars = map[string]string{
	"ASTER_TOKEN": "the README's examples keep a bearer token here for curl",
	// Read by `aster session` (a client of a server), not configuration.
	"ASTER_SERVER": "aster session: the URL of the server that holds the sessions",
	// scripts/k8s (the local Kubernetes test cluster) and its tests.
	"ASTER_ETCD_VERSION":                "scripts/k8s: etcd version to build",
	"ASTER_K8S_API_PORT":                "scripts/k8s: API server port",
	"ASTER_K8S_BUILD_JOBS":              "scripts/k8s: parallel build jobs",
	"ASTER_K8S_CACHE":                   "scripts/k8s: build cache directory",
	"ASTER_K8S_CI_PACKAGES":             "scripts/k8s: CI packages",
	"ASTER_K8S_CNI_BRIDGE":              "scripts/k8s: CNI bridge name",
	"ASTER_K8S_COMPONENTS":              "scripts/k8s: built components directory",
	"ASTER_K8S_CONTAINERD_SOCK":         "Kubernetes tests: containerd socket",
	"ASTER_K8S_CONTROLLER_MANAGER_PORT": "scripts/k8s: controller manager port",
	"ASTER_K8S_ETCD_CLIENT_PORT":        "scripts/k8s: etcd client port",
	"ASTER_K8S_ETCD_PEER_PORT":          "scripts/k8s: etcd peer port",
	"ASTER_K8S_HELPER_NAMESPACE":        "Kubernetes tests: helper namespace",
	"ASTER_K8S_KUBECONFIG":              "scripts/k8s and its tests: the test cluster's kubeconfig",
	"ASTER_K8S_KUBELET_HEALTHZ_PORT":    "scripts/k8s: kubelet healthz port",
	"ASTER_K8S_KUBELET_PORT":            "scripts/k8s: kubelet port",
	"ASTER_K8S_LOGS":                    "scripts/k8s: log directory",
	"ASTER_K8S_POD_LOGS_SIZE":           "scripts/k8s: container log size",
	"ASTER_K8S_POD_PIDS_LIMIT":          "scripts/k8s: pod pids limit",
	"ASTER_K8S_POD_SUBNET":              "scripts/k8s: pod subnet",
	"ASTER_K8S_RUN":                     "scripts/k8s: run directory",
	"ASTER_K8S_SANDBOX_IMAGE":           "scripts/k8s: sandbox image loaded into the cluster",
	"ASTER_K8S_SCHEDULER_PORT":          "scripts/k8s: scheduler port",
	"ASTER_K8S_SCRIPTS":                 "scripts/k8s: scripts directory",
	"ASTER_K8S_SERVICE_SUBNET":          "scripts/k8s: service subnet",
	"ASTER_K8S_SKIP_SMOKE":              "scripts/k8s: skip the smoke test",
	"ASTER_K8S_STATE":                   "scripts/k8s: state directory",
	"ASTER_K8S_VERSION":                 "scripts/k8s: Kubernetes version to build",
	// scripts/gitea/build.sh (the Gitea the forge tests run against).
	"ASTER_GITEA_CACHE":      "scripts/gitea: build cache directory",
	"ASTER_GITEA_VERSION":    "scripts/gitea: Gitea version to build",
	"ASTER_GITEA_BUILD_JOBS": "scripts/gitea: parallel build jobs",
	// Other scripts and test harnesses.
	"ASTER_BENCH_BIN":          "body-memory benchmark: a prebuilt aster binary",
	"ASTER_MCP_PORT":           "scripts/mcp-conformance.sh: port",
	"ASTER_OCI_HELPER_STATE":   "oci tests: helper process state",
	"ASTER_OCI_HELPER_GVISOR":  "oci tests: the helper process runs gVisor",
	"ASTER_OCI_PROBE":          "oci latency probe",
	"ASTER_MICROVM_BOOT_PROBE": "microvm boot probe: how many VMs to boot",
	"ASTER_OCI_STATE_PARENT":   "oci tests: parent of per-test state directories",
	"ASTER_RUNSC_CURRENT":      "scripts/setup.sh: also build the current runsc (gVisor) from the Go module proxy",
	"ASTER_OCTOKIT_DIR":        "GitHub fake: directory of GitHub's OpenAPI description",
	"ASTER_PG_DIR":             "scripts/postgres-test.sh: data directory",
	"ASTER_PG_PORT":            "scripts/postgres-test.sh: port",
	"ASTER_STORE_CRASH_CLIENT": "store crash test: helper process",
	"ASTER_STORE_CRASH_HELPER": "store crash test: helper process",
}

// ReservedEnvPrefixes are ASTER_* prefixes reserved for tests (ASTER_TEST_*,
// ASTER_REQUIRE_DOCKER, ...); aster accepts and ignores them.
var ReservedEnvPrefixes = []string{"ASTER_TEST_", "ASTER_REQUIRE_"}

// serviceLink matches the variables Kubernetes puts in every container for
// each Service of its namespace (unless enableServiceLinks is false): a
// Service named aster-app gives ASTER_APP_SERVICE_HOST, ASTER_APP_PORT,
// ASTER_APP_PORT_8090_TCP_ADDR, ... Refusing them would stop aster from
// starting next to a Service whose name begins with aster.
var serviceLink = regexp.MustCompile(`^ASTER_[A-Z0-9_]*_(SERVICE_HOST|SERVICE_PORT(_[A-Z0-9_]+)?|PORT(_[0-9]+_(TCP|UDP|SCTP)(_(PROTO|PORT|ADDR))?)?)$`)

// ConfigEnvVars returns every ASTER_* variable that is configuration, with
// its meaning: the union of this package's variable lists.
func ConfigEnvVars() map[string]string {
	var (
		c    Config
		serv ServeConfig
		app  AppConfig
		llm  LLMConfig
		pool PoolConfig
		mcp  MCPConfig
	)
	return describe(loaderEnvVars(), c.envVars(), serv.envVars(), app.envVars(), llm.envVars(), pool.envVars(), mcp.envVars())
}

// CheckEnv reports every ASTER_* variable of environ (os.Environ's form,
// KEY=VALUE) that is neither configuration nor in NonConfigEnvVars nor under
// a reserved prefix, with the nearest configuration name.
func CheckEnv(environ []string) error {
	known := ConfigEnvVars()
	var names []string
	for k := range known {
		names = append(names, k)
	}
	sort.Strings(names)
	var errs []error
	seen := map[string]bool{}
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "ASTER_") || seen[k] {
			continue
		}
		seen[k] = true
		if _, ok := known[k]; ok {
			continue
		}
		if _, ok := NonConfigEnvVars[k]; ok {
			continue
		}
		if slices.ContainsFunc(ReservedEnvPrefixes, func(p string) bool { return strings.HasPrefix(k, p) }) || serviceLink.MatchString(k) {
			continue
		}
		msg := fmt.Sprintf("unknown environment variable %s", k)
		if n := Nearest(strings.TrimPrefix(k, "ASTER_"), trimAll(names, "ASTER_")); n != "" {
			msg += fmt.Sprintf(" (did you mean ASTER_%s?)", n)
		}
		errs = append(errs, errors.New(msg+"; unset it or correct its name"))
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errors.Join(errs...)
}

func trimAll(ss []string, prefix string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strings.TrimPrefix(s, prefix)
	}
	return out
}
