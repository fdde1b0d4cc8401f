package mcpserver

import (
	"errors"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// events collects what After yields.
func events(t *testing.T, s *eventStore, session, stream string, index int) ([]string, error) {
	t.Helper()
	var out []string
	for d, err := range s.After(t.Context(), session, stream, index) {
		if err != nil {
			return out, err
		}
		out = append(out, string(d))
	}
	return out, nil
}

// SECURITY L7: the event store keeps the streamsPerSession most recent
// streams of a session (and its standalone stream), and at most its byte
// bound in all, dropping the oldest events first; what it dropped is said to
// be purged, never replayed wrong.
func TestEventStoreBounds(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newEventStore(100)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Open(ctx, "a", ""))
	must(s.Append(ctx, "a", "", []byte("standalone")))
	for i := range streamsPerSession + 4 {
		id := fmt.Sprint("s", i)
		must(s.Open(ctx, "a", id))
		must(s.Append(ctx, "a", id, nil)) // a priming event
		must(s.Append(ctx, "a", id, []byte(fmt.Sprint("e", i))))
	}
	if n, _ := s.streams(); n != streamsPerSession+1 {
		t.Errorf("%d streams kept, want %d and the standalone one", n, streamsPerSession)
	}
	if err := s.Append(ctx, "a", "s0", []byte("late")); !errors.Is(err, errStreamDropped) {
		t.Errorf("append to a dropped stream: %v", err)
	}
	if _, err := events(t, s, "a", "s0", 0); !errors.Is(err, mcp.ErrEventsPurged) {
		t.Errorf("replay of a dropped stream: %v", err)
	}
	if got, err := events(t, s, "a", "s19", 0); err != nil || len(got) != 1 || got[0] != "e19" {
		t.Errorf("replay of the newest stream after its priming event: %q %v", got, err)
	}
	if got, err := events(t, s, "a", "", -1); err != nil || len(got) != 1 || got[0] != "standalone" {
		t.Errorf("the standalone stream: %q %v", got, err)
	}

	// Bytes: the oldest events go first, the newest always stays.
	must(s.Open(ctx, "b", "x"))
	for i := range 30 {
		must(s.Append(ctx, "b", "x", []byte(fmt.Sprintf("%09d", i))))
	}
	if _, n := s.streams(); n > 100+9 {
		t.Errorf("%d bytes held, bound 100", n)
	}
	if _, err := events(t, s, "b", "x", 0); !errors.Is(err, mcp.ErrEventsPurged) {
		t.Errorf("replay from a purged event: %v", err)
	}
	if got, err := events(t, s, "b", "x", 27); err != nil || len(got) != 2 || got[1] != "000000029" {
		t.Errorf("replay of the last two: %q %v", got, err)
	}
	must(s.SessionClosed(ctx, "a"))
	must(s.SessionClosed(ctx, "b"))
	if n, b := s.streams(); n != 0 || b != 0 {
		t.Errorf("after the sessions closed: %d streams, %d bytes", n, b)
	}
}

// SECURITY L7: a session's calls do not pile up in the event store: after
// 200 calls on one session it holds the streams of the last few only.
func TestSessionEventsBounded(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, &fakeExecutor{}, nil)
	store := newEventStore(EventStoreBytes)
	h, _ := s.handlerWith(HTTPOptions{}, store)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srv.URL + Path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for range 200 {
		if err := cs.Ping(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := store.streams(); n > streamsPerSession+1 {
		t.Errorf("%d streams held for one session after 200 calls", n)
	}
}
