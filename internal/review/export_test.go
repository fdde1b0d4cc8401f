package review

import (
	"testing"

	"github.com/asterhq/aster/internal/gate"
)

// What the external tests (package review_test) use of the internal tests'
// fixtures: they build the model step, and modelstep imports review.

// NewTestGate is newEngine's gate: the real analyzers on the real engine,
// with the check that the test's sandboxes are all gone at its end.
func NewTestGate(t *testing.T) *gate.Runner { return newEngine(t).runner }

// BaseAndFeature is baseAndFeature.
var BaseAndFeature = baseAndFeature
