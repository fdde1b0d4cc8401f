package finding

// Tool outputs are recorded from the real analyzers in the sandbox image
// (needs Docker and ./bin/aster); the goldens are then rewritten.
//go:generate sh testdata/gen-tools.sh
//go:generate sh testdata/gen-astgrep.sh
//go:generate go test -run TestReadGolden -update
