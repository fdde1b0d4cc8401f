#!/bin/sh
# gen.sh regenerates the *.diff inputs of the golden tests from real git
# repositories built here, with the same flags internal/review uses. Run it
# through `go generate ./internal/diff` (which then rewrites the goldens).
set -eu
out="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
git init -q -b main repo
cd repo
git config user.email gen@example.invalid
git config user.name gen
git config core.autocrlf false
git config gc.auto 0 # no background gc racing the trap's rm -rf
git config maintenance.auto false

d() { git -c core.quotePath=true diff --no-color --no-ext-diff --no-textconv -M --src-prefix=a/ --dst-prefix=b/ "$@"; }

# Base commit.
printf 'one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n' >lines.txt
printf 'package main\n\nfunc main() {\n\tprintln("hi")\n}\n' >main.go
printf 'keep me\n' >gone.txt
seq 1 40 | sed 's/^/row /' >rename-me.txt
printf 'crlf one\r\ncrlf two\r\ncrlf three\r\n' >crlf.txt
printf 'no newline at the end' >noeol.txt
printf '#!/bin/sh\necho run\n' >run.sh
printf '\000\001\002binary' >blob.bin
printf 'spaced\n' >'with space.txt'
git add -A
git commit -qm base

# Head commit: one of each kind of change.
printf 'one\ntwo\nTHREE\nfour\nfive\nsix\nseven\neight\nnine\nten\neleven\n' >lines.txt
printf 'package main\n\nimport "os"\n\nfunc main() {\n\tprintln("hi")\n\tos.Exit(0)\n}\n' >main.go
git rm -q gone.txt
git mv rename-me.txt renamed.txt
sed -i 's/^row 20$/row twenty/' renamed.txt
printf 'crlf one\r\ncrlf 2\r\ncrlf three\r\n' >crlf.txt
printf 'no newline at the end, changed' >noeol.txt
chmod +x run.sh
printf '\000\001\002binary changed' >blob.bin
printf 'spaced and changed\n' >'with space.txt'
printf 'caf\303\251\n' >"caf$(printf '\303\251').txt"
: >empty.txt
printf 'brand\nnew\nfile\n' >added.txt
git add -A
git commit -qm head

d HEAD~1 HEAD >"$out/all.diff"
d HEAD~1 HEAD -- lines.txt >"$out/modified.diff"
d HEAD~1 HEAD -- rename-me.txt renamed.txt >"$out/rename.diff"
d HEAD~1 HEAD -- gone.txt >"$out/deleted.diff"
d HEAD~1 HEAD -- blob.bin >"$out/binary.diff"
d HEAD~1 HEAD -- crlf.txt >"$out/crlf.diff"
d HEAD~1 HEAD -- noeol.txt >"$out/noeol.diff"
d HEAD~1 HEAD -- run.sh >"$out/mode.diff"
d -U0 HEAD~1 HEAD -- lines.txt main.go >"$out/unified0.diff"
git format-patch -1 --stdout --src-prefix=a/ --dst-prefix=b/ -- main.go added.txt >"$out/format-patch.diff"
