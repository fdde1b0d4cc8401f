package cli

import (
	"context"
	"log/slog"

	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/depcache"
	"github.com/asterhq/aster/internal/egress"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/testphase"
	"github.com/asterhq/aster/internal/testrun"
)

// testRunner is the two-phase test runner of a command: the tests: section
// of aster.yaml (install timeout, registries, dependency cache) and the
// operator's egress policy (nil or empty: no install phase runs). sb is what
// runs the sandboxes: an in-process Manager also resolves image digests, for
// the cache keys; anything else runs without a cache.
func testRunner(c config.Config, policy *egress.Policy, sb any, log *slog.Logger) (*testphase.Runner, config.TestSettings, error) {
	tc, err := c.TestsSection()
	if err != nil {
		return nil, config.TestSettings{}, usageErr("%v", err)
	}
	set, err := tc.Parse()
	if err != nil {
		return nil, set, usageErr("%v", err)
	}
	r := &testphase.Runner{Policy: policy, InstallTimeout: set.InstallTimeout, Logger: log, CABundle: set.CABundle,
		Registries: testrun.Registries{NPM: set.NPMRegistry, GoProxy: set.GoProxy, PipIndex: set.PipIndex}}
	if m, ok := sb.(interface{ Runtime() sandbox.Runtime }); ok && set.CacheDir != "" {
		cache, err := depcache.Open(depcache.Options{Dir: set.CacheDir, MaxBytes: set.CacheBytes, Logger: log})
		if err != nil {
			// The tests still run, only without a cache.
			log.Warn("dependency cache unavailable", "dir", set.CacheDir, "err", err)
		} else {
			rt := m.Runtime()
			r.Cache = cache
			r.Digest = func(ctx context.Context, image string) (string, error) {
				info, err := rt.ImageInfo(ctx, image)
				return info.Digest, err
			}
		}
	}
	return r, set, nil
}
