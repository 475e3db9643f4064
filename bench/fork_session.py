#!/usr/bin/python3
"""Forking a run_python session that holds 100 MB of objects (`fork_from`), on each backend.

    /usr/bin/python3 bench/fork_session.py [--binary build/backyard-mcp] [--forks N]
        [--backend BACKEND]... [--image IMG]

BACKEND: local, docker-runc or docker-runsc, each also with -fork-sessions
(`--python-new-sessions fork`).

For each backend, one server over stdio: session `base` builds about 100 MB of Python objects
(its resident size is printed), then N calls each start a new session as a fork of `base` and
run `0` there, back to back and then 50 ms apart (a rollout's own work between forks, say).
Then N calls each start a brand-new session (no `fork_from`) and run `0` there, spaced alike:
a kernel in a sandbox (Local) or container (Docker) of its own, from the spare, or with
-fork-sessions a fork of the sessions' template. The reference, in the same server and run
and spaced alike, is a call running `0` in `base`: a fork's or a new session's own cost is
the difference (target: under 5 ms). Also printed: the time of the first cell of the server's first session. The
Docker backends need a running engine and the image (scripts/docker-setup).
"""

import argparse
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
FORK_SESSIONS = "-fork-sessions"
BACKENDS = [base + fork for base in ("local", "docker-runc", "docker-runsc")
            for fork in ("", FORK_SESSIONS)]
THINK_S = 0.05  # between spaced forks: a rollout's own work, say
BUILD = """
objects = [str(i) * 8 for i in range(600_000)] + [list(range(20)) for _ in range(120_000)]
int(open('/proc/self/statm').read().split()[1]) * 4096 // (1 << 20)
"""


def ms(fn):
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def bench(binary, backend, forks, workspace, image):
    args = ["--root", workspace, "--ruleset", "permissive", "--log-level", "off",
            "--python-sessions", str(4 * forks + 8)]
    if backend.endswith(FORK_SESSIONS):
        args += ["--python-new-sessions", "fork"]
        backend = backend[:-len(FORK_SESSIONS)]
    if backend.startswith("docker-"):
        args += ["--backend", "docker", "--runtime", backend.split("-", 1)[1], "--image", image]
    server = StdioServer(binary, *args)
    try:
        fresh = ms(lambda: server.call("run_python", code="0", session="fresh"))
        rss = int(server.call("run_python", code=BUILD, session="base", timeout_s=300)["result"])
        for _ in range(5):  # warm
            server.call("run_python", code="0", session="base")
        rows = {}
        for think in (0, THINK_S):
            plain, forked, new = [], [], []
            for i in range(forks):
                time.sleep(think)
                plain.append(ms(lambda: server.call("run_python", code="0", session="base")))
            for i in range(forks):
                time.sleep(think)
                forked.append(ms(lambda: server.call("run_python", code="0",
                                                      session=f"f{think}-{i}",
                                                      fork_from="base")))
            for i in range(forks):
                time.sleep(think)
                new.append(ms(lambda: server.call("run_python", code="0",
                                                   session=f"n{think}-{i}")))
            rows[think] = (plain, forked, new)
        check = server.call("run_python", code="len(objects)", session=f"f0-{forks - 1}")
        assert check["result"] == "720000", check
    finally:
        server.close()
    return rss, fresh, rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", default=os.path.join(REPO_ROOT, "build", "backyard-mcp"))
    # gVisor counts its own threads against a container's process limit (256 by default):
    # a family of more than about 20 forks there runs out of them.
    ap.add_argument("--forks", type=int, default=8)
    ap.add_argument("--image", default="backyard-mcp/python:bookworm")
    ap.add_argument("--backend", action="append",
                    choices=BACKENDS)
    args = ap.parse_args()
    backends = args.backend or BACKENDS
    docker_up = shutil.which("docker") and subprocess.run(
        ["docker", "info"], capture_output=True).returncode == 0
    print(f"fork of a session holding ~100 MB of objects, {args.forks} forks each way, "
          "medians (ms):")
    for backend in backends:
        if backend.startswith("docker-") and not docker_up:
            print(f"  {backend}: skipped, no Docker engine")
            continue
        with tempfile.TemporaryDirectory(prefix="byd-bench-fork-") as ws:
            os.chmod(ws, 0o777)
            rss, fresh, rows = bench(args.binary, backend, args.forks, ws, args.image)
        print(f"  {backend}: session RSS {rss} MB; the server's first session's first cell "
              f"{fresh:.1f}")
        for think, (plain, forked, new) in rows.items():
            p = statistics.median(plain)
            name = "back to back" if think == 0 else f"{think * 1000:.0f} ms apart"
            print(f"    {name:13} a cell {p:6.2f}")
            for what, times in (("fork_from", forked), ("new session", new)):
                t = statistics.median(times)
                print(f"      {what:11} + cell {t:6.2f} (spread {min(times):.1f}-"
                      f"{max(times):.1f}); alone {t - p:6.2f} "
                      f"[{'MET' if t - p < 5 else 'MISSED'}: < 5]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
