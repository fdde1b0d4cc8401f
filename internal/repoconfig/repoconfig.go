// Package repoconfig is the schema and loader of a repository's .aster.yml:
// which analyzers run (built-ins switched off or adjusted, extra ones added),
// which paths are ignored, the test command, the severity that fails the
// check, the filter mode and instructions for the model. Aster reads it from
// the BASE revision of a change only, so a change cannot alter how it is
// reviewed. The file is untrusted input: it is size-capped, unknown fields
// are errors, and every value is bounded.
package repoconfig

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/asterhq/aster/internal/finding"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/testrun"
	"github.com/asterhq/aster/internal/units"
)

// FileName is where the configuration lives in a repository.
const FileName = ".aster.yml"

// Caps on the file and its values.
const (
	MaxFileBytes         = 64 << 10
	MaxAnalyzers         = 32
	MaxIgnoreGlobs       = 256
	MaxInstructionsBytes = 8 << 10
	MaxTestArgs          = 64
	MaxTestTimeout       = time.Hour
	// DefaultMaxFileBytes is the largest file given to analyzers; bigger
	// files are skipped and listed in the report.
	DefaultMaxFileBytes = 1 << 20
	MaxMaxFileBytes     = 64 << 20
)

// Config is the parsed .aster.yml.
type Config struct {
	// Version of the schema; 1 (or absent).
	Version int `yaml:"version" json:"version"`
	// Analyzers adjusts built-ins by name (enabled: false, or any field to
	// replace) and adds new ones (name → full definition).
	Analyzers map[string]AnalyzerConfig `yaml:"analyzers" json:"analyzers,omitempty"`
	Paths     Paths                     `yaml:"paths" json:"paths"`
	Tests     Tests                     `yaml:"tests" json:"tests"`
	// FailOn is the least severity of a reported finding that fails the
	// check: error (default), warning, note or never.
	FailOn string `yaml:"fail_on" json:"fail_on,omitempty"`
	// FilterMode is added (default), diff_context, file or nofilter.
	FilterMode string `yaml:"filter_mode" json:"filter_mode,omitempty"`
	// Instructions are given to the model (as the repository owner's
	// guidance, still framed as data).
	Instructions string `yaml:"instructions" json:"instructions,omitempty"`
	Limits       Limits `yaml:"limits" json:"limits"`
	// Classes change the path classes (tests, fixtures, docs, examples,
	// vendored, generated): how each is recognised and what is suppressed in
	// it. Absent classes keep their conventions.
	Classes map[string]ClassConfig `yaml:"classes" json:"classes,omitempty"`
	// Model configures the model step (model.go).
	Model ModelConfig `yaml:"model" json:"model"`

	// parsed holds the values above parsed, set by Parse and Default: the
	// accessors read it. A Config built in code has none, and its accessors
	// parse what they need. A parsed Config is read-only.
	parsed *settings
}

// settings are a Config's string values parsed into the types the review
// uses, once.
type settings struct {
	failOn      finding.Severity // "" for never
	mode        gate.Mode
	ignore      gate.Globs
	testTimeout time.Duration // when tests.timeout is set
	maxFileSize int64
	policy      *gate.Policy
	policyErr   error
}

// ClassConfig changes one path class.
type ClassConfig struct {
	// Paths, when set, replace the class's conventional globs ([] turns
	// the class off); ExtraPaths are added to them.
	Paths      []string `yaml:"paths" json:"paths,omitempty"`
	ExtraPaths []string `yaml:"extra_paths" json:"extra_paths,omitempty"`
	// Suppress, when set, replaces the class's default selectors: categories
	// (assert, secret, cloud-key, all) or analyzer/rule globs. [] reports
	// everything in the class.
	Suppress []string `yaml:"suppress" json:"suppress,omitempty"`
}

// Paths selects files.
type Paths struct {
	// Ignore globs: matching files are neither analysed nor reviewed.
	Ignore []string `yaml:"ignore" json:"ignore,omitempty"`
}

// Tests configures the test step (aster review --tests).
type Tests struct {
	// Command is the test argv; a string is run with sh -c. Empty means
	// detected from the repository (go.mod, pytest, package.json).
	Command Command `yaml:"command" json:"command,omitempty"`
	Timeout string  `yaml:"timeout" json:"timeout,omitempty"`
	// Setup is the dependency step, an argv or a string run by sh -c, run
	// in an install phase whose only way out is the operator's egress
	// relay; absent means detected (npm, go mod download, pip), [] none.
	Setup Command `yaml:"setup" json:"setup,omitempty"`
}

// Limits bound what the gate looks at.
type Limits struct {
	// MaxFileBytes: larger files are skipped ("1m", default 1 MiB).
	MaxFileBytes string `yaml:"max_file_bytes" json:"max_file_bytes,omitempty"`
}

// Command is an argv written as a YAML list, or a string run by sh -c.
type Command []string

// UnmarshalYAML accepts a list of strings or one string.
func (c *Command) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		var s string
		if err := n.Decode(&s); err != nil {
			return err
		}
		if strings.TrimSpace(s) == "" {
			*c = nil
			return nil
		}
		*c = Command{"sh", "-c", s}
		return nil
	case yaml.SequenceNode:
		list := []string{} // [] is an empty command, not an absent one
		if err := n.Decode(&list); err != nil {
			return err
		}
		*c = list
		return nil
	}
	return fmt.Errorf("line %d: command must be a string or a list of strings", n.Line)
}

// AnalyzerConfig is one entry of analyzers:. For a built-in, set fields
// replace the built-in's; for a new name, command and format are required.
type AnalyzerConfig struct {
	Enabled     *bool             `yaml:"enabled" json:"enabled,omitempty"`
	Image       string            `yaml:"image" json:"image,omitempty"`
	Command     []string          `yaml:"command" json:"command,omitempty"`
	Input       string            `yaml:"input" json:"input,omitempty"`
	Format      string            `yaml:"format" json:"format,omitempty"`
	Files       []string          `yaml:"files" json:"files,omitempty"`
	Requires    []string          `yaml:"requires" json:"requires,omitempty"`
	Shells      []string          `yaml:"shells" json:"shells,omitempty"`
	OKExitCodes []int             `yaml:"ok_exit_codes" json:"ok_exit_codes,omitempty"`
	Optional    *bool             `yaml:"optional" json:"optional,omitempty"`
	Severity    string            `yaml:"severity" json:"severity,omitempty"`
	Timeout     string            `yaml:"timeout" json:"timeout,omitempty"`
	Memory      string            `yaml:"memory" json:"memory,omitempty"`
	Env         map[string]string `yaml:"env" json:"env,omitempty"`
}

// Default is the configuration of a repository without .aster.yml.
func Default() Config {
	c := Config{Version: 1}
	s, _ := c.parse()
	c.parsed = &s
	return c
}

// ErrInvalid marks a configuration that cannot be used.
var ErrInvalid = errors.New("invalid " + FileName)

// Parse reads and validates .aster.yml content.
func Parse(data []byte) (Config, error) {
	if len(data) > MaxFileBytes {
		return Config{}, fmt.Errorf("%w: %d bytes, more than %d", ErrInvalid, len(data), MaxFileBytes)
	}
	c := Default()
	if len(bytes.TrimSpace(data)) == 0 {
		return c, nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); errors.Is(err, io.EOF) {
		return c, nil // only comments
	} else if err != nil {
		return Config{}, fmt.Errorf("%w: %s", ErrInvalid, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return Config{}, fmt.Errorf("%w: more than one YAML document", ErrInvalid)
	}
	if c.Version == 0 {
		c.Version = 1
	}
	st, err := c.parse()
	if err != nil {
		return Config{}, err
	}
	c.parsed = &st
	return c, nil
}

// Validate checks every value and says which one is wrong.
func (c Config) Validate() error {
	_, err := c.parse()
	return err
}

// parse checks every value, in order, and parses each into settings. The
// error is the first wrong value's; the settings are filled regardless, each
// value on its own (what a wrong one gives is of no use).
func (c Config) parse() (settings, error) {
	var st settings
	var first error
	bad := func(format string, args ...any) {
		if first == nil {
			first = fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
		}
	}
	fail := func(err error) {
		if first == nil {
			first = err
		}
	}
	if c.Version != 1 {
		bad("version %d is not supported (use 1)", c.Version)
	}
	switch c.FailOn {
	case "":
		st.failOn = finding.Error
	case "never":
	default:
		sev, err := finding.ParseSeverity(c.FailOn)
		if err != nil {
			bad("fail_on: %q is not error, warning, note or never", c.FailOn)
		}
		st.failOn = sev
	}
	mode, err := gate.ParseMode(c.FilterMode)
	if err != nil {
		bad("filter_mode: %v", err)
	}
	st.mode = mode
	if len(c.Paths.Ignore) > MaxIgnoreGlobs {
		bad("paths.ignore has %d globs, more than %d", len(c.Paths.Ignore), MaxIgnoreGlobs)
	}
	ignore, err := gate.CompileGlobs(c.Paths.Ignore)
	if err != nil {
		bad("paths.ignore: %v", err)
	}
	st.ignore = ignore
	if len(c.Instructions) > MaxInstructionsBytes {
		bad("instructions are %d bytes, more than %d", len(c.Instructions), MaxInstructionsBytes)
	}
	if len(c.Tests.Command) > MaxTestArgs {
		bad("tests.command has more than %d arguments", MaxTestArgs)
	}
	for _, a := range c.Tests.Command {
		if len(a) > 4096 || strings.ContainsRune(a, 0) {
			bad("tests.command: an argument is too long or contains NUL")
			break
		}
	}
	if err := testrun.ValidateSetup(c.Tests.Setup); err != nil {
		bad("tests.%v", err)
	}
	if c.Tests.Timeout != "" {
		d, err := units.ParseDuration(c.Tests.Timeout)
		if err != nil || d < time.Second || d > MaxTestTimeout {
			bad("tests.timeout %q must be a duration from 1s to %s", c.Tests.Timeout, MaxTestTimeout)
		}
		st.testTimeout = d
	}
	st.maxFileSize = DefaultMaxFileBytes
	if c.Limits.MaxFileBytes != "" {
		n, err := units.ParseBytes(c.Limits.MaxFileBytes)
		if err != nil || n < 1024 || n > MaxMaxFileBytes {
			bad("limits.max_file_bytes %q must be a size from 1k to 64m", c.Limits.MaxFileBytes)
		}
		st.maxFileSize = n
	}
	st.policy, st.policyErr = c.newPolicy()
	if st.policyErr != nil {
		fail(st.policyErr)
	}
	if err := c.Model.validate(); err != nil {
		fail(err)
	}
	if len(c.Analyzers) > MaxAnalyzers {
		bad("%d analyzers, more than %d", len(c.Analyzers), MaxAnalyzers)
	}
	if first == nil {
		if _, err := c.Resolve(gate.Builtins()); err != nil {
			fail(err)
		}
	}
	return st, first
}

// settings are c's parsed values: Parse's, or parsed now for a Config built
// in code.
func (c Config) settings() settings {
	if c.parsed != nil {
		return *c.parsed
	}
	st, _ := c.parse()
	return st
}

// Resolve applies the analyzers section to builtins: built-ins in their
// order (minus the disabled ones, with overrides applied), then added
// analyzers by name. Every result is validated.
func (c Config) Resolve(builtins []gate.Analyzer) ([]gate.Analyzer, error) {
	var out []gate.Analyzer
	for _, b := range builtins {
		ac, ok := c.Analyzers[b.Name]
		if !ok {
			out = append(out, b)
			continue
		}
		if ac.Enabled != nil && !*ac.Enabled {
			continue
		}
		a, err := ac.apply(b)
		if err != nil {
			return nil, fmt.Errorf("%w: analyzers.%s: %v", ErrInvalid, b.Name, err)
		}
		out = append(out, a)
	}
	for _, name := range slices.Sorted(maps.Keys(c.Analyzers)) {
		if _, builtin := gate.Lookup(builtins, name); builtin {
			continue
		}
		ac := c.Analyzers[name]
		if ac.Enabled != nil && !*ac.Enabled {
			continue
		}
		if len(ac.Command) == 0 || ac.Format == "" {
			return nil, fmt.Errorf("%w: analyzers.%s: not a built-in (%s), so command and format are required", ErrInvalid, name, strings.Join(gate.Names(builtins), ", "))
		}
		a, err := ac.apply(gate.Analyzer{Name: name})
		if err != nil {
			return nil, fmt.Errorf("%w: analyzers.%s: %v", ErrInvalid, name, err)
		}
		out = append(out, a)
	}
	return out, nil
}

func (ac AnalyzerConfig) apply(a gate.Analyzer) (gate.Analyzer, error) {
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&a.Image, ac.Image)
	set(&a.Input, ac.Input)
	set(&a.Timeout, ac.Timeout)
	set(&a.Memory, ac.Memory)
	if ac.Command != nil {
		a.Command = slices.Clone(ac.Command)
	}
	if ac.Format != "" {
		a.Format = finding.Format(ac.Format)
	}
	if ac.Files != nil {
		a.Files = slices.Clone(ac.Files)
	}
	if ac.Requires != nil {
		a.Requires = slices.Clone(ac.Requires)
	}
	if ac.Shells != nil {
		a.Shells = slices.Clone(ac.Shells)
	}
	if ac.OKExitCodes != nil {
		a.OKExitCodes = slices.Clone(ac.OKExitCodes)
	}
	if ac.Optional != nil {
		a.Optional = *ac.Optional
	}
	if ac.Severity != "" {
		a.Severity = finding.Severity(ac.Severity)
	}
	if ac.Env != nil {
		a.Env = maps.Clone(ac.Env)
	}
	return a, a.Validate()
}

// Policy returns the path-class policy: the conventions, changed by
// classes:.
func (c Config) Policy() (*gate.Policy, error) {
	st := c.settings()
	return st.policy, st.policyErr
}

func (c Config) newPolicy() (*gate.Policy, error) {
	settings := make(map[gate.Class]gate.ClassSettings, len(c.Classes))
	for _, name := range slices.Sorted(maps.Keys(c.Classes)) {
		cl, err := gate.ParseClass(name)
		if err != nil {
			return nil, fmt.Errorf("%w: classes: %v", ErrInvalid, err)
		}
		cc := c.Classes[name]
		if len(cc.Paths)+len(cc.ExtraPaths) > MaxIgnoreGlobs {
			return nil, fmt.Errorf("%w: classes.%s: more than %d paths", ErrInvalid, name, MaxIgnoreGlobs)
		}
		settings[cl] = gate.ClassSettings{Globs: cc.Paths, ExtraGlobs: cc.ExtraPaths, Suppress: cc.Suppress}
	}
	p, err := gate.NewPolicy(settings)
	if err != nil {
		return nil, fmt.Errorf("%w: classes.%v", ErrInvalid, err)
	}
	return p, nil
}

// FailOnSeverity returns the fail_on threshold ("" for never).
func (c Config) FailOnSeverity() finding.Severity { return c.settings().failOn }

// Mode returns the filter mode.
func (c Config) Mode() gate.Mode { return c.settings().mode }

// MaxFileSize returns limits.max_file_bytes in bytes.
func (c Config) MaxFileSize() int64 { return c.settings().maxFileSize }

// Ignore returns the compiled ignore globs.
func (c Config) Ignore() gate.Globs { return c.settings().ignore }

// TestTimeout returns tests.timeout, or def when unset.
func (c Config) TestTimeout(def time.Duration) time.Duration {
	if c.Tests.Timeout == "" {
		return def
	}
	return c.settings().testTimeout
}
