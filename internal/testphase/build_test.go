package testphase

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/depcache"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/testrun"
)

func TestBuilderBuild(t *testing.T) {
	install := &testrun.Install{}
	b := Builder{DefaultImage: "img:default", TimeoutCeiling: time.Hour, WorkdirCeiling: 1 << 30, TmpCeiling: 2 << 30, CallerCacheKeys: true}

	t.Run("defaults", func(t *testing.T) {
		job, err := b.Build(Input{})
		if err != nil {
			t.Fatal(err)
		}
		if job.Image != "img:default" || job.ID == "" || job.InstallTimeout != 0 || job.Repo != "" {
			t.Fatalf("job = %+v", job)
		}
		if job.WorkdirCeiling != 1<<30 || job.TmpCeiling != 2<<30 {
			t.Fatalf("ceilings not carried: %d %d", job.WorkdirCeiling, job.TmpCeiling)
		}
		rc, err := job.Open()
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := io.Copy(io.Discard, rc); n != 0 {
			t.Fatalf("empty workspace read %d bytes", n)
		}
	})
	t.Run("install timeout", func(t *testing.T) {
		job, err := b.Build(Input{Image: "img:mine", InstallTimeout: "90s"})
		if err != nil {
			t.Fatal(err)
		}
		if job.Image != "img:mine" || job.InstallTimeout != 90*time.Second {
			t.Fatalf("job = %+v", job)
		}
		for _, bad := range []string{"soon", "0s", "-1m", "2h"} {
			_, err := b.Build(Input{InstallTimeout: bad})
			if !errors.Is(err, sandbox.ErrInvalidSpec) || !strings.Contains(err.Error(), "install_timeout") {
				t.Errorf("install_timeout %q: err = %v, want an invalid spec naming the field", bad, err)
			}
		}
		// The server's own timeout is not the caller's: no ceiling applies.
		job, err = b.Build(Input{InstallTimeout: "soon", InstallTimeoutFixed: 3 * time.Hour})
		if err != nil || job.InstallTimeout != 3*time.Hour {
			t.Fatalf("fixed timeout: %v %v", job.InstallTimeout, err)
		}
	})
	t.Run("cache identity", func(t *testing.T) {
		job, err := b.Build(Input{Install: install, CacheKey: "team/repo"})
		if err != nil {
			t.Fatal(err)
		}
		if job.Repo != "caller:team/repo" || job.Scope != depcache.DefaultScope {
			t.Fatalf("caller key: repo %q scope %q", job.Repo, job.Scope)
		}
		// Without an install nothing is cached; with caller keys off a key is ignored.
		if job, _ := b.Build(Input{CacheKey: "team/repo"}); job.Repo != "" {
			t.Fatalf("no install, repo %q", job.Repo)
		}
		off := b
		off.CallerCacheKeys = false
		if job, _ := off.Build(Input{Install: install, CacheKey: "team/repo"}); job.Repo != "" {
			t.Fatalf("caller keys off, repo %q", job.Repo)
		}
		// The server's identity wins over anything the caller says.
		job, err = b.Build(Input{Install: install, CacheKey: "evil", Repo: "gh:1/2", Scope: "pr:3"})
		if err != nil || job.Repo != "gh:1/2" || job.Scope != "pr:3" {
			t.Fatalf("trusted identity: %q %q %v", job.Repo, job.Scope, err)
		}
		if _, err := b.Build(Input{Install: install, CacheKey: "bad\x00key"}); !errors.Is(err, sandbox.ErrInvalidSpec) {
			t.Fatalf("control byte in cache_key: %v", err)
		}
	})
}
