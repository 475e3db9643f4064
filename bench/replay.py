#!/usr/bin/python3
"""An MCP stdio server that answers a tool call it has seen before at once, with the bytes the
real server answered it with the first time: what is left of a call's time is the client's own
(its stdio reader, JSON parse and schema checks) and the pipe's, for exactly that answer.

    /usr/bin/python3 bench/replay.py SERVER [ARGS...]

Starts SERVER with ARGS and passes every message through both ways; a `tools/call` whose name
and arguments (canonical JSON) were answered before with a result is answered from that answer,
its id replaced, and never reaches SERVER. bench/peers.mjs --floor runs our server under it.
"""

import json
import subprocess
import sys
import threading

child = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
out = sys.stdout.buffer
lock = threading.Lock()
pending = {}  # request id -> key of the call it asked for
answers = {}  # key -> answer line (bytes, without its id)


def send(line):
    with lock:
        out.write(line)
        out.flush()


def pump():
    for line in child.stdout:
        msg = json.loads(line)
        key = pending.pop(json.dumps(msg.get("id")), None) if "id" in msg else None
        if key is not None and "result" in msg:
            # Keep the answer without its id, so any id can be put in front of it again.
            answers[key] = json.dumps(msg["result"], separators=(",", ":"), ensure_ascii=False).encode()
        send(line)
    out.close()


threading.Thread(target=pump, daemon=True).start()

for line in sys.stdin.buffer:
    msg = json.loads(line)
    if msg.get("method") == "tools/call" and "id" in msg:
        params = dict(msg.get("params") or {})
        params.pop("_meta", None)
        key = json.dumps(params, sort_keys=True)
        known = answers.get(key)
        if known is not None:
            send(b'{"jsonrpc":"2.0","id":' + json.dumps(msg["id"]).encode() + b',"result":' + known + b"}\n")
            continue
        pending[json.dumps(msg["id"])] = key
    child.stdin.write(line)
    child.stdin.flush()

child.stdin.close()
sys.exit(child.wait())
