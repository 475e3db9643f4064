#!/usr/bin/python3
"""Slow clients against the HTTP transport: /healthz and an authenticated request, timed with
nothing else connected (the reference) and then while 500 connections each send one header
line every 2 s from addresses of their own (127.0.x.y). Prints p50 and p99 of both and their
ratios to the reference. The target: health p99 under 100 ms while the slow ones are held.

usage: bench/slow_clients.py BINARY [--slow N] [--requests N]"""

import argparse
import http.client
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "bench", "version": "1"}}}
TOKEN = "bench-token-0123456789"


def timed(port, method, path, body=None, token=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Host": f"127.0.0.1:{port}"}
    if body is not None:
        headers.update({"Content-Type": "application/json",
                        "Accept": "application/json, text/event-stream"})
    if token:
        headers["Authorization"] = f"Bearer {token}"
    start = time.perf_counter()
    conn.request(method, path, body=json.dumps(body).encode() if body else None, headers=headers)
    resp = conn.getresponse()
    resp.read()
    took = (time.perf_counter() - start) * 1000
    conn.close()
    assert resp.status == 200, resp.status
    return took


def measure(port, requests):
    health = sorted(timed(port, "GET", "/healthz") for _ in range(requests))
    calls = sorted(timed(port, "POST", "/mcp", INIT, TOKEN) for _ in range(requests // 4))
    pick = lambda xs, q: xs[min(len(xs) - 1, int(q * len(xs)))]  # noqa: E731
    return {"health p50": pick(health, 0.5), "health p99": pick(health, 0.99),
            "initialize p50": pick(calls, 0.5), "initialize p99": pick(calls, 0.99)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--slow", type=int, default=500)
    ap.add_argument("--requests", type=int, default=400)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="byd-bench-slow-") as root:
        proc = subprocess.Popen(
            [args.binary, "--transport", "http", "--listen", "127.0.0.1:0", "--root", root,
             "--log-level", "warn", "--max-sessions", "100000"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            env=dict(os.environ, BACKYARD_TOKEN=TOKEN))
        port = int(re.search(r"127\.0\.0\.1:(\d+)/mcp", proc.stderr.readline().decode()).group(1))
        try:
            reference = measure(port, args.requests)
            slow, stop = [], threading.Event()
            for i in range(args.slow):
                s = socket.create_connection(("127.0.0.1", port),
                                             source_address=(f"127.0.{1 + i // 250}.{2 + i % 250}", 0))
                s.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode())
                slow.append(s)

            def trickle():
                n = 0
                while not stop.wait(2):
                    for s in slow:
                        try:
                            s.sendall(f"X-Slow-{n}: 1\r\n".encode())
                        except OSError:
                            pass
                    n += 1
            feeder = threading.Thread(target=trickle, daemon=True)
            feeder.start()
            time.sleep(1)
            loaded = measure(port, args.requests)
            stop.set()
            for s in slow:
                s.close()
        finally:
            proc.terminate()
            proc.wait(30)
    print(f"{args.slow} slow connections (one header line every 2 s each), "
          f"{args.requests} health checks, {args.requests // 4} authenticated initializes")
    print(f"{'':18}{'alone':>10}{'with slow':>12}{'ratio':>8}")
    for key in reference:
        print(f"{key:18}{reference[key]:>9.2f}ms{loaded[key]:>10.2f}ms"
              f"{loaded[key] / reference[key]:>8.1f}x")
    ok = loaded["health p99"] < 100
    print("health p99 under 100 ms while held:", "yes" if ok else "NO")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
