package sandboxtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

func TestRemoveDeadProcessDirs(t *testing.T) {
	dir := t.TempDir()
	// A pid that is surely gone: a child that has exited and been reaped.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := strconv.Itoa(cmd.Process.Pid)
	live := strconv.Itoa(os.Getpid())
	mk := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Join(p, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	gone := mk("aster-bin-" + dead + "-123")
	mine := mk("aster-bin-" + live + "-456")
	old := mk("aster-bin-789")                    // an older name without a pid: not ours to judge
	other := mk("aster-init-test-" + dead + "-1") // another prefix
	removeDeadProcessDirs(dir, "aster-bin-")
	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Errorf("the directory of exited process %s is still there (%v)", dead, err)
	}
	for _, p := range []string{mine, old, other} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was removed: %v", filepath.Base(p), err)
		}
	}
}
