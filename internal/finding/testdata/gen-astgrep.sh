#!/bin/sh
# gen-astgrep.sh records the output of the real ast-grep (the version scripts/fetch-test-deps.sh
# installs, the one the sandbox image pins) running Aster's rule pack, for the reader tests:
# stream style over a few of the pack's fixtures, compact style over the same, and the stream
# style over a tree with no match (ast-grep then prints nothing).
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
arch="$(uname -m | sed 's/x86_64/x64/; s/aarch64/arm64/')"
bin="${ASTER_TEST_AST_GREP:-$root/third_party/astgrep/node_modules/@ast-grep/cli-linux-$arch-gnu/ast-grep}"
pack="$root/internal/gate/rules/astgrep"
src="$(mktemp -d)"
trap 'rm -rf "$src"' EXIT
for r in aster.python.sql-injection aster.js.code-injection aster.go.tls-verify-disabled aster.shell.download-exec; do
	mkdir -p "$src/$r"
	cp "$pack/testdata/$r"/positive.* "$src/$r/"
done
common="--config $pack/sgconfig.yml --include-metadata --color=never"
# Exit status 1 means error-level matches were found.
(cd "$src" && "$bin" scan $common --json=stream . >"$here/astgrep/stream.jsonl") || [ $? -eq 1 ]
(cd "$src" && "$bin" scan $common --json=compact . >"$here/astgrep/compact.json") || [ $? -eq 1 ]
mkdir -p "$src/clean"
printf 'print("hello")\n' >"$src/clean/ok.py"
(cd "$src/clean" && "$bin" scan $common --json=stream . >"$here/astgrep/none.jsonl")
"$bin" --version >"$here/astgrep/VERSION"
