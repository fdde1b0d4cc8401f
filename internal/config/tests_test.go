package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestTestsSection(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "aster.yaml")
	body := "tests:\n  install_timeout: 3m\n  npm_registry: https://npm.example.invalid/\n  goproxy: https://a.invalid|https://b.invalid,direct\n  cache_dir: " + dir + "/deps\n  cache_size: 1g\n  caller_cache_keys: true\n"
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(p, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	tc, err := c.TestsSection()
	if err != nil {
		t.Fatal(err)
	}
	s, err := tc.Parse()
	if err != nil {
		t.Fatal(err)
	}
	if s.InstallTimeout != 3*time.Minute || s.NPMRegistry != "https://npm.example.invalid/" || s.GoProxy == "" || s.PipIndex != "" ||
		s.CacheDir != dir+"/deps" || s.CacheBytes != 1<<30 || !s.CallerCacheKeys {
		t.Fatalf("%+v", s)
	}
	def, err := TestsConfig{}.Parse()
	if err != nil || def.InstallTimeout != DefaultInstallTimeout || def.CacheBytes != DefaultDepCacheBytes || def.CacheDir == "" || def.CallerCacheKeys {
		t.Fatalf("defaults %+v %v", def, err)
	}
	if off, _ := (TestsConfig{CacheSize: "0"}).Parse(); off.CacheDir != "" {
		t.Errorf("cache_size 0 left the cache on: %+v", off)
	}
	for _, bad := range []TestsConfig{
		{InstallTimeout: "2h"}, {InstallTimeout: "soon"},
		{NPMRegistry: "ftp://x.invalid"}, {NPMRegistry: "https://user:secret@x.invalid/"}, {PipIndex: "https://x.invalid/ simple"},
		{GoProxy: "https://a.invalid,nonsense"}, {CacheSize: "-1"},
	} {
		if _, err := bad.Parse(); err == nil {
			t.Errorf("%+v accepted", bad)
		} else if strings.Contains(err.Error(), "secret") {
			t.Errorf("the error shows a credential: %v", err)
		}
	}
	if err := os.WriteFile(p, []byte("tests:\n  cache_sise: 1g\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p, func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "tests.cache_size") {
		t.Errorf("a typo in tests: was not caught: %v", err)
	}
}
