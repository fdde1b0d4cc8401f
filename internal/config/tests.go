package config

import (
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/asterhq/aster/internal/units"
)

// Defaults of the test step's install phase and dependency cache.
const (
	DefaultInstallTimeout = 10 * time.Minute
	DefaultDepCacheBytes  = 4 << 30
	// MaxInstallTimeout bounds tests.install_timeout.
	MaxInstallTimeout = time.Hour
)

// TestsConfig is the `tests:` section of aster.yaml: how the test step of
// /v1/test, MCP run_tests, `aster review --tests` and the App installs a
// repository's dependencies (the egress allow list itself is egress.allow)
// and caches them. Registries left empty are each tool's own default.
type TestsConfig struct {
	// InstallTimeout bounds the install phase ("10m"); a request may ask
	// for less, or more up to the timeout ceiling.
	InstallTimeout string `yaml:"install_timeout"`
	// NPMRegistry, GoProxy and PipIndex are given to the install phase as
	// npm_config_registry, GOPROXY and PIP_INDEX_URL. Their hosts must be
	// on egress.allow.
	NPMRegistry string `yaml:"npm_registry"`
	GoProxy     string `yaml:"goproxy"`
	PipIndex    string `yaml:"pip_index"`
	// CAFile is a PEM bundle the install phase trusts instead of the
	// image's roots, for registries behind a TLS-intercepting proxy.
	CAFile string `yaml:"ca_file"`
	// CacheDir holds the dependency cache (default: the user's cache
	// directory, aster/deps); CacheSize caps it ("4g"; "0" turns it off).
	CacheDir  string `yaml:"cache_dir"`
	CacheSize string `yaml:"cache_size"`
	// CallerCacheKeys lets /v1/test and MCP callers name their repository
	// (cache_key) to use the cache; off by default, since the server
	// cannot check the name: enable it only for callers who share trust.
	CallerCacheKeys bool `yaml:"caller_cache_keys"`
}

// TestSettings is TestsConfig parsed.
type TestSettings struct {
	InstallTimeout time.Duration
	NPMRegistry    string
	GoProxy        string
	PipIndex       string
	// CABundle is the content of ca_file (nil: none).
	CABundle []byte
	// CacheDir is empty when the cache is off.
	CacheDir        string
	CacheBytes      int64
	CallerCacheKeys bool
}

// TestsSection returns the tests section of aster.yaml.
func (c Config) TestsSection() (TestsConfig, error) {
	var t TestsConfig
	err := c.decodeSection("tests", &t)
	return t, err
}

// Parse validates t and fills the defaults.
func (t TestsConfig) Parse() (TestSettings, error) {
	out := TestSettings{InstallTimeout: DefaultInstallTimeout, CacheBytes: DefaultDepCacheBytes, CallerCacheKeys: t.CallerCacheKeys}
	var errs []error
	if v := strings.TrimSpace(t.InstallTimeout); v != "" {
		d, err := units.ParseDuration(v)
		if err != nil || d < time.Second || d > MaxInstallTimeout {
			errs = append(errs, fmt.Errorf("tests.install_timeout %q: want a duration from 1s to %s", v, MaxInstallTimeout))
		} else {
			out.InstallTimeout = d
		}
	}
	for _, f := range []struct {
		key  string
		v    string
		dst  *string
		list bool
	}{
		{"tests.npm_registry", t.NPMRegistry, &out.NPMRegistry, false},
		{"tests.goproxy", t.GoProxy, &out.GoProxy, true},
		{"tests.pip_index", t.PipIndex, &out.PipIndex, false},
	} {
		v := strings.TrimSpace(f.v)
		if v == "" {
			continue
		}
		if err := checkRegistry(v, f.list); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f.key, err))
			continue
		}
		*f.dst = v
	}
	if v := strings.TrimSpace(t.CAFile); v != "" {
		b, err := readCABundle(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("tests.ca_file: %w", err))
		} else {
			out.CABundle = b
		}
	}
	if v := strings.TrimSpace(t.CacheSize); v != "" {
		n, err := units.ParseBytes(v)
		if err != nil || n < 0 {
			errs = append(errs, fmt.Errorf("tests.cache_size %q: want a size such as 4g, or 0 for no cache", v))
		} else {
			out.CacheBytes = n
		}
	}
	if out.CacheBytes > 0 {
		out.CacheDir = strings.TrimSpace(t.CacheDir)
		if out.CacheDir == "" {
			dir, err := os.UserCacheDir()
			if err != nil {
				dir = os.TempDir()
			}
			out.CacheDir = filepath.Join(dir, "aster", "deps")
		}
	}
	return out, errors.Join(errs...)
}

// checkRegistry accepts an http(s) URL; with list, a GOPROXY value: URLs,
// "direct" or "off", separated by commas or pipes.
func checkRegistry(v string, list bool) error {
	if len(v) > 2048 || strings.ContainsFunc(v, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return errors.New("too long, or holds spaces or control characters")
	}
	parts := []string{v}
	if list {
		parts = strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == '|' })
	}
	for _, p := range parts {
		if list && (p == "direct" || p == "off") {
			continue
		}
		u, err := url.Parse(p)
		if err == nil && u.User != nil {
			return errors.New("a registry URL must not carry credentials (they would reach the sandbox)")
		}
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return fmt.Errorf("%s is not an http(s) URL", strconv.Quote(p))
		}
	}
	return nil
}

// maxCABundleBytes bounds tests.ca_file.
const maxCABundleBytes = 4 << 20

// readCABundle reads a PEM bundle and checks that it holds certificates only
// (a private key must never reach a sandbox).
func readCABundle(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxCABundleBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxCABundleBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", p, maxCABundleBytes)
	}
	n := 0
	for rest := b; ; {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("%s holds a %s block: only certificates may go to a sandbox", p, blk.Type)
		}
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("%s holds no PEM certificate", p)
	}
	return b, nil
}
