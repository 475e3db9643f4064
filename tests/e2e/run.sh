#!/usr/bin/env bash
# Runs the end-to-end test (e2e.mjs) against a backyard-mcp binary.
#   tests/e2e/run.sh [path/to/backyard-mcp]    (default: build/backyard-mcp in the repo root)
# Works from any directory; needs node >= 20 and npm.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

binary="${1:-$repo/build/backyard-mcp}"
# A relative path is taken from the caller's directory.
case "$binary" in
  /*) ;;
  *) binary="$PWD/$binary" ;;
esac
if [[ ! -x "$binary" ]]; then
  echo "run.sh: $binary is not an executable file (build the server first)" >&2
  exit 2
fi

"$repo/scripts/npm-ci" "$here"

exec node "$here/e2e.mjs" "$binary"
