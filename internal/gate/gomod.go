package gate

import (
	"archive/tar"
	"bufio"
	"bytes"
	"errors"
	"go/version"
	"io"
	"strings"
)

// maxGoModBytes bounds the go.mod read from a snapshot (untrusted input).
const maxGoModBytes = 1 << 20

// needsGo reports the Go version the snapshot's root go.mod (or go.work)
// declares when it is newer than have, the image's Go ("1.26.8"); need is
// "" when it is not newer, when there is no go.mod, or when either version
// cannot be read (gosec then says what it can).
func needsGo(snap *Snapshot, have string) (need, haveOut string) {
	if !version.IsValid("go" + have) {
		return "", have
	}
	for _, name := range []string{"go.work", "go.mod"} {
		data, ok := readSnapshotFile(snap, name, maxGoModBytes)
		if !ok {
			continue
		}
		v := goDirective(data)
		if v != "" && version.Compare("go"+v, "go"+have) > 0 {
			return v, have
		}
	}
	return "", have
}

// goDirective returns the version of a go.mod's (or go.work's) `go` line:
// "1.27", "1.26.2", "1.27rc1"; "" when there is none or it is not a Go
// version.
func goDirective(data []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), maxGoModBytes)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "go" {
			if version.IsValid("go" + f[1]) {
				return f[1]
			}
			return ""
		}
	}
	return ""
}

// readSnapshotFile returns the content of one regular file of the snapshot,
// if it is there and at most max bytes.
func readSnapshotFile(snap *Snapshot, name string, max int64) ([]byte, bool) {
	found := false
	for _, f := range snap.Files() {
		if f == name {
			found = true
			break
		}
	}
	if !found {
		return nil, false
	}
	rc, err := snap.Open()
	if err != nil {
		return nil, false
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) || err != nil {
			return nil, false
		}
		if h.Typeflag != tar.TypeReg || strings.TrimPrefix(h.Name, "./") != name {
			continue
		}
		if h.Size > max {
			return nil, false
		}
		b, err := io.ReadAll(io.LimitReader(tr, max))
		return b, err == nil
	}
}

// goSecScript copies the warm build cache ($1) to the writable GOCACHE, runs
// gosec with the arguments after $2, then prints, for every package of the
// module whose dependencies did not load, a SARIF log with one warning
// notice (template $2); gosec's exit status is kept.
const goSecScript = `if [ -d "$1" ]; then cp -R "$1" "$GOCACHE"; fi; t=$2; shift 2; gosec "$@"; rc=$?; ` +
	`go list -e -f "$t" ./... 2>/dev/null; exit $rc`

// goDepsNotice is the go list template of goSecScript. Strings are quoted by
// printf %q, which for the names Go accepts as packages and directories is
// valid JSON; anything else makes the output unreadable, and gosec fails
// rather than passes.
const goDepsNotice = `{{if and .DepsErrors .GoFiles}}{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"go list"}},` +
	`"invocations":[{"executionSuccessful":true,"toolExecutionNotifications":[{"level":"warning",` +
	`"message":{"text":{{printf "%q" (print .ImportPath " was checked without the types of its dependencies (the sandbox has no module cache)")}}},` +
	`"locations":[{"physicalLocation":{"artifactLocation":{"uri":{{printf "%q" (print .Dir "/" (index .GoFiles 0))}}}}}]}]}],"results":[]}]}
{{end}}`
