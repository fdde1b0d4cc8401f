package remote

import (
	"bytes"
	"context"
	"errors"
	"net"
	"testing"

	"github.com/asterhq/aster/internal/sandbox"
)

type dialer struct{}

func (dialer) DialEgress(context.Context, string, int) (net.Conn, error) {
	return nil, errors.New("no")
}

// A spec asking for egress or an export is refused before any request: the
// API carries neither, and a run must not silently get less than it asked.
func TestRefusesEgressAndExport(t *testing.T) {
	for name, spec := range map[string]sandbox.Spec{
		"egress": {Argv: []string{"true"}, Egress: dialer{}},
		"export": {Argv: []string{"true"}, Export: &bytes.Buffer{}},
	} {
		res, err := Sandbox{}.Run(t.Context(), spec) // a nil client: any request would panic
		if !errors.Is(err, sandbox.ErrInvalidSpec) || res.Status != sandbox.StatusError {
			t.Errorf("%s: %v %s", name, err, res.Status)
		}
	}
}
