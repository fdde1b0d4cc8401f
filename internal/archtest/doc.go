// Package archtest holds no code, only a test of how Aster's packages may
// import each other: the arrows that must point down (CONTRIBUTING.md, "Package
// map"). It reads the import graph with `go list`, so a new package or a new
// import is checked without editing anything here.
package archtest
