package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/sandbox/reaper"
	"github.com/asterhq/aster/internal/units"
)

// Config is Aster's whole configuration. Precedence, lowest first: the
// defaults here, one aster.yaml (Load says which), ASTER_* environment
// variables, command-line flags.
type Config struct {
	// Runtime names the sandbox runtime: "docker", "oci", "gvisor", "kubernetes" or "microvm".
	Runtime string `yaml:"runtime"`
	// DockerHost is the engine address; empty uses DOCKER_HOST or the default socket.
	DockerHost string `yaml:"docker_host"`
	// EngineRuntime selects an engine runtime such as runsc (gVisor).
	EngineRuntime string `yaml:"engine_runtime"`
	// OCI configures the direct OCI runtime (--runtime oci); see oci.go.
	OCI OCIConfig `yaml:"oci"`
	// GVisor configures the gVisor runtime (--runtime gvisor); see gvisor.go.
	GVisor GVisorConfig `yaml:"gvisor"`
	// Kubernetes configures the Kubernetes runtime (--runtime kubernetes); see kubernetes.go.
	Kubernetes KubernetesConfig `yaml:"kubernetes"`
	// MicroVM configures the microVM runtime (--runtime microvm); see microvm.go.
	MicroVM MicroVMConfig `yaml:"microvm"`
	// InitPath is the host path of the aster-init binary.
	InitPath string `yaml:"init_path"`
	// Images is the image allowlist; the first is the default.
	Images []string `yaml:"images"`
	// Limits are the defaults for every run, in human units.
	Limits LimitsConfig `yaml:"limits"`
	Reaper ReaperConfig `yaml:"reaper"`
	// HostTasks is the host task budget of the sandboxes of runtimes on
	// this host (oci, gvisor): a number, or "auto"/empty for what the host
	// affords; see hosttasks.go.
	HostTasks string `yaml:"host_tasks"`
	// Labels are added to every sandbox (for operators' own selection); the
	// aster.* labels cannot be overridden.
	Labels map[string]string `yaml:"labels"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `yaml:"log_level"`
	// LogFormat is text (key=value lines) or json (one object per line).
	LogFormat string `yaml:"log_format"`

	// Source is where the file layer came from (set by Load; no file sets it).
	Source Source `yaml:"-"`

	// Extra holds the sections other commands read (serve, app, llm, ...),
	// decoded by their owners.
	Extra map[string]yaml.Node `yaml:",inline"`
}

// LimitsConfig is Limits as a person writes them.
type LimitsConfig struct {
	Timeout       string `yaml:"timeout"`
	Memory        string `yaml:"memory"`
	CPUs          string `yaml:"cpus"`
	Pids          string `yaml:"pids"`
	OutputLimit   string `yaml:"output_limit"`
	OutputCeiling string `yaml:"output_ceiling"`
	WorkdirSize   string `yaml:"workdir_size"`
	TmpSize       string `yaml:"tmp_size"`
}

// DefaultLimitsConfig returns DefaultLimits as a person writes them: the
// limits: section of Default, and the defaults aster exec's help states.
func DefaultLimitsConfig() LimitsConfig {
	return LimitsConfig{
		Timeout:       "30s",
		Memory:        "512m",
		CPUs:          "1",
		Pids:          "128",
		OutputLimit:   "1m",
		OutputCeiling: "64m",
		WorkdirSize:   "256m",
		TmpSize:       "64m",
	}
}

// DefaultAnalyzerParallel is how many analyzers one review runs at once
// (--parallel of aster review, app serve and bench review): the host's CPUs,
// at least 2 and at most 4. Each analyzer's sandbox has one CPU, and most of
// a large review is CPU: more sandboxes than cores only share the cores out,
// stretching the longest analyzer (docs/performance.md, "Gate speed").
var DefaultAnalyzerParallel = min(max(runtime.NumCPU(), 2), 4)

// MaxAnalyzerParallel is the most --parallel accepts.
const MaxAnalyzerParallel = 32

// Defaults of the reaper (`reaper:` in aster.yaml, --reaper-grace and
// --reaper-period): the reaper package's own.
const (
	DefaultReaperGrace     = reaper.DefaultGrace     // how long past its deadline label a sandbox is left alone
	DefaultReaperPeriod    = reaper.DefaultPeriod    // how often a long-running command reaps
	DefaultReaperAllowance = reaper.DefaultAllowance // added to a deadline label for creation and teardown
)

// ReaperConfig tunes the leaked-sandbox reaper.
type ReaperConfig struct {
	Grace  string `yaml:"grace"`
	Period string `yaml:"period"`
	// Allowance is added to every sandbox's deadline label to cover its
	// creation and teardown on a busy engine.
	Allowance string `yaml:"allowance"`
}

// Default returns the configuration with every default filled in.
func Default() Config {
	return Config{
		Runtime:   "docker",
		Images:    []string{DefaultImage},
		LogLevel:  "info",
		LogFormat: "text",
		Limits:    DefaultLimitsConfig(),
		Reaper:    ReaperConfig{Grace: units.FormatDuration(DefaultReaperGrace), Period: units.FormatDuration(DefaultReaperPeriod), Allowance: units.FormatDuration(DefaultReaperAllowance)},
		OCI:       DefaultOCI(),
		GVisor:    DefaultGVisor(),

		Kubernetes: DefaultKubernetes(),
		MicroVM:    DefaultMicroVM(),
	}
}

// Load builds the configuration from the defaults, one configuration file and
// the environment (getenv, usually os.Getenv). The file is path (--config) when
// given, else $ASTER_CONFIG, else the user's (UserConfigFile), else the
// system's (SystemConfigFile), each of the last two only if present; never
// one from the working directory (Source.IgnoredWorkdir says when one is there).
// A file that fails the ownership rule (trust.go) may not give host settings.
func Load(path string, getenv func(string) string) (Config, error) {
	return processLoadEnv().load(path, getenv)
}

func (e loadEnv) load(path string, getenv func(string) string) (Config, error) {
	c := Default()
	src, explicit := e.find(path, getenv)
	path = src.File
	logLine := 0
	if path != "" {
		b, why, err := readConfigFile(path, e.uid)
		switch {
		case err == nil:
			src.Trusted = why == ""
			if logLine, err = decodeTrusted(path, b, &c, why); err != nil {
				var ke *KeyError
				if errors.As(err, &ke) || errors.Is(err, errHostSetting) {
					return c, err // names the file and line already
				}
				return c, fmt.Errorf("config %s: %w", path, err)
			}
		case explicit || !errors.Is(err, fs.ErrNotExist):
			return c, fmt.Errorf("config: %w", err)
		default:
			src = Source{}
		}
	}
	src.IgnoredWorkdir = e.ignoredWorkdir(src.File)
	c.Source = src
	fileLevel := c.LogLevel
	if err := applyEnvVars(getenv, c.envVars()); err != nil {
		return c, err
	}
	if _, err := ParseLogLevel(c.LogLevel); err != nil {
		if v := getenv("ASTER_LOG_LEVEL"); strings.TrimSpace(v) != "" {
			return c, fmt.Errorf("ASTER_LOG_LEVEL: %w", err)
		}
		if logLine > 0 && c.LogLevel == fileLevel {
			return c, fmt.Errorf("%s:%d: log_level: %w", path, logLine, err)
		}
		return c, fmt.Errorf("log_level: %w", err)
	}
	if _, err := ParseLogFormat(c.LogFormat); err != nil {
		if v := getenv("ASTER_LOG_FORMAT"); strings.TrimSpace(v) != "" {
			return c, fmt.Errorf("ASTER_LOG_FORMAT: %w", err)
		}
		return c, fmt.Errorf("log_format: %w", err)
	}
	if err := c.GVisor.Validate(); err != nil {
		if v := getenv("ASTER_GVISOR_PLATFORM"); strings.TrimSpace(v) != "" {
			return c, fmt.Errorf("ASTER_GVISOR_PLATFORM: %w", err)
		}
		return c, err
	}
	return c, nil
}

// maxConfigBytes caps a configuration file.
const maxConfigBytes = 1 << 20

// readConfigFile reads the file at path through one descriptor, so that the
// bytes read and the ownership checked are the same file's; why is "" when
// the file passes the ownership rule for uid, else the reason it does not.
func readConfigFile(path string, uid int) (b []byte, why string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, "", err
	}
	if !fi.Mode().IsRegular() {
		return nil, "", fmt.Errorf("%s is not a regular file", path)
	}
	if b, err = io.ReadAll(io.LimitReader(f, maxConfigBytes+1)); err != nil {
		return nil, "", err
	}
	return b, fileTrust(path, fi, uid), nil
}

// errHostSetting marks the refusal of a host setting from an untrusted file.
var errHostSetting = errors.New("host setting from an untrusted file")

// decodeTrusted is decodeFile, and the refusal of every host setting the file
// gives when why says it is not trusted.
func decodeTrusted(name string, b []byte, c *Config, why string) (logLine int, err error) {
	doc, err := parseFile(b)
	if err != nil || doc == nil {
		return 0, err
	}
	file, logLine, err := decodeDoc(name, doc, c)
	if err != nil {
		return 0, err
	}
	if why != "" {
		if err := refuseHostSettings(name, doc, file, why); err != nil {
			return 0, &hostSettingError{err}
		}
	}
	return logLine, nil
}

// hostSettingError is the refusal of host settings from an untrusted file.
type hostSettingError struct{ err error }

func (e *hostSettingError) Error() string { return e.err.Error() }
func (e *hostSettingError) Unwrap() error { return errHostSetting }

// decodeFile merges the file's settings into c after checking that it has no
// unknown key; it returns the line of log_level (0: absent).
func decodeFile(name string, b []byte, c *Config) (logLine int, err error) {
	doc, err := parseFile(b)
	if err != nil || doc == nil {
		return 0, err
	}
	_, logLine, err = decodeDoc(name, doc, c)
	return logLine, err
}

// parseFile parses a configuration file; an empty one is a nil document.
func parseFile(b []byte) (*yaml.Node, error) {
	if len(b) > maxConfigBytes {
		return nil, errors.New("file is larger than 1 MiB")
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	if doc.Kind == 0 {
		return nil, nil // an empty file
	}
	return &doc, nil
}

// decodeDoc checks doc's keys and merges its settings into c; it returns what
// the file alone sets, and the line of log_level (0: absent).
func decodeDoc(name string, doc *yaml.Node, c *Config) (file Config, logLine int, err error) {
	if err := checkFileKeys(name, doc); err != nil {
		return file, 0, err
	}
	if err := doc.Decode(&file); err != nil {
		return file, 0, err
	}
	overlay(reflect.ValueOf(c).Elem(), reflect.ValueOf(file))
	return file, keyLine(doc, "log_level"), nil
}

// keyLine is the line of a top-level key of doc, or 0.
func keyLine(doc *yaml.Node, key string) int {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return 0
	}
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i].Line
		}
	}
	return 0
}

// overlay copies every field of src that is set over the same field of dst,
// section by section: a non-empty string, list or map replaces dst's. It
// walks the struct, so a field added to Config or to one of its sections
// needs no line here; a field of a kind it has no rule for panics at once
// (the config tests load a file that sets every section).
func overlay(dst, src reflect.Value) {
	for i := range src.NumField() {
		if src.Type().Field(i).Tag.Get("yaml") == "-" {
			continue // not a setting
		}
		d, s := dst.Field(i), src.Field(i)
		switch s.Kind() {
		case reflect.Struct:
			overlay(d, s)
		case reflect.String, reflect.Slice, reflect.Map:
			if s.Len() > 0 {
				d.Set(s)
			}
		default:
			panic("config: overlay has no rule for " + src.Type().Field(i).Name + " (" + s.Type().String() + ")")
		}
	}
}

// envVars are the variables Load reads, bound to the fields of c (the
// runtimes' sections included).
func (c *Config) envVars() []envVar {
	root := []envVar{
		str("ASTER_RUNTIME", &c.Runtime, "sandbox runtime (docker, oci, gvisor, kubernetes or microvm)"),
		str("ASTER_DOCKER_HOST", &c.DockerHost, "engine address (default: DOCKER_HOST or the local socket)"),
		str("ASTER_ENGINE_RUNTIME", &c.EngineRuntime, "engine runtime, e.g. runsc for gVisor"),
		str("ASTER_INIT_PATH", &c.InitPath, "path of the aster-init binary"),
		str("ASTER_LOG_LEVEL", &c.LogLevel, "debug, info, warn or error"),
		str("ASTER_LOG_FORMAT", &c.LogFormat, "text or json"),
		parsed("ASTER_IMAGES", func(v string) error { c.Images = SplitList(v); return nil },
			"comma-separated image allowlist; the first is the default"),
		str("ASTER_TIMEOUT", &c.Limits.Timeout, "default wall-clock timeout"),
		str("ASTER_MEMORY", &c.Limits.Memory, "default memory limit"),
		str("ASTER_CPUS", &c.Limits.CPUs, "default CPU limit"),
		str("ASTER_PIDS", &c.Limits.Pids, "default process limit"),
		str("ASTER_OUTPUT_LIMIT", &c.Limits.OutputLimit, "default bytes kept per output stream"),
		str("ASTER_OUTPUT_CEILING", &c.Limits.OutputCeiling, "default per-stream ceiling that ends a job"),
		str("ASTER_WORKDIR_SIZE", &c.Limits.WorkdirSize, "default size of /work"),
		str("ASTER_TMP_SIZE", &c.Limits.TmpSize, "default size of /tmp"),
		str("ASTER_REAPER_GRACE", &c.Reaper.Grace, "how long past its deadline a sandbox is left alone"),
		str("ASTER_REAPER_PERIOD", &c.Reaper.Period, "how often long-running commands reap"),
		str("ASTER_REAPER_ALLOWANCE", &c.Reaper.Allowance, "time added to every sandbox deadline for create and teardown"),
		str("ASTER_HOST_TASKS", &c.HostTasks, "host tasks the oci and gvisor sandboxes may create together (auto: from threads-max and pid_max)"),
		parsed("ASTER_LABELS", c.setLabels, "extra sandbox labels, k=v,k2=v2"),
	}
	return slices.Concat(root, c.OCI.envVars(), c.GVisor.envVars(), c.Kubernetes.envVars(), c.MicroVM.envVars())
}

// setLabels replaces c's labels with those of a k=v,k2=v2 list.
func (c *Config) setLabels(v string) error {
	c.Labels = map[string]string{}
	for _, kv := range SplitList(v) {
		k, val, _ := strings.Cut(kv, "=")
		c.Labels[strings.TrimSpace(k)] = strings.TrimSpace(val)
	}
	return nil
}

// fillBlank sets *dst to v where *dst is blank: a default under what was set.
func fillBlank(dst *string, v string) {
	if strings.TrimSpace(*dst) == "" {
		*dst = v
	}
}

// decodeSection decodes the named section of aster.yaml (kept in Extra for
// its owner) into v; an absent section leaves v as it is.
func (c Config) decodeSection(name string, v any) error {
	node, ok := c.Extra[name]
	if !ok {
		return nil
	}
	if err := node.Decode(v); err != nil {
		return fmt.Errorf("config %s section: %w", name, err)
	}
	return nil
}

// envSection is a section of aster.yaml whose fields ASTER_* variables can set.
type envSection interface{ envVars() []envVar }

// loadSection decodes the named section into v, then applies v's ASTER_*
// variables over it: the file first, the environment over the file.
func (c Config) loadSection(name string, v envSection, getenv func(string) string) error {
	if err := c.decodeSection(name, v); err != nil {
		return err
	}
	return applyEnvVars(getenv, v.envVars())
}

// SplitList splits a comma-separated list, dropping blanks.
func SplitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// SandboxLimits parses the limits section into sandbox.Limits and validates them.
func (c Config) SandboxLimits() (sandbox.Limits, error) {
	return c.Limits.Parse()
}

// ReaperDurations parses the reaper section.
func (c Config) ReaperDurations() (grace, period time.Duration, err error) {
	if grace, err = units.ParseDuration(c.Reaper.Grace); err != nil {
		return 0, 0, fmt.Errorf("reaper grace: %w", err)
	}
	if period, err = units.ParseDuration(c.Reaper.Period); err != nil {
		return 0, 0, fmt.Errorf("reaper period: %w", err)
	}
	if period < time.Second {
		return 0, 0, fmt.Errorf("reaper period %s is under a second", period)
	}
	return grace, period, nil
}

// ReaperAllowance parses reaper.allowance.
func (c Config) ReaperAllowance() (time.Duration, error) {
	d, err := units.ParseDuration(c.Reaper.Allowance)
	if err != nil {
		return 0, fmt.Errorf("reaper allowance: %w", err)
	}
	return d, nil
}

// ResolveInitPath finds aster-init: the configured path, else next to the
// running executable. Never in the working directory: a repository's
// bin/aster-init would start every sandbox (SECURITY.md O1).
func (c Config) ResolveInitPath() (string, error) {
	if c.InitPath != "" {
		return c.InitPath, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("aster-init: where aster runs from is unknown (%v); set --init-path or ASTER_INIT_PATH", err)
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	p := filepath.Join(filepath.Dir(exe), "aster-init")
	if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
		return p, nil
	}
	return "", fmt.Errorf("aster-init not found next to aster (looked at %s); run `make build` (it builds both into bin/) or set --init-path / ASTER_INIT_PATH", p)
}
