package client

import (
	"context"
	"errors"
	"testing"

	"github.com/asterhq/aster/api"
)

// The session methods against a real server and engine, every exchange
// checked against the OpenAPI description.
func TestSessions(t *testing.T) {
	url, _ := server(t, 2, 4, nil)
	c := newClient(t, url, "")
	ctx := context.Background()
	s, err := c.CreateSession(ctx, api.SessionRequest{TTL: "2m"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.DeleteSession(context.Background(), s.ID) })
	if err := c.PutFile(ctx, s.ID, "dir/100% sure?.txt", []byte("odd name\n")); err != nil {
		t.Fatal(err)
	}
	res, err := c.SessionExec(ctx, s.ID, api.SessionExecRequest{Argv: []string{"cat", "dir/100% sure?.txt"}})
	if err != nil || res.Status != api.StatusOK || res.Stdout != "odd name\n" {
		t.Fatalf("exec: %+v %v", res, err)
	}
	got, err := c.GetFile(ctx, s.ID, "dir/100% sure?.txt")
	if err != nil || string(got) != "odd name\n" {
		t.Fatalf("get: %q %v", got, err)
	}
	l, err := c.ListFiles(ctx, s.ID, "dir")
	if err != nil || len(l.Entries) != 1 || l.Entries[0].Name != "100% sure?.txt" {
		t.Fatalf("list: %+v %v", l, err)
	}
	all, err := c.Sessions(ctx)
	if err != nil || len(all) != 1 || all[0].ID != s.ID {
		t.Fatalf("sessions: %+v %v", all, err)
	}
	if err := c.DeleteFile(ctx, s.ID, "dir"); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteSession(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Session(ctx, s.ID); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("after delete: %v, want not found", err)
	}
}
