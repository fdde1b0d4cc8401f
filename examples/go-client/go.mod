module example.com/aster-client-example

go 1.26.8

require github.com/asterhq/aster v0.0.0

replace github.com/asterhq/aster => ../..
