#!/bin/sh
# py2500-bundle.sh ANSIBLE_GITDIR SYMPY_GITDIR OUT.bundle: build the py2500
# speed corpus of docs/performance.md ("Gate speed"), a one-commit bundle
# that `aster bench review --corpus DIR --repo py2500` reviews as a whole
# tree (every line of every file added):
#
#   - ansible's tree at c9ac477e, as `git archive` gives it (its
#     .gitattributes leaves .github/ out);
#   - the first 936 Python files of sympy at e950d313, by path in byte
#     order (sympy's other files are not taken);
#
# both unpacked into one directory and committed with `git add -A`, which
# honours ansible's .gitignore: 4 of its archived files are left out. The
# result is 5,969 files, 2,497 of them Python (1,561 of ansible, 936 of
# sympy). The commit's author, committer and dates are fixed, so the bundle's
# commit id is the same on every machine. Put OUT at DIR/py2500.bundle.
set -eu
if [ $# -ne 3 ]; then
	echo "usage: $0 ANSIBLE_GITDIR SYMPY_GITDIR OUT.bundle" >&2
	exit 2
fi
ansible=$1 sympy=$2 out=$3
ansible_rev=c9ac477e53a99e95781f333eec3329a935c1bf95
sympy_rev=e950d313a932bc6cccbc95376b3821cd2f8b5af4
sympy_files=936
case $out in /*) ;; *) out=$(pwd)/$out ;; esac
for r in "$ansible:$ansible_rev" "$sympy:$sympy_rev"; do
	if ! git -C "${r%:*}" rev-parse -q --verify "${r##*:}^{commit}" >/dev/null; then
		echo "$0: ${r%:*} has no commit ${r##*:}" >&2
		exit 1
	fi
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/tree"
git -C "$ansible" archive "$ansible_rev" | tar -x -C "$tmp/tree"
git -C "$sympy" ls-tree -r -z --name-only "$sympy_rev" |
	tr '\0' '\n' | grep '\.py$' | LC_ALL=C sort | head -n "$sympy_files" >"$tmp/sympy.list"
if [ "$(wc -l <"$tmp/sympy.list")" -ne "$sympy_files" ]; then
	echo "$0: $sympy has fewer than $sympy_files Python files at $sympy_rev" >&2
	exit 1
fi
# the list as pathspecs, literally (no glob in a file name is expanded); if
# xargs splits it, the archives follow each other (tar -i reads past each end)
tr '\n' '\0' <"$tmp/sympy.list" |
	xargs -0 git -C "$sympy" --literal-pathspecs archive "$sympy_rev" -- |
	tar -x -i -C "$tmp/tree"
g() { git -C "$tmp/tree" -c gc.auto=0 -c maintenance.auto=false "$@"; }
export GIT_AUTHOR_NAME="aster bench" GIT_AUTHOR_EMAIL=bench@aster.invalid GIT_AUTHOR_DATE=2000-01-01T00:00:00Z
export GIT_COMMITTER_NAME="aster bench" GIT_COMMITTER_EMAIL=bench@aster.invalid GIT_COMMITTER_DATE=2000-01-01T00:00:00Z
g init -q -b main
g add -A
g commit -q -m "py2500: ansible $ansible_rev and the first $sympy_files Python files of sympy $sympy_rev"
g bundle create -q "$out" main
files=$(g ls-files | wc -l)
py=$(g ls-files | grep -c '\.py$')
echo "$out: $files files, $py Python ($(g rev-parse --short HEAD))"
