#!/usr/bin/env bash
# Builds the local test image for the Docker backend without a container registry: a Debian
# bookworm root made by debootstrap from Debian's mirror, with python3, pip and curl (what the
# network tests run through the proxy), imported into the engine as backyard-mcp/python:bookworm
# with a label naming what it holds. A second run finds that image and does nothing; an image
# of an older list is built again.
#   backends/docker/images/build-local.sh [TAG]
# Needs root, debootstrap and a running Docker engine.
set -euo pipefail

tag="${1:-backyard-mcp/python:bookworm}"
packages="python3,procps,curl,python3-pip"
docker_api() { curl -sf --unix-socket "${DOCKER_SOCK:-/var/run/docker.sock}" "http://localhost$1"; }

if docker_api "/images/${tag}/json" 2>/dev/null | grep -q "\"io.backyard-mcp.packages\":\"$packages\""; then
  echo "image $tag is already there" >&2
  exit 0
fi
command -v debootstrap >/dev/null || { echo "build-local.sh: debootstrap is not installed" >&2; exit 2; }

mirror="${DEBIAN_MIRROR:-$(sed -n 's/^deb \(https\?:[^ ]*debian\/\?\) .*/\1/p' /etc/apt/sources.list 2>/dev/null | head -1 || true)}"
if [[ -z "$mirror" ]]; then
  mirror="$(sed -n 's/^URIs: \(https\?:[^ ]*debian\/\?\)$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1 || true)"
fi
mirror="${mirror:-http://deb.debian.org/debian}"

root="$(mktemp -d /var/tmp/byd-image-XXXXXX)"
trap 'rm -rf "$root"' EXIT
echo "debootstrap bookworm from $mirror into $root" >&2
debootstrap --variant=minbase --include="$packages" bookworm "$root" "$mirror" >&2
# A user that owns the workspace inside the container (the backend runs as uid 1000).
chroot "$root" useradd --uid 1000 --create-home --shell /bin/bash sandbox
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
docker_import() {
  curl -sf --unix-socket "${DOCKER_SOCK:-/var/run/docker.sock}" -X POST \
    -H "Content-Type: application/x-tar" --data-binary @- \
    "http://localhost/images/create?fromSrc=-&repo=${tag%%:*}&tag=${tag##*:}&changes=CMD%20%5B%22python3%22%5D&changes=LABEL%20io.backyard-mcp.packages%3D${packages//,/%2C}"
}
tar -C "$root" -c . | docker_import >/dev/null
docker_api "/images/${tag}/json" >/dev/null && echo "built $tag" >&2
