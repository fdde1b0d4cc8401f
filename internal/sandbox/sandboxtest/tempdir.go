package sandboxtest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// processDir makes the directory a test process keeps its built binaries in
// (prefix, this process's pid, a random part). Nothing removes it when the
// process ends — a test binary has no hook for that without a TestMain in
// every package —, so each call first removes the directories of this prefix
// whose process is gone: what a run leaves behind is taken away by the next
// one, and a machine that runs the tests all day does not fill its disk.
func processDir(prefix string) (string, error) {
	removeDeadProcessDirs(os.TempDir(), prefix)
	return os.MkdirTemp("", prefix+strconv.Itoa(os.Getpid())+"-")
}

// removeDeadProcessDirs removes dir/prefix<pid>-* where no process <pid>
// exists. A live pid keeps its directory, even if the pid was reused by an
// unrelated process: it is removed by a later run.
func removeDeadProcessDirs(dir, prefix string) {
	matches, _ := filepath.Glob(filepath.Join(dir, prefix+"*-*"))
	for _, m := range matches {
		rest := strings.TrimPrefix(filepath.Base(m), prefix)
		pidText, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 {
			continue
		}
		if _, err := os.Stat(filepath.Join("/proc", pidText)); os.IsNotExist(err) {
			_ = os.RemoveAll(m)
		}
	}
}
