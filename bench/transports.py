#!/usr/bin/python3
"""Throughput and memory of backyard-mcp per transport, beside the official filesystem server.

Standard library only; run with Debian's /usr/bin/python3 (after `npm ci --prefix
bench/reference` for the reference server):

    /usr/bin/python3 bench/transports.py [--quick] [--binary build/backyard-mcp]

Measures calls per second of a 1 KiB read with 1, 8 and 64 clients in flight, with p50/p99
latency: the official @modelcontextprotocol/server-filesystem over stdio (its read_text_file)
and backyard-mcp over stdio (read_file; requests pipelined, N in flight), both driven by a native
client (bench/stdio_load.cpp, built here with g++) so that the client does not cap the rate,
backyard-mcp over stdio driven by this script too, and backyard-mcp over Streamable HTTP (N
clients, each its own session on a keep-alive connection, driven by bench/http_load.cpp). Then
the memory of idle HTTP sessions: RSS of the server, and of the server with every process
below it, per session.
"""

import argparse
import http.client
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_BINARY = os.path.join(os.path.dirname(HERE), "build", "backyard-mcp")
REFERENCE = os.path.join(HERE, "reference", "node_modules", "@modelcontextprotocol",
                         "server-filesystem", "dist", "index.js")
ACCEPT = "application/json, text/event-stream"
INIT_PARAMS = {"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "bench", "version": "1"}}


def percentile(samples, p):
    s = sorted(samples)
    return s[min(len(s) - 1, int(round(p / 100.0 * (len(s) - 1))))]


def rss_kib(pids):
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as f:
                total += int(re.search(r"^VmRSS:\s+(\d+)", f.read(), re.M).group(1))
        except (FileNotFoundError, AttributeError):
            pass
    return total


def tree(pid):
    """`pid` and every process below it."""
    parent = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    parent[int(name)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (FileNotFoundError, IndexError):
                pass
    out = [pid]
    for p in parent:
        q = p
        while q in parent and q != pid:
            q = parent[q]
        if q == pid and p != pid:
            out.append(p)
    return out


BUILD = os.path.join(os.path.dirname(HERE), "build")


def native(name):
    """Builds bench/NAME.cpp (a native load client) into build/bench-NAME when it is missing
    or older than its source, and returns its path."""
    source = os.path.join(HERE, name.replace("-", "_") + ".cpp")
    binary = os.path.join(BUILD, "bench-" + name)
    newest = max(os.path.getmtime(source), os.path.getmtime(os.path.join(HERE, "load_report.h")))
    if not os.path.exists(binary) or os.path.getmtime(binary) < newest:
        subprocess.run(["g++", "-O2", "-std=c++20", "-Wall", "-Wextra", "-Werror", source,
                        "-o", binary], check=True)
    return binary


def native_rate(argv):
    """(calls/s, p50 s, p99 s) printed by a native load client run as `argv`."""
    r = json.loads(subprocess.run(argv, capture_output=True, text=True, check=True).stdout)
    return r["calls_per_s"], r["p50_s"], r["p99_s"]


def stdio_rate_native(argv, tool, path, in_flight, total):
    """(calls/s, p50 s, p99 s) as stdio_rate, measured by the native client, so that the
    client's own cost does not cap the rate."""
    return native_rate([native("stdio-load"), tool, path, str(in_flight), str(total), "--", *argv])


def stdio_rate(argv, tool, path, in_flight, total):
    """(calls/s, p50 s, p99 s) for `total` tools/call over stdio with `in_flight` pipelined."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, bufsize=0)
    out = proc.stdout

    def send(msg):
        proc.stdin.write((json.dumps(msg) + "\n").encode())

    buf = b""

    def read_answer():
        nonlocal buf
        while True:
            nl = buf.find(b"\n")
            if nl >= 0:
                line, buf = buf[:nl], buf[nl + 1:]
                msg = json.loads(line)
                if "id" in msg:
                    return msg
                continue
            chunk = os.read(out.fileno(), 1 << 20)
            if not chunk:
                raise RuntimeError("server closed stdout")
            buf += chunk

    send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT_PARAMS})
    read_answer()
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    call = {"jsonrpc": "2.0", "method": "tools/call",
            "params": {"name": tool, "arguments": {"path": path}}}
    sent_at, latencies, next_id = {}, [], 1
    start = time.perf_counter()
    while next_id <= min(in_flight, total):
        sent_at[next_id] = time.perf_counter()
        send({**call, "id": next_id})
        next_id += 1
    done = 0
    while done < total:
        msg = read_answer()
        assert "result" in msg and not msg["result"].get("isError"), msg
        latencies.append(time.perf_counter() - sent_at.pop(msg["id"]))
        done += 1
        if next_id <= total:
            sent_at[next_id] = time.perf_counter()
            send({**call, "id": next_id})
            next_id += 1
    took = time.perf_counter() - start
    proc.stdin.close()
    proc.wait(10)
    return total / took, percentile(latencies, 50), percentile(latencies, 99)


class HttpServer:
    def __init__(self, binary, root, *extra):
        self.proc = subprocess.Popen(
            [binary, "--transport", "http", "--listen", "127.0.0.1:0", "--root", root,
             "--ruleset", "permissive", "--log-level", "off", "--max-sessions", "1000", *extra],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        line = self.proc.stderr.readline().decode()
        self.port = int(re.search(r"127\.0\.0\.1:(\d+)/mcp", line).group(1))

    def session(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        headers = {"Host": f"127.0.0.1:{self.port}", "Content-Type": "application/json",
                   "Accept": ACCEPT}
        conn.request("POST", "/mcp", body=json.dumps({"jsonrpc": "2.0", "id": 0,
                                                      "method": "initialize",
                                                      "params": INIT_PARAMS}), headers=headers)
        resp = conn.getresponse()
        resp.read()
        headers["Mcp-Session-Id"] = resp.getheader("Mcp-Session-Id")
        headers["MCP-Protocol-Version"] = "2025-06-18"
        conn.request("POST", "/mcp", body=json.dumps({"jsonrpc": "2.0",
                                                      "method": "notifications/initialized"}),
                     headers=headers)
        conn.getresponse().read()
        return conn, headers

    def stop(self):
        self.proc.terminate()
        self.proc.wait(30)
        self.proc.stderr.close()


def http_rate(server, path, clients, total):
    """(calls/s, p50 s, p99 s) for `clients` sessions, each on a keep-alive connection of its
    own sending one request after another, measured by the native HTTP client."""
    return native_rate([native("http-load"), str(server.port), "read_file", path, str(clients),
                        str(total)])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--binary", default=DEFAULT_BINARY)
    ap.add_argument("--quick", action="store_true", help="fewer calls")
    args = ap.parse_args()
    binary = os.path.abspath(args.binary)
    total = 2000 if args.quick else 10000
    idle_sessions = 20 if args.quick else 100
    rows = []
    with tempfile.TemporaryDirectory(prefix="byd-bench-http-") as root:
        path = os.path.join(root, "one_k.txt")
        with open(path, "w") as f:
            f.write(("0123456789abcdef" * 4 + "\n") * 15 + "x" * 49 + "\n")  # 1024 bytes
        have_reference = os.path.exists(REFERENCE)
        if not have_reference:
            print("reference server missing: npm ci --prefix bench/reference", file=sys.stderr)
        for in_flight in (1, 8, 64):
            print(f"{in_flight} in flight ...", file=sys.stderr, flush=True)
            ref = stdio_rate_native(["node", REFERENCE, root], "read_text_file", path,
                                    in_flight, total // 4) if have_reference else None
            ours = stdio_rate_native([binary, "--root", root, "--log-level", "off", "--ruleset",
                                      "permissive"], "read_file", path, in_flight, total * 2)
            ours_py = stdio_rate([binary, "--root", root, "--log-level", "off", "--ruleset",
                                  "permissive"], "read_file", path, in_flight, total)
            server = HttpServer(binary, root)
            try:
                web = http_rate(server, path, in_flight, total * 2)
            finally:
                server.stop()
            rows.append((in_flight, ref, ours, ours_py, web))

        print(f"idle sessions: {idle_sessions} ...", file=sys.stderr, flush=True)
        server = HttpServer(binary, root)
        try:
            time.sleep(1.0)
            before, before_tree = rss_kib([server.proc.pid]), rss_kib(tree(server.proc.pid))
            held = [server.session() for _ in range(idle_sessions)]
            time.sleep(2.0)  # sessions' sandboxes and spare kernels have started
            after, after_tree = rss_kib([server.proc.pid]), rss_kib(tree(server.proc.pid))
            for conn, _ in held:
                conn.close()
        finally:
            server.stop()

    def fmt(r):
        return "—" if r is None else f"{r[0]:8.0f}/s  p50 {r[1] * 1e3:6.2f} ms  p99 {r[2] * 1e3:6.2f} ms"

    print(f"\n1 KiB read, calls per second (load average {os.getloadavg()[0]:.2f})")
    print("stdio columns: the native client (bench/stdio_load.cpp) drives both servers; the "
          "last stdio column is backyard-mcp driven by this Python script, for comparison")
    print(f"{'in flight':>9}  {'server-filesystem, stdio':<40}{'backyard-mcp, stdio':<40}"
          f"{'backyard-mcp, HTTP':<40}{'stdio / reference':>18}  {'backyard-mcp, stdio (Python)':<40}")
    for in_flight, ref, ours, ours_py, web in rows:
        ratio = f"{ours[0] / ref[0]:.1f}x" if ref else "—"
        print(f"{in_flight:>9}  {fmt(ref):<40}{fmt(ours):<40}{fmt(web):<40}{ratio:>18}  "
              f"{fmt(ours_py):<40}")
    print(f"\nidle HTTP sessions: {idle_sessions}")
    print(f"  server RSS per session:                     "
          f"{(after - before) / idle_sessions:8.1f} KiB   (target < 1024 KiB)")
    print(f"  server and its processes, RSS per session:  "
          f"{(after_tree - before_tree) / idle_sessions:8.1f} KiB")


if __name__ == "__main__":
    main()
