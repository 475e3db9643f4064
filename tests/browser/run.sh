#!/usr/bin/env bash
# Runs the operator's page's test (ui.mjs) in Debian's chromium against a backyard-mcp binary.
#   tests/browser/run.sh [path/to/backyard-mcp] [--screenshots DIR]
# Needs node >= 20, npm and chromium (scripts/install-deps installs them).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

binary="${1:-$repo/build/backyard-mcp}"
shift || true
case "$binary" in
  /*) ;;
  *) binary="$PWD/$binary" ;;
esac
if [[ ! -x "$binary" ]]; then
  echo "run.sh: $binary is not an executable file (build the server first)" >&2
  exit 2
fi
command -v chromium >/dev/null || { echo "run.sh: chromium is not installed (scripts/install-deps)" >&2; exit 2; }

"$repo/scripts/npm-ci" "$here"
exec node "$here/ui.mjs" "$binary" "$@"
