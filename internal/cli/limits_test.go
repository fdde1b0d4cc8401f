package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/asterhq/aster/internal/config"
	"github.com/asterhq/aster/internal/sandbox"
	"github.com/asterhq/aster/internal/testkit"
)

// vocabularyLimits are what "timeout 5s, memory 256m, cpus 0.5, pids 64,
// output_limit 2m, workdir_size 128m" must give on every surface (the MCP and
// HTTP tests assert the same numbers).
var vocabularyLimits = func() sandbox.Limits {
	l := config.DefaultLimits()
	l.TimeoutMS, l.MemoryBytes, l.MilliCPUs, l.Pids, l.OutputBytes, l.WorkdirBytes = 5000, 256<<20, 500, 64, 2<<20, 128<<20
	return l
}

// TestLimitFlagsAreTheVocabulary: every limit has its flag, named after the
// key of the HTTP API, MCP and aster.yaml, and the flags give the same limits
// as aster.yaml's keys do.
func TestLimitFlagsAreTheVocabulary(t *testing.T) {
	exec, serve, mcp := newExecCmd(&globals{}), newServeCmd(&globals{}), newMCPCmd(&globals{})
	for _, f := range sandbox.LimitFields() {
		name := strings.TrimPrefix(f.Flag(), "--")
		if exec.Flags().Lookup(name) == nil {
			t.Errorf("aster exec has no %s flag for limits.%s", f.Flag(), f.Name)
		}
		for _, c := range []*cobra.Command{serve, mcp} {
			if c.Flags().Lookup("max-"+name) == nil {
				t.Errorf("aster %s has no --max-%s ceiling for limits.%s", c.Name(), name, f.Name)
			}
		}
	}
	fl := &execFlags{limit: limitFlags{Timeout: "5s", Memory: "256m", CPUs: "0.5", Pids: "64", OutputLimit: "2m", WorkdirSize: "128m"}}
	spec, cleanup, err := fl.spec(config.Default(), []string{"true"}, IO{})
	if cleanup != nil {
		defer cleanup()
	}
	if err != nil || spec.Limits != vocabularyLimits() {
		t.Errorf("flags: %+v, %v; want %+v", spec.Limits, err, vocabularyLimits())
	}

	path := filepath.Join(t.TempDir(), "aster.yaml")
	yaml := "limits:\n  timeout: 5s\n  memory: 256m\n  cpus: 0.5\n  pids: 64\n  output_limit: 2m\n  workdir_size: 128m\n"
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(path, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if l, err := c.SandboxLimits(); err != nil || l != vocabularyLimits() {
		t.Errorf("aster.yaml: %+v, %v; want %+v", l, err, vocabularyLimits())
	}
	// A flag over the file: the flag wins, and a refused flag is named as
	// the flag, in human units.
	fl = &execFlags{limit: limitFlags{Memory: "99999999999"}}
	if _, _, err := fl.spec(c, []string{"true"}, IO{}); err == nil || err.Error() != "--memory 93.1GiB is out of range (16MiB to 64GiB)" {
		t.Errorf("refused flag: %v", err)
	}
	c.Limits.Pids = "3"
	if _, _, err := (&execFlags{}).spec(c, []string{"true"}, IO{}); err == nil || err.Error() != "limits.pids 3 is out of range (8 to 32768)" {
		t.Errorf("refused configured limit: %v", err)
	}
}

// An unknown runtime is answered with the runtimes there are, in one order.
func TestUnknownRuntimeListsRuntimesSorted(t *testing.T) {
	got := testkit.Same(t, func() string {
		_, _, err := openRuntime(config.Config{Runtime: "lxc"}, nil)
		return fmt.Sprint(err)
	})
	if want := `unknown runtime "lxc" (have docker, gvisor, kubernetes, microvm, oci)`; got != want {
		t.Errorf("error %q, want %q", got, want)
	}
}
