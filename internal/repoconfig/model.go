package repoconfig

import "fmt"

// Evidence modes: what a model comment needs before it is posted inline.
const (
	// EvidenceOff runs no evidence; comments are posted as the model wrote them.
	EvidenceOff = "off"
	// EvidencePreferred runs the evidence a comment carries: a refuted
	// comment is dropped, an unconfirmed one is posted marked unverified.
	EvidencePreferred = "preferred"
	// EvidenceRequired posts only comments whose evidence confirmed them.
	EvidenceRequired = "required"
)

// DefaultMaxEvidenceRuns is how many comments' evidence one review runs
// when model.max_evidence_runs is not set (the operator's ceiling bounds it).
const DefaultMaxEvidenceRuns = 5

// MaxMaxEvidenceRuns bounds model.max_evidence_runs.
const MaxMaxEvidenceRuns = 50

// ModelConfig is the model section of .aster.yml.
type ModelConfig struct {
	// Evidence is off, preferred (default) or required.
	Evidence string `yaml:"evidence" json:"evidence,omitempty"`
	// MaxEvidenceRuns caps the evidence runs per review (default 5; a
	// comment's head and base runs count as one).
	MaxEvidenceRuns int `yaml:"max_evidence_runs" json:"max_evidence_runs,omitempty"`
}

func (m ModelConfig) validate() error {
	switch m.Evidence {
	case "", EvidenceOff, EvidencePreferred, EvidenceRequired:
	default:
		return fmt.Errorf("%w: model.evidence %q is not off, preferred or required", ErrInvalid, m.Evidence)
	}
	if m.MaxEvidenceRuns < 0 || m.MaxEvidenceRuns > MaxMaxEvidenceRuns {
		return fmt.Errorf("%w: model.max_evidence_runs %d is not from 0 to %d", ErrInvalid, m.MaxEvidenceRuns, MaxMaxEvidenceRuns)
	}
	return nil
}

// EvidenceMode is model.evidence, or preferred when unset.
func (c Config) EvidenceMode() string {
	if c.Model.Evidence == "" {
		return EvidencePreferred
	}
	return c.Model.Evidence
}

// EvidenceRuns is model.max_evidence_runs (default DefaultMaxEvidenceRuns),
// never over ceiling when ceiling > 0.
func (c Config) EvidenceRuns(ceiling int) int {
	n := c.Model.MaxEvidenceRuns
	if n == 0 {
		n = DefaultMaxEvidenceRuns
	}
	if ceiling > 0 {
		n = min(n, ceiling)
	}
	return n
}
