#!/usr/bin/env bash
# Build the two images Aster needs on Kubernetes, from this checkout, with no registry and no
# base image: each holds one static binary and nothing else.
#   aster-init:TAG  /aster-init: the init container of every sandbox Pod copies it into the Pod
#                   (the Kubernetes runtime's --init-image / kubernetes.init_image)
#   aster:TAG       /aster: the orchestrator (`aster sandbox serve --runtime kubernetes`), for
#                   deploy/kubernetes/orchestrator.yaml
# Push them to your registry afterwards (docker tag + docker push), or, for the test cluster of
# scripts/k8s/up.sh, pass --import to load them into its containerd.
#
# Usage: scripts/k8s/images.sh [--import] [--init-only] [TAG]   (TAG default: git describe, else "dev")
#   --init-only  only aster-init:TAG (what sandbox Pods need; up.sh imports it as aster-init:latest)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
export K8S_LOG_TAG=images
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"

import=0 init_only=0
while [[ "${1:-}" == --* ]]; do
	case $1 in
	--import) import=1 ;;
	--init-only) init_only=1 ;;
	*) k8s_die "unknown flag $1 (want --import, --init-only)" ;;
	esac
	shift
done
tag="${1:-$(git -C "$root" describe --tags --always --dirty 2>/dev/null || echo dev)}"
command -v docker >/dev/null || k8s_die "docker is needed to build the images"
export PATH="/usr/local/go/bin:$HOME/.cache/aster/go/bin:$PATH"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ldflags="-s -w -X github.com/asterhq/aster/internal/cli.version=$tag"
(cd "$root" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$tmp/init/aster-init" ./cmd/aster-init)
((init_only)) || (cd "$root" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$tmp/aster/aster" ./cmd/aster)

pack() { # pack DIR IMAGE ENTRYPOINT
	tar -C "$1" --owner=0 --group=0 --numeric-owner --mtime=@0 -c . |
		docker import --change "ENTRYPOINT [\"$3\"]" --change 'USER 1000:1000' \
			--change "LABEL org.opencontainers.image.version=$tag" - "$2" >/dev/null
	k8s_log "built $2"
}
pack "$tmp/init" "aster-init:$tag" /aster-init
images=("aster-init:$tag")
if ((!init_only)); then
	pack "$tmp/aster" "aster:$tag" /aster
	images+=("aster:$tag")
fi

if ((import)); then
	k8s_require_root
	for img in "${images[@]}"; do
		docker save "$img" | ctr --address "$K8S_CONTAINERD_SOCK" --namespace k8s.io images import - >/dev/null ||
			k8s_die "importing $img into the test cluster failed (is it up?)"
		k8s_log "imported $img into the test cluster"
	done
fi
echo "${images[*]}"
