#!/usr/bin/python3
"""Fresh isolated Python runs, side by side: backyard-mcp's batch front (a fork of a warm
template kernel per run, in the Local sandbox), Monty (npm @pydantic/monty, run in-process in
Node: a subset interpreter, the speed reference), a fresh python3 per run in the same sandbox
(backyard-mcp's execute), and `docker run` per run.

    /usr/bin/python3 bench/isolated_runs.py [--binary build/backyard-mcp] [--runs N]
        [--image IMG] [--no-docker]

Two programs:
  - small: `print(sum(range(1000)))`, runs per second (target: 500 or more for the batch
    front with --parallel 2 on a 2-core machine);
  - CPU-bound: `sum(i*i for i in range(200000))`, milliseconds per run: the batch front must
    stay at CPython's speed (a fresh python3's time less its start), which is about 3x Monty's.
Ratios are against the batch front (above 1: the other is slower). Monty is installed with
npm into ~/.cache/backyard-mcp/bench-npm on first use; the Docker line needs a running engine
and the image (scripts/docker-setup).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stdio_server import StdioServer  # noqa: E402

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SMALL = "print(sum(range(1000)))"
CPU = "print(sum(i*i for i in range(200000)))"
MONTY_VERSION = "0.0.18"


def batch(binary, workspace, code, runs, parallel):
    """Seconds for `runs` isolated runs of `code` through backyard-mcp batch, and the mean
    in-run time (ms) the kernel measured."""
    with tempfile.TemporaryDirectory(prefix="byd-bench-") as tmp:
        runs_path, out_path = os.path.join(tmp, "runs.jsonl"), os.path.join(tmp, "out.jsonl")
        with open(runs_path, "w") as f:
            for i in range(runs):
                f.write(json.dumps({"id": i, "code": code}) + "\n")
        start = time.perf_counter()
        subprocess.run([binary, "batch", "--in", runs_path, "--out", out_path, "--parallel",
                        str(parallel), "--root", workspace, "--log-level", "off"],
                       check=True, stderr=subprocess.DEVNULL)
        took = time.perf_counter() - start
        with open(out_path) as f:
            results = [json.loads(line) for line in f]
    bad = [r for r in results if r.get("error")]
    assert len(results) == runs and not bad, bad[:1]
    return took, statistics.mean(r["duration_ms"] for r in results)


def monty(code, runs):
    """Runs per second of `code` in Monty, a new interpreter per run, and the mean ms."""
    cache = os.path.join(os.path.expanduser("~"), ".cache", "backyard-mcp", "bench-npm")
    if not os.path.isdir(os.path.join(cache, "node_modules", "@pydantic", "monty")):
        os.makedirs(cache, exist_ok=True)
        subprocess.run(["npm", "install", "--silent", "--prefix", cache,
                        f"@pydantic/monty@{MONTY_VERSION}"], check=True)
    script = """
import { Monty } from '@pydantic/monty'
const [code, runs] = [process.argv[2], Number(process.argv[3])]
let out = ''
new Monty(code).run({ printCallback: (s, t) => { out += t } })  // warm up
const t0 = performance.now()
for (let i = 0; i < runs; i++) new Monty(code).run({ printCallback: (s, t) => { out = t } })
console.log(JSON.stringify({ seconds: (performance.now() - t0) / 1000, out }))
"""
    path = os.path.join(cache, "bench.mjs")
    with open(path, "w") as f:
        f.write(script)
    r = subprocess.run(["node", path, code, str(runs)], check=True, capture_output=True,
                       cwd=cache)
    return json.loads(r.stdout)["seconds"]


def fresh_python(server, code, runs):
    """Seconds for `runs` fresh /usr/bin/python3 processes running `code` in the sandbox."""
    quoted = "'" + code.replace("'", "'\\''") + "'"
    server.execute(f"/usr/bin/python3 -c {quoted}")  # warm
    start = time.perf_counter()
    for _ in range(runs):
        out = server.execute(f"/usr/bin/python3 -c {quoted}")
        assert out["exit_code"] == 0, out
    return time.perf_counter() - start


def docker_run(image, code, runs):
    if shutil.which("docker") is None:
        return None
    if subprocess.run(["docker", "image", "inspect", image], capture_output=True).returncode:
        return None
    start = time.perf_counter()
    for _ in range(runs):
        subprocess.run(["docker", "run", "--rm", "--network", "none", image, "python3", "-c",
                        code], check=True, capture_output=True)
    return time.perf_counter() - start


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", default=os.path.join(REPO_ROOT, "build", "backyard-mcp"))
    ap.add_argument("--runs", type=int, default=3000, help="small runs for the batch front")
    ap.add_argument("--image", default="backyard-mcp/python:bookworm")
    ap.add_argument("--no-docker", action="store_true")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="byd-bench-ws-") as ws:
        os.chmod(ws, 0o777)
        n = args.runs
        took2, _ = batch(args.binary, ws, SMALL, n, 2)
        took1, _ = batch(args.binary, ws, SMALL, n // 2, 1)
        ours = n / took2
        rows.append(("backyard batch --parallel 2", ours, None))
        rows.append(("backyard batch --parallel 1", (n // 2) / took1, None))
        m = monty(SMALL, n)
        rows.append(("Monty (in-process, 1 thread)", n / m, None))
        server = StdioServer(args.binary, "--root", ws, "--ruleset", "permissive",
                             "--log-level", "off")
        fresh_runs = max(50, n // 30)
        f = fresh_python(server, SMALL, fresh_runs)
        rows.append(("fresh python3 per run (execute)", fresh_runs / f, None))
        d = None if args.no_docker else docker_run(args.image, SMALL, 10)
        if d is not None:
            rows.append(("docker run per run", 10 / d, None))
        print(f"\nsmall program ({SMALL}), runs per second, {os.cpu_count()} cores:")
        for name, rate, _ in rows:
            print(f"  {name:34} {rate:9.1f}/s   ours is {ours / rate:6.2f}x")
        print(f"  target: 500/s with --parallel 2: {'MET' if ours >= 500 else 'MISSED'}")

        cpu_runs = 10
        cpu_took, cpu_inner = batch(args.binary, ws, CPU, cpu_runs, 1)
        cpu_monty = monty(CPU, cpu_runs) / cpu_runs * 1000
        start_only = fresh_python(server, "pass", cpu_runs) / cpu_runs * 1000
        cpu_fresh = fresh_python(server, CPU, cpu_runs) / cpu_runs * 1000
        server.close()
        print(f"\nCPU-bound ({CPU}), ms per run:")
        print(f"  {'backyard isolated (in-run time)':34} {cpu_inner:9.1f}")
        print(f"  {'backyard isolated (whole run)':34} {cpu_took / cpu_runs * 1000:9.1f}")
        print(f"  {'fresh python3, less its start':34} {cpu_fresh - start_only:9.1f}"
              f"   ratio to ours {(cpu_fresh - start_only) / cpu_inner:5.2f}")
        print(f"  {'Monty':34} {cpu_monty:9.1f}   Monty/ours {cpu_monty / cpu_inner:5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
