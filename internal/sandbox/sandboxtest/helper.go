package sandboxtest

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// StartHelperOrchestrator runs this test binary's TestHelperOrchestrator in a
// child process with env added to the environment, and waits for its line
// "ready <id>": the runtime id of the sandbox the child prepared and holds.
// The caller kills the child (SIGKILL, to leave the sandbox behind) and waits
// for it. A child that exits without that line fails the test.
func StartHelperOrchestrator(t *testing.T, env ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestHelperOrchestrator$", "-test.v")
	cmd.Env = append(append(os.Environ(), env...), "ASTER_INIT_PATH="+InitBinary(t))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if id, ok := strings.CutPrefix(sc.Text(), "ready "); ok {
			return cmd, id
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	t.Fatal("helper orchestrator never prepared its sandbox")
	return nil, ""
}
