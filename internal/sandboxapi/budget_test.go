package sandboxapi

import (
	"errors"
	"testing"

	"github.com/asterhq/aster/internal/sandbox"
)

func TestBudget(t *testing.T) {
	t.Parallel()
	refusals := 0
	b := NewBudget(100, "test space (--test)")
	b.onRefuse = func() { refusals++ }
	a, err := b.Reserve(60)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Reserve(50); !errors.Is(err, sandbox.ErrBusy) {
		t.Errorf("over what is left: %v, want busy (429)", err)
	}
	if _, err := b.Reserve(101); !errors.Is(err, sandbox.ErrTooLarge) {
		t.Errorf("over the whole budget: %v, want too large (413)", err)
	}
	if err := a.Grow(50); !errors.Is(err, sandbox.ErrTooLarge) {
		t.Errorf("a reservation grown past the whole budget: %v", err)
	}
	a.ShrinkTo(10)
	c, err := b.Reserve(90)
	if err != nil {
		t.Fatalf("after shrinking: %v", err)
	}
	if b.InUse() != 100 || b.Peak() != 100 {
		t.Errorf("in use %d peak %d", b.InUse(), b.Peak())
	}
	// A file given back (testphase.Disk): never more than is held.
	c.Give(40)
	if b.InUse() != 60 {
		t.Errorf("in use %d after giving 40 back", b.InUse())
	}
	c.Give(1000)
	if b.InUse() != 10 {
		t.Errorf("in use %d after giving back more than was held", b.InUse())
	}
	a.Release()
	a.Release()
	c.Release()
	var none *Reservation
	none.Release()
	if b.InUse() != 0 || refusals != 1 {
		t.Errorf("in use %d after releases, %d refusals", b.InUse(), refusals)
	}
	// No total: never refuses.
	free := NewBudget(0, "none")
	if _, err := free.Reserve(1 << 40); err != nil {
		t.Error(err)
	}
}
