#!/bin/sh
# noise-bundle.sh GITDIR N OUT.bundle: bundle the last N commits of GITDIR's
# HEAD for `aster bench review --last N`, small: a new linear history of N+1
# commits whose trees (and messages, with the upstream revision appended) are
# those of HEAD~N..HEAD along the first parent. Only the trees of those
# commits go in the bundle, not the project's whole history.
set -eu
if [ $# -ne 3 ]; then
	echo "usage: $0 GITDIR N OUT.bundle" >&2
	exit 2
fi
src=$1 n=$2 out=$3
case $n in '' | *[!0-9]*) echo "$0: N must be a number" >&2; exit 2 ;; esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git init -q --bare "$tmp/r.git"
g() { git -C "$tmp/r.git" -c gc.auto=0 -c maintenance.auto=false "$@"; }
export GIT_AUTHOR_NAME="aster noise" GIT_AUTHOR_EMAIL=noise@aster.invalid GIT_AUTHOR_DATE=2000-01-01T00:00:00Z
export GIT_COMMITTER_NAME="aster noise" GIT_COMMITTER_EMAIL=noise@aster.invalid GIT_COMMITTER_DATE=2000-01-01T00:00:00Z
revs=$(git -C "$src" rev-list --first-parent --reverse -n "$((n + 1))" HEAD)
count=$(printf '%s\n' "$revs" | wc -l)
if [ "$count" -ne "$((n + 1))" ]; then
	echo "$0: $src has only $count first-parent commits, want $((n + 1))" >&2
	exit 1
fi
g fetch -q --no-tags "$src" "$(git -C "$src" rev-parse HEAD)":refs/src/tip
parent=
for r in $revs; do
	msg="$(git -C "$src" log -1 --format=%s "$r") (upstream $r)"
	if [ -z "$parent" ]; then
		parent=$(g commit-tree "$r^{tree}" -m "$msg")
	else
		parent=$(g commit-tree "$r^{tree}" -p "$parent" -m "$msg")
	fi
done
g update-ref refs/heads/main "$parent"
g symbolic-ref HEAD refs/heads/main
g update-ref -d refs/src/tip
g reflog expire --expire=now --all
g gc -q --prune=now
g bundle create -q "$out" main
echo "$out: last $n commits of $src ($(git -C "$src" rev-parse --short HEAD))"
