#!/usr/bin/python3
"""What the file rules' masks cost `execute "echo hi"`: two servers of one build on one tree,
one with the masks (as it runs) and one with the test switch that leaves them out (the server as
it was before them), the calls taking turns so that a slow spell of a shared machine falls on
both. Two trees: the bench fixture (about 2,000 files, bench/run.py makes it) and a generated
tree of 100,000 files with 50 secrets spread through it. For each, prints p50 with and without
the masks, the difference (targets: 0.5 ms and 2 ms), the first call (when the index reads the
whole tree) and a call right after a file was added somewhere deep (what a change costs).

    /usr/bin/python3 bench/file_masks.py [--binary build/backyard-mcp] [--calls 300]
                                         [--docker RUNTIME]...

With --docker runc (or runsc, or both), the same in the Docker backend's containers (the local
test image, scripts/docker-setup), where the container's root mounts the masks before each
command.
"""

import argparse
import os
import random
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
sys.path.insert(0, HERE)
from mcp_client import Client  # noqa: E402
import run as bench_run  # noqa: E402


def big_tree(root, files=100_000, secrets=50, seed=7):
    """`files` small files in about files/50 directories up to five levels deep, `secrets` of
    them named as secrets (.env, *.pem, *.key, id_rsa) at random places."""
    rng = random.Random(seed)
    dirs = [""]
    while len(dirs) < files // 50:
        parent = rng.choice(dirs)
        if parent.count("/") < 5:
            dirs.append(os.path.join(parent, "d%d" % len(dirs)))
    for d in dirs:
        os.makedirs(os.path.join(root, d), exist_ok=True)
    names = ["f%d.txt" % i for i in range(files - secrets)]
    for i in range(secrets):
        names.append(rng.choice([".env", "s%d.pem", "s%d.key", "id_rsa_%d"]).replace("%d", str(i)))
    for name in names:
        d = rng.choice(dirs)
        with open(os.path.join(root, d, name), "w") as f:
            f.write("x\n")
    return dirs


def p50(samples):
    v = sorted(samples)
    return v[len(v) // 2] * 1e3


def measure(root, calls, binary, deep_dir, extra):
    env_off = dict(os.environ, BYD_TEST_SANDBOX_WITHOUT="masks")
    args = ("--root", root, "--log-level", "off", "--ruleset", "permissive", *extra)
    on, off = Client(binary, *args), Client(binary, *args, env=env_off)
    try:
        start = time.perf_counter()
        on.call("execute", command="echo hi")
        first_on = time.perf_counter() - start
        start = time.perf_counter()
        off.call("execute", command="echo hi")
        first_off = time.perf_counter() - start
        for client in (on, off):
            for _ in range(20):
                client.call("execute", command="echo hi")
        times = {"on": [], "off": []}
        pair = [("on", on), ("off", off)]
        for i in range(calls):
            for name, client in pair if i % 2 == 0 else pair[::-1]:
                start = time.perf_counter()
                r = client.call("execute", command="echo hi")
                times[name].append(time.perf_counter() - start)
                if r.get("isError") or r["structuredContent"]["exit_code"] != 0:
                    sys.exit("%s: %s" % (name, r))
        changed = []
        for i in range(20):
            path = os.path.join(root, deep_dir, "added-%d.key" % i)
            with open(path, "w") as f:
                f.write("x\n")
            start = time.perf_counter()
            on.call("execute", command="echo hi")
            changed.append(time.perf_counter() - start)
            os.remove(path)
            on.call("execute", command="echo hi")
    finally:
        on.close()
        off.close()
    return {"on": p50(times["on"]), "off": p50(times["off"]), "first_on": first_on * 1e3,
            "first_off": first_off * 1e3, "changed": p50(changed)}


def report(name, r, target):
    diff = r["on"] - r["off"]
    print("%-46s p50 %.2f ms with masks, %.2f ms without: %+.2f ms (target +%.1f ms) %s" %
          (name, r["on"], r["off"], diff, target, "PASS" if diff <= target else "MISS"))
    print("%-46s first call %.1f ms with masks (the whole tree read), %.1f ms without; "
          "after a file is added deep: p50 %.2f ms" % ("", r["first_on"], r["first_off"],
                                                       r["changed"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", default=os.path.join(HERE, "..", "build", "backyard-mcp"))
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--docker", action="append", metavar="RUNTIME", choices=("runc", "runsc"))
    ap.add_argument("--image", default="backyard-mcp/python:bookworm")
    args = ap.parse_args()
    backends = [("Local", [])]
    if args.docker:
        backends = [("Docker %s" % rt, ["--backend", "docker", "--image", args.image,
                                        "--runtime", rt]) for rt in args.docker]
    fixture = os.path.join(HERE, "fixture")
    bench_run.load_or_generate_fixture(fixture, False)
    deep = max((d for d, _, _ in os.walk(fixture)), key=lambda d: d.count("/"))
    for name, extra in backends:
        report("%s, bench fixture (2,000 files)" % name,
               measure(fixture, args.calls, args.binary, os.path.relpath(deep, fixture), extra),
               0.5)
    with tempfile.TemporaryDirectory(prefix="byd-masks-") as root:
        os.chmod(root, 0o755)  # a container's user enters it
        t = time.perf_counter()
        dirs = big_tree(root)
        print("generated 100,000 files in %d directories in %.1f s" %
              (len(dirs), time.perf_counter() - t))
        deepest = max(dirs, key=lambda d: d.count("/"))
        for name, extra in backends:
            report("%s, 100,000 files, 50 secrets" % name,
                   measure(root, args.calls, args.binary, deepest, extra), 2.0)


if __name__ == "__main__":
    main()
