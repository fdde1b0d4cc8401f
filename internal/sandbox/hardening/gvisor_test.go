package hardening

import (
	"encoding/json"
	"slices"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// TestGVisorProfileDiffersOnlyInClone3: the profile runsc gets is Aster's,
// rule for rule, except that the one rule whose errno is not EPERM (upstream's
// clone3 → ENOSYS, which runsc would turn into an EPERM that breaks every
// thread) allows the call; every EPERM denial, Aster's own included, stays.
func TestGVisorProfileDiffersOnlyInClone3(t *testing.T) {
	var plain, gv specs.LinuxSeccomp
	for _, c := range []struct {
		f   func() ([]byte, error)
		dst *specs.LinuxSeccomp
	}{{SeccompJSON, &plain}, {GVisorSeccompJSON, &gv}} {
		b, err := c.f()
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, c.dst); err != nil {
			t.Fatal(err)
		}
	}
	if len(plain.Syscalls) != len(gv.Syscalls) || plain.DefaultAction != gv.DefaultAction {
		t.Fatalf("rules %d vs %d, default %s vs %s", len(plain.Syscalls), len(gv.Syscalls), plain.DefaultAction, gv.DefaultAction)
	}
	var changed []string
	for i := range plain.Syscalls {
		p, g := plain.Syscalls[i], gv.Syscalls[i]
		if !slices.Equal(p.Names, g.Names) {
			t.Fatalf("rule %d names differ", i)
		}
		if p.Action != g.Action {
			if g.Action != specs.ActAllow || p.Action != specs.ActErrno || p.ErrnoRet == nil || *p.ErrnoRet == 1 {
				t.Errorf("rule %d %v: %s → %s", i, p.Names, p.Action, g.Action)
			}
			changed = append(changed, p.Names...)
		}
	}
	if !slices.Equal(changed, []string{"clone3"}) {
		t.Fatalf("changed for gVisor: %v, want only clone3", changed)
	}
	for _, name := range DeniedSyscalls() {
		found := false
		for _, r := range gv.Syscalls {
			found = found || (slices.Contains(r.Names, name) && r.Action == specs.ActErrno)
		}
		if !found {
			t.Errorf("%s is no longer denied in the gVisor profile", name)
		}
	}
}
