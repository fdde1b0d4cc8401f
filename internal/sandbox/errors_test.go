package sandbox_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/workspace"
)

func TestWorkspaceError(t *testing.T) {
	cases := []struct {
		err, otherwise, want error
		msg                  string
	}{
		{fmt.Errorf("x: %w", workspace.ErrTooLarge), sandbox.ErrProtocol, sandbox.ErrTooLarge, "too large: workspace: x: workspace too large"},
		{fmt.Errorf("%w: ../a", workspace.ErrUnsafe), sandbox.ErrProtocol, sandbox.ErrInvalidSpec, "invalid spec: workspace: unsafe workspace entry: ../a"},
		{sandbox.Invalidf("bad"), sandbox.ErrProtocol, sandbox.ErrInvalidSpec, "workspace: invalid spec: bad"},
		{errors.New("read: reset"), sandbox.ErrProtocol, sandbox.ErrProtocol, "init protocol: workspace: read: reset"},
		{errors.New("disk full"), nil, nil, "workspace: disk full"},
	}
	for _, c := range cases {
		got := sandbox.WorkspaceError("workspace", c.err, c.otherwise)
		if got.Error() != c.msg {
			t.Errorf("%v: message %q, want %q", c.err, got, c.msg)
		}
		if c.want != nil && !errors.Is(got, c.want) {
			t.Errorf("%v: %v is not %v", c.err, got, c.want)
		}
		if !errors.Is(got, c.err) {
			t.Errorf("%v: the cause is lost in %v", c.err, got)
		}
		if c.want == nil && api.ErrorCode(got) != "internal" {
			t.Errorf("%v: classed %s, want unclassed", c.err, api.ErrorCode(got))
		}
	}
	if sandbox.WorkspaceError("workspace", nil, sandbox.ErrProtocol) != nil {
		t.Error("a nil error classed")
	}
}
