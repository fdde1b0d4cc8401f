package bench

import (
	"bytes"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/testkit"
)

// The systems that could not be set up are listed by name, in one order.
func TestPrintTableSkippedSorted(t *testing.T) {
	r := Report{Skipped: map[string]string{"oci-warm": "no pool", "gvisor": "no runsc", "docker": "no engine", "pairs": "no cells"}}
	got := testkit.Same(t, func() string {
		var b bytes.Buffer
		r.PrintTable(&b)
		return b.String()
	})
	want := "skipped docker: no engine\nskipped gvisor: no runsc\nskipped oci-warm: no pool\nskipped pairs: no cells\n"
	if !strings.Contains(got, want) {
		t.Errorf("table:\n%s\nwant the lines\n%s", got, want)
	}
}
