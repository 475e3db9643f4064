#!/usr/bin/python3
"""Two builds of the server side by side on `execute "echo hi"`: each over stdio with the
permissive ruleset on one scratch workspace, the calls taking turns (alternating which goes
first), so that a slow spell of a shared machine falls on both. Prints p25, p50, p75 and p90
of the round trip for each, and the ratio of the p50s (B over A).

    /usr/bin/python3 bench/execute_ab.py A_BINARY B_BINARY [--calls 300] [--command 'echo hi']
                                         [-- SERVER_ARGS...]

(SERVER_ARGS for both, e.g. `-- --backend docker --image backyard-mcp/python:bookworm
--runtime runc`.)

For instance, the build before a change (a `git worktree` of it, built) against this one."""

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "integration"))
from mcp_client import Client  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--command", default="echo hi")
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    args = ap.parse_args(argv[:cut])
    args.server_args = argv[cut + 1:]  # after --: for both servers
    with tempfile.TemporaryDirectory(prefix="byd-ab-") as root:
        if "docker" in args.server_args:  # the containers' user works in it
            os.chmod(root, 0o777)
        servers = [(name, Client(path, "--root", root, "--log-level", "off", "--ruleset",
                                 "permissive", *args.server_args))
                   for name, path in (("A", args.a), ("B", args.b))]
        times = {name: [] for name, _ in servers}
        for _, client in servers:
            for _ in range(20):  # warm-up
                client.call("execute", command=args.command)
        for i in range(args.calls):
            for name, client in servers if i % 2 == 0 else servers[::-1]:
                start = time.perf_counter()
                result = client.call("execute", command=args.command)
                times[name].append(time.perf_counter() - start)
                if result.get("isError"):
                    sys.exit(f"{name}: {result}")
        for _, client in servers:
            client.close()
    p50 = {}
    for name, path in (("A", args.a), ("B", args.b)):
        v = sorted(times[name])
        q = lambda f: v[int(f * (len(v) - 1))] * 1e3  # noqa: E731
        p50[name] = q(0.5)
        print(f"{name} {path}: p25 {q(0.25):.3f} ms  p50 {q(0.5):.3f} ms  p75 {q(0.75):.3f} ms  "
              f"p90 {q(0.9):.3f} ms")
    print(f"p50 B / A: {p50['B'] / p50['A']:.3f}")


if __name__ == "__main__":
    main()
