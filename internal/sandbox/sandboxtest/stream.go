package sandboxtest

import (
	"bufio"
	"encoding/json"
	"testing"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/sandbox"
)

// CheckCutOffStream reads the rest of an NDJSON run stream whose job had
// printed "started" when what ("the engine", "the API server") went away, and
// checks it ends as the API promises: an error event "unavailable", then the
// result, status error, with the output up to then.
func CheckCutOffStream(t *testing.T, sc *bufio.Scanner, what string) {
	t.Helper()
	var events []api.Event
	for sc.Scan() {
		var ev api.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		events = append(events, ev)
	}
	if len(events) != 2 || events[0].Type != api.EventError || events[0].Error.Code != "unavailable" || events[1].Type != api.EventResult {
		t.Fatalf("events after %s went away: %+v", what, events)
	}
	var res sandbox.WireResult
	if err := json.Unmarshal(events[1].Result, &res); err != nil {
		t.Fatalf("result event: %v", err)
	}
	if res.Status != sandbox.StatusError || res.Stdout != "started\n" {
		t.Errorf("in-flight result %s %q", res.Status, res.Stdout)
	}
}
