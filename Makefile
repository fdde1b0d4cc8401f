# Aster's two front doors:
#   make demo   set up whatever is missing, then run Aster's main job on a built-in example
#   make test   set up whatever is missing, then run every test (what CI runs)
# Everything else is a building block of those two.

SHELL := /bin/bash
export PATH := /usr/local/go/bin:$(HOME)/.cache/aster/go/bin:$(PATH)
GO ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X github.com/asterhq/aster/internal/cli.version=$(VERSION)
# Integration tests must not skip in CI: a missing engine fails them.
TEST_ENV := CI=true ASTER_REQUIRE_DOCKER=1 ASTER_REQUIRE_OCI=1 ASTER_REQUIRE_GVISOR=1 ASTER_REQUIRE_MICROVM=1 ASTER_TEST_ENGINE_RESTART=1
# -count=1: every run runs every test (a cached pass proves nothing about this machine).
GOTEST_FLAGS ?= -count=1 -timeout 25m

.PHONY: all setup build image demo test test-unit test-go test-tools test-microvm-full lint fuzz bench clean

all: build

## setup: install and start what is missing (packages, Go, Docker engine), build binaries and image
setup:
	@scripts/setup.sh

## build: bin/aster and bin/aster-init (static)
build:
	@mkdir -p bin
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/aster-init ./cmd/aster-init
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/aster ./cmd/aster

## image: the default sandbox image (cached by input hash)
image:
	images/sandbox/build.sh

## demo: set up, then run the built-in example through the sandbox
demo: setup
	@scripts/demo.sh

## test: set up, then every test, required to run for real (scripts/test.sh says what and in which order)
test:
	@scripts/test.sh

test-deps:
	@scripts/fetch-test-deps.sh

test-go:
	ASTER_TEST_POSTGRES_URL="$$(scripts/postgres-test.sh)" $(TEST_ENV) $(GO) test $(GOTEST_FLAGS) ./...

# Checks that run outside `go test`: outside reference tools (SARIF validator, MCP conformance).
test-tools:
	@for s in scripts/test-*.sh; do [[ -x "$$s" ]] || continue; echo "== $$s"; "$$s" || exit 1; done

## test-microvm-full: the whole security suite on --runtime microvm (CI runs a subset; slow under TCG)
test-microvm-full:
	$(TEST_ENV) ASTER_TEST_MICROVM_FULL=1 $(GO) test -count=1 -timeout 60m -v -run 'TestSecurity' ./internal/sandbox/microvm/ 2>&1 | tee /tmp/aster-microvm-full.log | grep -E '^(---|    ---|ok|FAIL|PASS)'

## test-unit: the tests that need no engine (fast)
test-unit:
	$(GO) test -short ./...

## lint: gofmt, go vet and staticcheck
lint:
	@out="$$(gofmt -l cmd internal docs 2>/dev/null)"; if [[ -n "$$out" ]]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

## fuzz: run every fuzz target for FUZZTIME each (default 15s), minimising
## each new input for at most FUZZMINIMIZETIME (Go's own default, 60s, would
## spend a short run on one input of the targets that write files)
FUZZTIME ?= 15s
FUZZMINIMIZETIME ?= 3s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
		for f in $$($(GO) test -list 'Fuzz.*' $$pkg 2>/dev/null | grep '^Fuzz'); do \
			echo "== $$pkg $$f"; $(GO) test $$pkg -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) || exit 1; \
		done; \
	done

## bench: sandbox start-up benchmarks (see docs/performance.md)
bench: build
	$(TEST_ENV) $(GO) test -run '^$$' -bench . -benchtime 20x ./internal/sandbox/docker/ ./cmd/aster/

clean:
	rm -rf bin

-include scripts/k8s/k8s.mk
