#!/usr/bin/python3
"""The sandbox service under many sessions: 64 concurrent HTTP sessions across 4 tenants, each
with its own sandbox (Local) or container (Docker), running mixed calls (read_file, grep,
execute, run_python), every answer checked against its own session's files and Python state.

    /usr/bin/python3 bench/sessions.py [--backend local|docker] [--sessions 64] [--tenants 4]
                                       [--seconds 20] [--pool N] [--binary build/backyard-mcp]

It measures, in one run against one server:
  - idle: a warm `execute` round trip of one session on an otherwise idle server (p50, p99);
  - first call: the 64 sessions open at once (with --pool N, N per tenant made ahead); each one's first `execute` (its sandbox, or its
    container, started cold) and its first `run_python` (its kernel), p50 and p99;
  - saturation: the 64 sessions in a closed loop for --seconds: calls per second sustained and
    the warm `execute` p50/p99 under it;
  - half rate: the same sessions sending at half that rate, each on a fixed schedule: the warm
    `execute` p99 against the idle p99 (target: under 2x);
  - at rest: the server's threads and descriptors, and the engine's containers, once the
    sessions have ended, against their count before (target: back to it).
The sessions' clients run in --client-processes processes (8), a thread per session, as
separate clients do: in one interpreter, its lock would add its own waits to every latency.
Any wrong, lost or duplicated answer is an error and fails the run (exit 1). Needs, for
--backend docker, a running engine and the image (scripts/docker-setup).
"""

import argparse
import http.client
import json
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "integration"))
from http_load_test import Session, counts  # noqa: E402


def pct(values, p):
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def ms(values, p):
    return f"{pct(values, p) * 1000:.1f} ms"


def pool_filled(port, want, timeout=600):
    """Waits until the server's session pools hold `want` ready sessions; how long it took."""
    started = time.monotonic()
    while True:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
        conn.close()
        ready = sum(float(m) for m in re.findall(r"^byd_session_pool_ready\{[^}]*\} (\S+)$",
                                                   text, re.M))
        if ready >= want:
            return time.monotonic() - started
        if time.monotonic() - started > timeout:
            raise SystemExit(f"the session pools hold {ready:.0f} of {want} after {timeout} s")
        time.sleep(0.2)


def containers(backend):
    if backend != "docker":
        return 0
    out = subprocess.run(["docker", "ps", "-aq", "--filter", "label=io.backyard-mcp"],
                         capture_output=True, text=True, timeout=60).stdout
    return len(out.split())


class Client:
    """One session of one tenant, with the checks that make a wrong answer an error."""

    def __init__(self, port, token, n):
        self.s = Session(port)
        self.s.extra = {"Authorization": f"Bearer {token}"}
        self.n = n
        self.i = 0

    def timed(self, fn):
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start

    def open(self):
        self.s.open()
        self.mark = f"MARK-{self.n}-{self.s.sid[:8]}"

    def first_calls(self):
        first_execute = self.timed(lambda: self.check_execute(prepare=True))
        first_python = self.timed(lambda: self.s.call("run_python", code=f"token = {self.n!r}"))
        return first_execute, first_python

    def check_execute(self, prepare=False):
        if prepare:
            sc = self.s.call("execute", command=f"echo {self.mark} > mine.txt; cat mine.txt")
            assert sc["stdout"] == self.mark + "\n", sc
            return
        self.i += 1
        sc = self.s.call("execute", command=f"echo {self.i}; cat mine.txt")
        assert sc["stdout"] == f"{self.i}\n{self.mark}\n", sc  # its own answer, its own file

    def one(self, kind):
        """One call of `kind` (0 read, 1 grep, 2 execute, 3 run_python), checked."""
        if kind == 0:
            sc = self.s.call("read_file", path="mine.txt")
            assert self.mark in json.dumps(sc), sc
        elif kind == 1:
            sc = self.s.call("grep", pattern="MARK-", output_mode="files_with_matches")
            assert sc["files"] == ["mine.txt"], sc  # nobody else's files
        elif kind == 2:
            self.check_execute()
        else:
            self.i += 1
            sc = self.s.call("run_python", code=f"({self.i}, token)")
            assert sc["result"] == repr((self.i, self.n)), sc  # its own kernel, this call's


def run_all(clients, fn, errors):
    threads = [threading.Thread(target=guarded, args=(c, fn, errors)) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join(900)
    if any(t.is_alive() for t in threads):
        errors.append("a session hung")


def guarded(client, fn, errors):
    try:
        fn(client)
    except Exception as e:  # reported by the main thread
        where = traceback.extract_tb(e.__traceback__)
        errors.append(f"session {client.n}: {e!r} in {fn.__name__} at " +
                      " < ".join(f"{f.name}:{f.lineno}" for f in reversed(where)
                                 if "python3." not in f.filename))


def phase_open(c):
    """Opens the session; its first execute and run_python start it cold."""
    c.open()
    return c.first_calls()


def phase_closed(c, seconds):
    """A closed loop for `seconds`: the calls made, and each execute's time."""
    deadline = time.monotonic() + seconds
    calls, ex = 0, []
    while time.monotonic() < deadline:
        kind = (c.n + calls) % 4
        took = c.timed(lambda: c.one(kind))
        calls += 1
        if kind == 2:
            ex.append(took)
    return calls, ex


def phase_paced(c, seconds, interval, sessions):
    """A call every `interval` for `seconds`, starts spread over the sessions: the calls made,
    each execute's time, and how many calls were late by more than an interval."""
    deadline = time.monotonic() + seconds
    nxt = time.monotonic() + (c.n / sessions) * interval
    calls, ex, late = 0, [], 0
    while True:
        now = time.monotonic()
        if nxt > now:
            time.sleep(nxt - now)
        elif now - nxt > interval:
            late += 1  # the server fell behind the offered rate
        if time.monotonic() >= deadline:
            break
        kind = (c.n + calls) % 4
        took = c.timed(lambda: c.one(kind))
        calls += 1
        if kind == 2:
            ex.append(took)
        nxt += interval
    return calls, ex, late


def phase_close(c):
    c.s.close()


def fleet_worker(conn, port, specs):
    """A client process: its sessions, each on a thread, run the phases the parent sends."""
    clients = [Client(port, token, n) for n, token in specs]
    while True:
        msg = conn.recv()
        if msg is None:
            return
        name, args = msg
        fn = globals()[name]
        results, errors = {}, []

        def task(c):
            results[c.n] = fn(c, *args)
        task.__name__ = name
        run_all(clients, task, errors)
        conn.send((results, errors))


class Fleet:
    """The sessions, spread over client processes: as separate clients are, and so that the
    client's own interpreter lock does not add its waits to the server's latency."""

    def __init__(self, port, tokens, processes):
        ctx = multiprocessing.get_context("fork")
        self.conns, self.procs = [], []
        for i in range(processes):
            specs = [(n, t) for n, t in enumerate(tokens) if n % processes == i]
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=fleet_worker, args=(child, port, specs), daemon=True)
            proc.start()
            self.conns.append(parent)
            self.procs.append(proc)

    def run(self, phase, *args, errors):
        """Runs `phase` on every session at once; each session's result by its number."""
        for conn in self.conns:
            conn.send((phase.__name__, args))
        merged = {}
        for conn in self.conns:
            results, errs = conn.recv()
            merged.update(results)
            errors.extend(errs)
        return merged

    def close(self):
        for conn in self.conns:
            try:
                conn.send(None)
            except OSError:
                pass
        for proc in self.procs:
            proc.join(60)
            if proc.is_alive():
                proc.kill()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--binary", default=os.path.join(REPO_ROOT, "build", "backyard-mcp"))
    ap.add_argument("--backend", choices=("local", "docker"), default="local")
    ap.add_argument("--image", default="backyard-mcp/python:bookworm")
    ap.add_argument("--runtime", default="runc")
    ap.add_argument("--sessions", type=int, default=64)
    ap.add_argument("--tenants", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--idle-calls", type=int, default=200)
    ap.add_argument("--pool", type=int, default=0,
                    help="--session-pool: sessions kept ready for each tenant")
    ap.add_argument("--client-processes", type=int, default=8,
                    help="processes the sessions' clients are spread over")
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="byd-sessions-")
    tokens = {f"tenant-{t}-token-0123456789abcdef": {
        "name": f"t{t}", "max_sessions": args.sessions // args.tenants + 2}
        for t in range(args.tenants)}
    token_of = list(tokens)
    with open(os.path.join(tmp, "tokens.json"), "w") as f:
        json.dump(tokens, f)
    os.chmod(os.path.join(tmp, "tokens.json"), 0o600)
    os.mkdir(os.path.join(tmp, "spaces"))
    if args.backend == "docker":  # the containers' user works in the sessions' directories
        os.chmod(tmp, 0o755)
        os.chown(os.path.join(tmp, "spaces"), 65533, 65533)
    cmd = [args.binary, "--transport", "http", "--listen", "127.0.0.1:0",
           "--tokens-file", os.path.join(tmp, "tokens.json"),
           "--workspace-root", os.path.join(tmp, "spaces"), "--root", tmp,
           "--ruleset", "permissive", "--log-level", "warn",
           "--max-sessions", str(args.sessions + 8)]
    if args.backend == "docker":
        cmd += ["--backend", "docker", "--image", args.image, "--runtime", args.runtime]
    if args.pool:
        cmd += ["--session-pool", str(args.pool)]
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    errors, log = [], []
    report = {"backend": args.backend, "sessions": args.sessions, "tenants": args.tenants}
    try:
        port, said = None, ""
        while port is None:  # the address comes after any warnings
            line = proc.stderr.readline().decode()
            said += line
            if not line:
                raise SystemExit("the server ended before it listened:\n" + said)
            match = re.search(r"127\.0\.0\.1:(\d+)/mcp", line)
            port = int(match.group(1)) if match else None
        log = []  # the server's warnings and errors, reported with the figures
        threading.Thread(target=lambda: log.extend(proc.stderr.readlines()), daemon=True).start()
        time.sleep(1.0)
        report["pool"] = args.pool
        if args.pool:
            report["pool_filled_s"] = pool_filled(port, args.pool * args.tenants)
            # A ready session counts once its sandbox or container is up; its kernel may still
            # be starting: the rest is what holds still.
            rest, deadline = None, time.monotonic() + 60
            while time.monotonic() < deadline:
                now = counts(proc.pid) + (containers(args.backend),)
                if now == rest:
                    break
                rest = now
                time.sleep(2)
        rest = counts(proc.pid) + (containers(args.backend),)

        # Idle: one warm session alone.
        solo = Client(port, token_of[0], -1)
        solo.open()
        solo.first_calls()
        for _ in range(5):
            solo.one(2)
        idle = [solo.timed(lambda: solo.one(2)) for _ in range(args.idle_calls)]
        solo.s.close()
        report["idle_execute_p50_ms"] = pct(idle, 50) * 1000
        report["idle_execute_p99_ms"] = pct(idle, 99) * 1000

        # Every session opens at once; its first execute and run_python start it cold.
        fleet = Fleet(port, [token_of[n % args.tenants] for n in range(args.sessions)],
                      max(1, min(args.client_processes, args.sessions)))
        firsts = fleet.run(phase_open, errors=errors)
        first_exec = [f[0] for f in firsts.values()]
        first_py = [f[1] for f in firsts.values()]
        report["first_execute_p50_ms"] = pct(first_exec, 50) * 1000
        report["first_execute_p99_ms"] = pct(first_exec, 99) * 1000
        report["first_python_p50_ms"] = pct(first_py, 50) * 1000
        report["first_python_p99_ms"] = pct(first_py, 99) * 1000
        report["threads_with_sessions"] = counts(proc.pid)[0]
        if args.pool:  # the pools made again before the next phase, so as not to disturb it
            report["pool_refilled_s"] = pool_filled(port, args.pool * args.tenants)

        # Saturation: a closed loop for --seconds.
        started = time.monotonic()
        done = fleet.run(phase_closed, args.seconds, errors=errors).values()
        took = time.monotonic() - started
        calls = sum(d[0] for d in done)
        executes = [t for d in done for t in d[1]]
        rate = calls / took
        report["saturation_calls_per_s"] = rate
        report["saturation_calls"] = calls
        report["saturation_execute_p50_ms"] = pct(executes, 50) * 1000
        report["saturation_execute_p99_ms"] = pct(executes, 99) * 1000

        # Half that rate, offered: each session sends on a fixed schedule.
        interval = args.sessions / (rate / 2)
        started = time.monotonic()
        done = fleet.run(phase_paced, args.seconds, interval, args.sessions,
                         errors=errors).values()
        took = time.monotonic() - started
        executes = [t for d in done for t in d[1]]
        report["half_rate_offered_per_s"] = rate / 2
        report["half_rate_calls_per_s"] = sum(d[0] for d in done) / took
        report["half_rate_late_calls"] = sum(d[2] for d in done)
        report["half_rate_execute_p50_ms"] = pct(executes, 50) * 1000
        report["half_rate_execute_p99_ms"] = pct(executes, 99) * 1000
        report["half_rate_p99_over_idle_p99"] = pct(executes, 99) / pct(idle, 99)

        # The sessions end; the server goes back to rest.
        fleet.run(phase_close, errors=errors)
        fleet.close()
        deadline = time.monotonic() + 60
        while True:
            now = counts(proc.pid) + (containers(args.backend),)
            if all(a <= b for a, b in zip(now, rest)) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        report["rest_before"] = dict(zip(("threads", "fds", "containers"), rest))
        report["rest_after"] = dict(zip(("threads", "fds", "containers"), now))
    finally:
        proc.terminate()
        proc.wait(60)
        shutil.rmtree(tmp, ignore_errors=True)

    report["errors"] = errors
    report["server_log"] = [line.decode(errors="replace").rstrip() for line in log][:20]
    print(json.dumps(report, indent=1))
    ok = report.get("half_rate_p99_over_idle_p99", 99) < 2
    back = report.get("rest_after") and all(
        report["rest_after"][k] <= report["rest_before"][k] for k in report["rest_before"])
    print(f"\n{args.backend}: {args.sessions} sessions / {args.tenants} tenants" +
          (f", {args.pool} ready per tenant (filled in {report['pool_filled_s']:.1f} s, "
           f"again after the first calls in {report['pool_refilled_s']:.1f} s)"
           if args.pool else ""))
    print(f"  idle execute          p50 {report['idle_execute_p50_ms']:.1f} ms, "
          f"p99 {report['idle_execute_p99_ms']:.1f} ms")
    print(f"  first execute         p50 {report['first_execute_p50_ms']:.0f} ms, "
          f"p99 {report['first_execute_p99_ms']:.0f} ms")
    print(f"  first run_python      p50 {report['first_python_p50_ms']:.0f} ms, "
          f"p99 {report['first_python_p99_ms']:.0f} ms")
    print(f"  saturation            {report['saturation_calls_per_s']:.0f} calls/s, execute "
          f"p50 {report['saturation_execute_p50_ms']:.1f} ms, "
          f"p99 {report['saturation_execute_p99_ms']:.1f} ms")
    print(f"  half rate ({report['half_rate_offered_per_s']:.0f}/s)  execute "
          f"p50 {report['half_rate_execute_p50_ms']:.1f} ms, "
          f"p99 {report['half_rate_execute_p99_ms']:.1f} ms = "
          f"{report['half_rate_p99_over_idle_p99']:.2f}x idle p99 (target < 2x): "
          f"{'PASS' if ok else 'MISS'}")
    print(f"  threads with sessions {report['threads_with_sessions']}; at rest before "
          f"{report['rest_before']}, after {report['rest_after']}: "
          f"{'PASS' if back else 'MISS'}")
    print(f"  wrong, lost or duplicated answers: {len(errors)}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
