package githubtest

// TB is what the fake and its git repositories need of their caller. *testing.T
// and *testing.B are one; a benchmark run outside `go test` (aster bench app)
// supplies its own, so that it drives the very fake the tests check the App
// against.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
	Cleanup(func())
	TempDir() string
}
