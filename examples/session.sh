#!/bin/bash
# The README's example session, run: each request is written and its answer read before the
# next is sent. A client must wait for the answer to a call before it sends one that depends on
# it: calls run concurrently, so answers may come out of order, and a read_file sent before the
# write_file it follows has answered may see the old content.
#
#   examples/session.sh [path/to/backyard-mcp]
set -euo pipefail
server=${1:-$(dirname "$0")/../build/backyard-mcp}
coproc SERVER { "$server" --backend state --ruleset permissive --log-level off; }

ask() {  # a request: print it, send it, print its answer
  printf '> %s\n' "$1"
  printf '%s\n' "$1" >&"${SERVER[1]}"
  IFS= read -r answer <&"${SERVER[0]}"
  printf '< %s\n' "$answer"
}
tell() {  # a notification: no answer comes
  printf '> %s\n' "$1"
  printf '%s\n' "$1" >&"${SERVER[1]}"
}

ask '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"demo","version":"1.0"}}}'
tell '{"jsonrpc":"2.0","method":"notifications/initialized"}'
ask '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"hello.py","content":"print(\"hi\")\n"}}}'
ask '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"edit_file","arguments":{"path":"hello.py","old_string":"hi","new_string":"hello"}}}'
ask '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"hello.py"}}}'

server_pid=$SERVER_PID
exec {SERVER[1]}>&-  # end of input: the server stops
wait "$server_pid"
