package cli

import (
	"log/slog"

	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/egress"
	"github.com/asterhq/aster/internal/evidence"
	"github.com/asterhq/aster/internal/gate"
	"github.com/asterhq/aster/internal/sandbox"
)

// evidenceEngine builds what runs model comments' evidence for `aster
// review`: the same sandbox, image and limits as the tests, through the
// same install phase and dependency cache, each run bounded by
// llm.evidence.timeout; ceiling is llm.evidence.max_runs.
func evidenceEngine(c config.Config, getenv func(string) string, pol *egress.Policy, sb gate.Sandbox, image string, limits sandbox.Limits, log *slog.Logger) (eng *evidence.Engine, ceiling int, err error) {
	lc, err := c.LLMSection(getenv)
	if err != nil {
		return nil, 0, usageErr("%v", err)
	}
	s, err := lc.Parse()
	if err != nil {
		return nil, 0, usageErr("%v", err)
	}
	runner, _, err := testRunner(c, pol, sb, log)
	if err != nil {
		return nil, 0, err
	}
	return &evidence.Engine{Sandbox: sb, Image: image, Limits: limits, Timeout: s.EvidenceTimeout, Runner: runner,
		Secrets: s.SecretValues(getenv)}, s.EvidenceMaxRuns, nil
}
