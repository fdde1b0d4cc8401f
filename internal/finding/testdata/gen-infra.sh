#!/bin/sh
# gen-infra.sh records the output of the image's actionlint and cppcheck on a
# small planted tree, for the reader tests (tools/actionlint.json,
# tools/cppcheck.xml). It needs Docker, the image and a built ./bin/aster
# (make build); IMAGE picks another image than the default.
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
aster="${ASTER:-$root/bin/aster}"
image="${IMAGE:-}"
run() { "$aster" exec ${image:+--image "$image"} --memory 1g --timeout 2m "$@"; }
src="$(mktemp -d)"
trap 'rm -rf "$src"' EXIT

mkdir -p "$src/.github/workflows" "$src/src"
cat >"$src/.github/workflows/triage.yml" <<'YML'
name: triage
on:
  issues:
    types: [opened]
jobs:
  label:
    runs-on: ubuntu-latest
    steps:
      - run: echo "New issue ${{ github.event.issue.title }}"
YML
cat >"$src/.github/workflows/ok.yml" <<'YML'
name: ok
on: push
jobs:
  a:
    runs-on: ubuntu-latest
    steps:
      - run: echo hi
YML
cat >"$src/src/greet.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
	char name[16];
	char cmd[64];
	strcpy(name, argv[1]);
	sprintf(cmd, "echo %s", name);
	system(cmd);
	name[16] = 0;
	return 0;
}
C
run --dir "$src" --env HOME=/tmp -- sh -c ': >/tmp/a.yaml && exec actionlint -format "{{json .}}" -config-file /tmp/a.yaml "$@"' \
	actionlint .github/workflows/triage.yml .github/workflows/ok.yml >"$here/tools/actionlint.json" || true
run --dir "$src" --env HOME=/tmp -- sh -c 'cppcheck --xml --enable=warning --quiet --max-configs=4 src/greet.c 2>&1 >/dev/null' \
	>"$here/tools/cppcheck.xml"
