package testrun

import "testing"

// Go's plan raises /tmp to what its build cache needs, never past the
// ceiling and never below what was asked; other runners keep the request.
func TestPlanTmpBytes(t *testing.T) {
	g, py := GoPlan(), PytestPlan()
	for _, c := range []struct {
		plan                     Plan
		requested, ceiling, want int64
	}{
		{g, 64 << 20, 0, 1 << 30},
		{g, 64 << 20, 256 << 20, 256 << 20},
		{g, 2 << 30, 4 << 30, 2 << 30},
		{py, 64 << 20, 0, 64 << 20},
	} {
		if got := c.plan.TmpBytes(c.requested, c.ceiling); got != c.want {
			t.Errorf("%s: TmpBytes(%d, %d) = %d, want %d", c.plan.Framework, c.requested, c.ceiling, got, c.want)
		}
	}
}
