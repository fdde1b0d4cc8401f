package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
)

// CheckInitBinary returns the absolute path of the aster-init binary at path,
// or why a runtime that puts it into its sandboxes cannot use it: it is
// missing or not executable. The docker and oci runtimes check it in New.
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
	return abs, nil
}
