#!/usr/bin/python3
"""What --backend remote adds to a call: the same workspace served directly over stdio, and
through a front over stdio whose tools run on a backyard-mcp HTTP service on loopback (the
desktop-launches-a-front case, without the network's own latency). The two take turns call by
call (alternating which goes first) on read_file, execute and run_python, so that a slow spell
of a shared machine falls on both. Prints p50 and p90 of each tool's round trip on each, the
ratio of the p50s (front over direct) and what the front adds at p50.

    /usr/bin/python3 bench/remote.py [--binary build/backyard-mcp] [--calls 300]"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "integration"))
from mcp_client import Client  # noqa: E402

CALLS = [("read_file", {"path": "notes.txt"}),
         ("execute", {"command": "echo hi"}),
         ("run_python", {"code": "1 + 1"})]


def start_service(binary, root, token_file):
    proc = subprocess.Popen(
        [binary, "--transport", "http", "--listen", "127.0.0.1:0", "--root", root,
         "--token-file", token_file, "--ruleset", "permissive", "--log-level", "warn"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    while True:
        line = proc.stderr.readline()
        if not line:
            sys.exit("the service ended before it listened")
        match = re.search(rb"http://127\.0\.0\.1:\d+/mcp", line)
        if match:
            proc.stderr.close()
            return proc, match.group(0).decode()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", default="build/backyard-mcp")
    ap.add_argument("--calls", type=int, default=300)
    args = ap.parse_args()
    binary = os.path.abspath(args.binary)
    with tempfile.TemporaryDirectory(prefix="byd-remote-bench-") as tmp:
        root = os.path.join(tmp, "ws")
        os.mkdir(root)
        with open(os.path.join(root, "notes.txt"), "w") as f:
            f.write("a line of notes\n" * 20)
        token_file = os.path.join(tmp, "token")
        with open(token_file, "w") as f:
            f.write("bench-token-0123456789\n")
        service, url = start_service(binary, root, token_file)
        try:
            sides = [("direct", Client(binary, "--root", root, "--ruleset", "permissive",
                                       "--log-level", "off")),
                     ("front", Client(binary, "--backend", "remote", "--remote-url", url,
                                      "--token-file", token_file, "--log-level", "off"))]
            times = {(side, tool): [] for side, _ in sides for tool, _ in CALLS}
            for _, client in sides:
                for _ in range(20):  # warm-up: kernels, connections
                    for tool, arguments in CALLS:
                        client.call(tool, **arguments)
            for i in range(args.calls):
                for tool, arguments in CALLS:
                    for side, client in sides if i % 2 == 0 else sides[::-1]:
                        start = time.perf_counter()
                        result = client.call(tool, **arguments)
                        times[(side, tool)].append(time.perf_counter() - start)
                        if result.get("isError"):
                            sys.exit(f"{side} {tool}: {result}")
            for _, client in sides:
                client.close()
        finally:
            service.terminate()
            service.wait(30)
    print(f"{args.calls} calls of each tool on each side, taking turns")
    for tool, _ in CALLS:
        q = {}
        for side, _ in sides:
            v = sorted(times[(side, tool)])
            q[side] = (v[len(v) // 2] * 1e3, v[int(0.9 * (len(v) - 1))] * 1e3)
        d, f = q["direct"], q["front"]
        print(f"{tool:10}  direct p50 {d[0]:7.3f} ms p90 {d[1]:7.3f} ms   front p50 {f[0]:7.3f} ms "
              f"p90 {f[1]:7.3f} ms   ratio {f[0] / d[0]:.2f}x  (+{f[0] - d[0]:.3f} ms)")


if __name__ == "__main__":
    main()
