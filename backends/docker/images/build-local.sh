#!/usr/bin/env bash
# Builds the local test image for the Docker backend without a container registry: a Debian
# bookworm root made by debootstrap from Debian's mirror, with python3, imported into the
# engine as backyard-mcp/python:bookworm. A second run finds the image and does nothing.
#   backends/docker/images/build-local.sh [TAG]
# Needs root, debootstrap and a running Docker engine.
set -euo pipefail

tag="${1:-backyard-mcp/python:bookworm}"
docker_api() { curl -sf --unix-socket "${DOCKER_SOCK:-/var/run/docker.sock}" "http://localhost$1"; }

if docker_api "/images/${tag}/json" >/dev/null 2>&1; then
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
debootstrap --variant=minbase --include=python3,procps bookworm "$root" "$mirror" >&2
# A user that owns the workspace inside the container (the backend runs as uid 1000).
chroot "$root" useradd --uid 1000 --create-home --shell /bin/bash sandbox
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
docker_import() {
  curl -sf --unix-socket "${DOCKER_SOCK:-/var/run/docker.sock}" -X POST \
    -H "Content-Type: application/x-tar" --data-binary @- \
    "http://localhost/images/create?fromSrc=-&repo=${tag%%:*}&tag=${tag##*:}&changes=CMD%20%5B%22python3%22%5D"
}
tar -C "$root" -c . | docker_import >/dev/null
docker_api "/images/${tag}/json" >/dev/null && echo "built $tag" >&2
