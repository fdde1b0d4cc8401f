package diff

//go:generate sh testdata/gen.sh
//go:generate go test -run TestGolden -update
