#!/usr/bin/python3
"""Start-up time as a client sees it: from spawning the server to the answer of initialize.

    /usr/bin/python3 bench/startup.py [--binary build/backyard-mcp] [--runs N]

For each configuration (Local with the default ruleset, State, and --version alone) it spawns the
server N times, writes initialize on its stdin at once, and times until the answer's line
arrives (p50, p90). Beside it, the spawn of /bin/true in the same way: what any process costs
here, as the reference the ratio is against. Target: Local with the default ruleset under 5 ms.
"""

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INIT = (json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                               "clientInfo": {"name": "bench", "version": "1"}}}) + "\n").encode()


def time_initialize(argv, cwd):
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, cwd=cwd)
    proc.stdin.write(INIT)
    proc.stdin.flush()
    line = proc.stdout.readline()
    elapsed = (time.perf_counter() - start) * 1000
    assert b'"result"' in line, line
    proc.stdin.close()
    proc.wait(30)
    proc.stdout.close()
    return elapsed


def time_exit(argv):
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - start) * 1000


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=os.path.join(REPO_ROOT, "build", "backyard-mcp"))
    ap.add_argument("--runs", type=int, default=40)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as ws:
        cases = {
            "local, default ruleset": lambda: time_initialize(
                [args.binary, "--log-level", "off"], ws),
            "state": lambda: time_initialize(
                [args.binary, "--backend", "state", "--log-level", "off"], ws),
            "--version": lambda: time_exit([args.binary, "--version"]),
            "reference: /bin/true": lambda: time_exit(["/bin/true"]),
        }
        for fn in cases.values():  # warm the page cache
            fn()
        results = {name: [fn() for _ in range(args.runs)] for name, fn in cases.items()}
    ref = statistics.median(results["reference: /bin/true"])
    for name, values in results.items():
        p50 = statistics.median(values)
        print(f"{name:24s} p50 {p50:6.2f} ms  p90 {pct(values, 90):6.2f} ms  "
              f"({p50 / ref:.1f}x /bin/true)")


if __name__ == "__main__":
    main()
