#!/usr/bin/env bash
# examples/compose.yaml on the local engine: backyard-mcp as the sandbox service beside an
# application container that has no Docker socket and reaches it by MCP over HTTP with a token,
# driven by the official TypeScript SDK (examples/compose/app.mjs). The images are built here
# from the local base image (no registry): the server's with the binary under test, the
# application's with tests/e2e's SDK. Checks what the application saw (its named session's
# files and Python state across connections, the stored workspace through /api/, the purge),
# that the service's log never holds the token, and that nothing is left behind.
#   tests/e2e/compose.sh [path/to/backyard-mcp]
# Needs the engine, docker-compose and the base image (scripts/docker-setup) and tests/e2e's
# node_modules (tests/e2e/run.sh installs them).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
binary="$(realpath "${1:-$repo/build/backyard-mcp}")"
compose_file="$repo/examples/compose.yaml"
for tool in docker docker-compose; do
  command -v "$tool" >/dev/null || { echo "compose.sh: $tool is missing (scripts/docker-setup)" >&2; exit 2; }
done
[[ -d "$here/node_modules/@modelcontextprotocol/sdk" ]] ||
  { echo "compose.sh: no SDK in $here/node_modules (run tests/e2e/run.sh first)" >&2; exit 2; }

work="$(mktemp -d /var/tmp/byd-compose-XXXXXX)"
project="byd-compose-$$"
compose() { docker-compose --ansi never -p "$project" -f "$compose_file" "$@"; }
cleanup() {
  compose down -v --remove-orphans >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "compose: building the images" >&2
mkdir -p "$work/server" "$work/app"
cp "$binary" "$work/server/backyard-mcp"
build() {  # TAG DOCKERFILE CONTEXT; the builder's output only when it fails
  docker build -q --network host -t "$1" -f "$2" "$3" >"$work/build.log" 2>&1 ||
    { cat "$work/build.log" >&2; echo "compose: the image $1 was not built" >&2; exit 1; }
}
build backyard-mcp/server:local "$repo/examples/compose/server.Dockerfile" "$work/server"
cp "$repo/examples/compose/app.mjs" "$work/app/"
cp -r "$here/node_modules" "$work/app/node_modules"
build backyard-mcp/app:local "$repo/examples/compose/app.Dockerfile" "$work/app"

# The policy: one tenant, known by its token's digest alone; the example runtimes.
mkdir -p "$work/data/workspaces" "$work/data/tmp" "$work/config"
token="$(head -c 24 /dev/urandom | base64 | tr -d '/+=')"
digest="$(printf %s "$token" | sha256sum | cut -d' ' -f1)"
printf '{"sha256:%s": {"name": "app", "max_sessions": 4}}\n' "$digest" >"$work/config/tokens.json"
chmod 600 "$work/config/tokens.json"
cp "$repo/examples/runtimes.json" "$work/config/"
export BACKYARD_DATA="$work/data" BACKYARD_CONFIG="$work/config" APP_TOKEN="$token"

ours() { docker ps -aq --filter label=io.backyard-mcp | sort; }
before="$(ours)"
echo "compose: up, and the application's run" >&2
if ! seen="$(compose run --rm app 2>"$work/app.err")"; then
  cat "$work/app.err" >&2
  compose logs backyard >&2 || true
  echo "compose: the application failed" >&2
  exit 1
fi
logs="$(compose logs --no-color backyard 2>&1)"
seen="$(printf '%s\n' "$seen" | grep '^{' | tail -1)"
/usr/bin/python3 - "$seen" "$logs" "$token" <<'PY'
import json, sys
seen, logs, token = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
def check(ok, what):
    if not ok:
        sys.exit(f"compose: {what}: {json.dumps(seen)}")
check(seen["docker_socket"] is False, "the application must have no Docker socket")
check(seen["notes"] == "kept across connections\n", "the named session's file came back")
check(seen["python"] == "42", "the named session's Python state came back")
check(seen["stored"] == "kept across connections\n", "/api/ read the stored workspace")
check(seen["purged"] in (200, 204), "the purge succeeded")
uid = seen["uname"].split()[0]
check(uid != "0", "commands run as no root")
check(token not in logs, "the service's log holds the token")
check("started as 'demo'" in logs, "the service logged the named session")
print("compose: the application worked through the service:", json.dumps(seen))
PY

# The purge removed the session's directory; nothing of the session is left on the engine.
[[ ! -e "$work/data/workspaces/app/named-demo" ]] ||
  { echo "compose: the purged session's directory is still there" >&2; exit 1; }
compose down -v --remove-orphans >/dev/null 2>&1
left="$(comm -13 <(printf '%s\n' "$before") <(ours))"
[[ -z "$left" ]] || { echo "compose: the sessions' containers left behind: $left" >&2; exit 1; }
echo "compose: all checks passed" >&2
