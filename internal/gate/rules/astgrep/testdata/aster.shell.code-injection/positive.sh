#!/bin/bash
run() {
    # ruleid: aster.shell.code-injection
    eval "$1"
}
# ruleid: aster.shell.code-injection
eval "docker $*"
# ruleid: aster.shell.code-injection
eval "${2:-true}"

hook=$2
# ruleid: aster.shell.code-injection
eval sh "$target"/hooks/$hook
# ruleid: aster.shell.code-injection
eval $CMD
