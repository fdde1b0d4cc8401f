package sandbox

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/asterhq/aster/internal/initproto"
)

func TestCheckJobSize(t *testing.T) {
	t.Parallel()
	env := func(n, size int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("V%04d=%s", i, strings.Repeat("e", size)))
		}
		return out
	}
	for name, c := range map[string]struct {
		hdr  initproto.JobHeader
		want string // "" passes
	}{
		"small":               {initproto.JobHeader{Argv: []string{"true"}, Env: env(10, 10)}, ""},
		"1000 vars of 2KiB":   {initproto.JobHeader{Argv: []string{"env"}, Env: env(1000, 2<<10)}, "environment variables total 2 MiB, over the limit of 512 KiB"},
		"one 200KiB variable": {initproto.JobHeader{Argv: []string{"env"}, Env: []string{"BIG=" + strings.Repeat("b", 200<<10)}}, "environment variable BIG is 200 KiB"},
		"argv 300KiB":         {initproto.JobHeader{Argv: []string{"a", strings.Repeat("a", 100<<10), strings.Repeat("a", 100<<10), strings.Repeat("a", 100<<10)}}, "arguments total 300 KiB, over the limit of 256 KiB"},
		// Within every sum, but escaping makes the encoded header larger
		// than one frame.
		"escaped": {initproto.JobHeader{Argv: []string{"true"}, Env: env(4, 100<<10), Dir: strings.Repeat("\x01", 120<<10)}, "encodes to"},
	} {
		err := checkJobSize(c.hdr)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case c.want != "" && (!errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}
