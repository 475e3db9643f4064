#!/usr/bin/python3
"""Benchmark the Docker backend against the Docker CLI, in the same run, for runc and runsc.

    /usr/bin/python3 bench/docker.py [--binary build/backyard-mcp] [--image IMG] [--runs N]

For each runtime it measures:
  - session start to first execute result: a new server (stdio), initialize, then
    `execute "echo hi"`, which creates and starts the container; beside it
    `docker run --rm IMG echo hi` through the CLI;
  - warm execute: `execute "echo hi"` round trips in that session (p50, p90); beside it
    `docker exec CONTAINER echo hi` through the CLI into a container of the same image;
  - Python: a new run_python session's first cell (its kernel's container and kernel start),
    and a warm cell (p50), beside the same docker run and docker exec of the CLI.
Ratios are CLI time / ours (above 1: ours is faster). Target: warm execute under 30 ms and
below the CLI's docker exec. Needs a running engine and the image (scripts/docker-setup).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stdio_server import StdioServer  # noqa: E402

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Server(StdioServer):
    def __init__(self, binary, image, runtime):
        super().__init__(binary, "--backend", "docker", "--image", image, "--runtime", runtime,
                         "--ruleset", "permissive", "--log-level", "warn")

    def execute(self, command):
        out = super().execute(command)["stdout"]
        assert out == "hi\n", out
        return out

    def python(self, code, session):
        r = self.call("run_python", code=code, session=session)
        assert r["result"] == "2", r
        return r


def timed(fn):
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def cli(docker, *args):
    out = subprocess.run([docker, *args], capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise RuntimeError(f"docker {' '.join(args)}: {out.stderr.strip()}")
    return out.stdout


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def bench(binary, image, runtime, runs, docker):
    def start_ours():
        server = Server(binary, image, runtime)
        server.execute("echo hi")
        return server

    # Session start: a new server each time (the container comes with the first execute).
    starts, cli_runs = [], []
    server = None
    for i in range(3):
        t0 = time.perf_counter()
        s = start_ours()
        starts.append((time.perf_counter() - t0) * 1000)
        if i < 2:
            s.close()
        else:
            server = s
        cli_runs.append(timed(lambda: cli(docker, "run", "--rm", "--runtime", runtime,
                                          "--network", "none", image, "echo", "hi")))
    warm = [timed(lambda: server.execute("echo hi")) for _ in range(runs)]
    python_starts = [timed(lambda: server.python("1+1", f"s{i}")) for i in range(3)]
    python_warm = [timed(lambda: server.python("1+1", "s0")) for _ in range(runs)]
    server.close()

    name = f"byd-bench-{os.getpid()}-{runtime}"
    cli(docker, "run", "-d", "--name", name, "--runtime", runtime, "--network", "none", image,
        "sleep", "infinity")
    try:
        cli_exec = [timed(lambda: cli(docker, "exec", name, "echo", "hi")) for _ in range(runs)]
    finally:
        subprocess.run([docker, "rm", "-f", name], capture_output=True)
    return {
        "runtime": runtime,
        "start_to_first_execute_ms": statistics.median(starts),
        "cli_docker_run_ms": statistics.median(cli_runs),
        "warm_execute_p50_ms": pct(warm, 50),
        "warm_execute_p90_ms": pct(warm, 90),
        "cli_docker_exec_p50_ms": pct(cli_exec, 50),
        "cli_docker_exec_p90_ms": pct(cli_exec, 90),
        "python_session_start_ms": statistics.median(python_starts),
        "python_warm_cell_p50_ms": pct(python_warm, 50),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=os.path.join(REPO_ROOT, "build", "backyard-mcp"))
    ap.add_argument("--image", default="backyard-mcp/python:bookworm")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--runtime", action="append")
    ap.add_argument("--json")
    args = ap.parse_args()
    docker = shutil.which("docker")
    if not docker:
        sys.exit("bench/docker.py: the docker CLI is needed for the comparison")
    results = []
    for runtime in args.runtime or ["runc", "runsc"]:
        r = bench(args.binary, args.image, runtime, args.runs, docker)
        results.append(r)
        print(f"{runtime}: start to first execute {r['start_to_first_execute_ms']:.0f} ms "
              f"(docker run {r['cli_docker_run_ms']:.0f} ms, ratio "
              f"{r['cli_docker_run_ms'] / r['start_to_first_execute_ms']:.2f}); warm execute p50 "
              f"{r['warm_execute_p50_ms']:.1f} ms p90 {r['warm_execute_p90_ms']:.1f} ms "
              f"(docker exec p50 {r['cli_docker_exec_p50_ms']:.1f} ms, ratio "
              f"{r['cli_docker_exec_p50_ms'] / r['warm_execute_p50_ms']:.2f}); run_python "
              f"session start {r['python_session_start_ms']:.0f} ms, warm cell p50 "
              f"{r['python_warm_cell_p50_ms']:.1f} ms", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
