package docs

import (
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/asterhq/aster/api"
	"github.com/asterhq/aster/internal/sandbox/sandboxtest"
)

// TestJSONResultIsDocumented holds docs/sandbox.md's `aster exec --json`
// example to what the command prints: the same top-level fields as
// api.Result, and the same phases in timings_ms as a real run on the docker
// runtime reports.
func TestJSONResultIsDocumented(t *testing.T) {
	page, err := os.ReadFile("sandbox.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(page), "With `--json`, one object on stdout:\n\n```json\n")
	block, _, ok2 := strings.Cut(rest, "\n```")
	if !ok || !ok2 {
		t.Fatal("docs/sandbox.md has no --json example block")
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(block), &doc); err != nil {
		t.Fatalf("the documented result is not JSON: %v", err)
	}
	var want []string
	for f := range reflect.TypeFor[api.Result]().Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		want = append(want, name)
	}
	if got := slices.Sorted(maps.Keys(doc)); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Errorf("documented fields %v, api.Result has %v", got, slices.Sorted(slices.Values(want)))
	}
	var docTimings map[string]int64
	if err := json.Unmarshal(doc["timings_ms"], &docTimings); err != nil {
		t.Fatal(err)
	}

	if testing.Short() {
		t.Skip("the real run needs the container engine (skipped with -short)")
	}
	sandboxtest.Docker(t)
	bin := sandboxtest.AsterBinary(t)
	cmd := exec.Command(bin, "exec", "--runtime", "docker", "--image", sandboxtest.Image(), "--json", "--", "sh", "-c", "echo out; echo err >&2; exit 3")
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir()) // no user configuration
	out, _ := cmd.Output()
	var real api.Result
	if err := json.Unmarshal(out, &real); err != nil {
		t.Fatalf("aster exec --json printed %q: %v", out, err)
	}
	if real.Status != api.StatusExitNonzero || real.ExitCode != 3 || real.Stdout != "out\n" || real.Stderr != "err\n" {
		t.Errorf("the real run: %+v", real)
	}
	if got, want := slices.Sorted(maps.Keys(docTimings)), slices.Sorted(maps.Keys(real.TimingsMS)); !slices.Equal(got, want) {
		t.Errorf("documented timings %v, a real run reports %v", got, want)
	}
}
