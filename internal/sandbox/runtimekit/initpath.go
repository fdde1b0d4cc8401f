package runtimekit

import (
	"debug/buildinfo"
	"fmt"
	"os"
	"path/filepath"
)

// CheckInitBinary returns the absolute path of the aster-init binary at path,
// or why a runtime that puts it into its sandboxes cannot use it: it is
// missing, not executable, or a Go program built with cgo. The docker, oci
// and microvm runtimes check it in New.
func CheckInitBinary(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("aster-init path: %w", err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("aster-init: %w (build it with `make build`, or pass --init-path)", err)
	}
	if fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("aster-init at %s is not executable", abs)
	}
	if builtWithCgo(abs) {
		return "", fmt.Errorf("aster-init at %s was built with cgo (CGO_ENABLED=1); rebuild it with CGO_ENABLED=0 go build -o %s ./cmd/aster-init"+
			" (make build does): with cgo it cannot change the credentials of all its threads, and no sandbox would start", abs, abs)
	}
	return abs, nil
}

// builtWithCgo reports whether the Go program at path was built with
// CGO_ENABLED=1. aster-init then links the runtime's cgo support (through the
// standard library's net and os/user), and Go refuses AllThreadsSyscall in
// such a program: init cannot change the credentials of all its threads at
// once. A plain `go build ./...` or `go install` builds it so wherever a C
// compiler is installed. A file without Go build information (a script a
// test puts in its place) is not judged here.
func builtWithCgo(path string) bool {
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return false
	}
	for _, s := range info.Settings {
		if s.Key == "CGO_ENABLED" {
			return s.Value == "1"
		}
	}
	return false
}
