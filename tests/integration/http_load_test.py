#!/usr/bin/python3
"""Load over HTTP against the real binary: 32 concurrent sessions x 200 mixed calls (read_file,
grep, execute, run_python). Every response arrives once with its request's id, no session sees
another's files or Python state, and once the sessions end the server's thread and descriptor
counts are back where they started.

usage: http_load_test.py BINARY [unittest args]"""

import http.client
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import unittest

BINARY = None
SESSIONS = 32
CALLS = 200
ACCEPT = "application/json, text/event-stream"


def counts(pid):
    with open(f"/proc/{pid}/status") as f:
        threads = int(re.search(r"^Threads:\s+(\d+)", f.read(), re.M).group(1))
    return threads, len(os.listdir(f"/proc/{pid}/fd"))


class Session:
    def __init__(self, port):
        self.port = port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        self.sid = None
        self.next_id = 1
        self.reconnects = 0
        self.extra = {}  # headers sent with every request (a tenant's token)

    def send(self, method, headers, body=None):
        """One request and its response on the kept-alive connection."""
        try:
            self.conn.request(method, "/mcp", body=body, headers=headers)
            resp = self.conn.getresponse()
        except (ConnectionResetError, BrokenPipeError, http.client.RemoteDisconnected):
            # The server closed this kept-alive connection (idle for its keep-alive time: a
            # starved client thread on a loaded machine) before reading the request; as any
            # HTTP client does, open a new one and send it again.
            self.reconnects += 1
            self.conn.close()
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
            self.conn.request(method, "/mcp", body=body, headers=headers)
            resp = self.conn.getresponse()
        return resp, resp.read()

    def post(self, message):
        headers = {"Host": f"127.0.0.1:{self.port}", "Content-Type": "application/json",
                   "Accept": ACCEPT, **self.extra}
        if self.sid:
            headers.update({"Mcp-Session-Id": self.sid, "MCP-Protocol-Version": "2025-06-18"})
        resp, data = self.send("POST", headers, json.dumps(message).encode())
        return resp.status, resp.getheader("Mcp-Session-Id"), data

    def request(self, method, params):
        rid = self.next_id
        self.next_id += 1
        status, _, body = self.post({"jsonrpc": "2.0", "id": rid, "method": method,
                                     "params": params})
        assert status == 200, (status, body[:300])
        message = json.loads(body)
        assert message["id"] == rid, f"answer {message['id']} to request {rid}"
        return message["result"]

    def call(self, name, **arguments):
        result = self.request("tools/call", {"name": name, "arguments": arguments})
        assert not result.get("isError"), (name, arguments, result)
        return result["structuredContent"]

    def open(self):
        status, sid, body = self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                       "params": {"protocolVersion": "2025-06-18",
                                                  "capabilities": {},
                                                  "clientInfo": {"name": "load", "version": "1"}}})
        assert status == 200 and sid, (status, body[:300])
        self.sid = sid
        status, _, _ = self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert status == 202

    def close(self):
        resp, _ = self.send("DELETE", {"Host": f"127.0.0.1:{self.port}",
                                       "Mcp-Session-Id": self.sid, **self.extra})
        self.conn.close()
        assert resp.status == 200, resp.status


def work(port, n, errors):
    try:
        s = Session(port)
        s.open()
        mark = f"MARK-{n}-{s.sid[:8]}"
        s.call("write_file", path="mine.txt", content=mark + "\n")
        s.call("run_python", code=f"token = {n!r}")
        for i in range(CALLS):
            kind = i % 4
            if kind == 0:
                sc = s.call("read_file", path="mine.txt")
                assert mark in json.dumps(sc), sc
            elif kind == 1:
                sc = s.call("grep", pattern="MARK-", output_mode="files_with_matches")
                assert sc["files"] == ["mine.txt"], sc  # nobody else's files
            elif kind == 2:
                sc = s.call("execute", command="cat mine.txt; ls")
                assert sc["stdout"] == mark + "\nmine.txt\n", sc
            else:
                sc = s.call("run_python", code="token")
                assert sc["result"] == repr(n), sc  # nobody else's kernel
        s.close()
    except Exception as e:  # reported by the main thread
        errors.append(f"session {n}: {e!r}")


class HttpLoad(unittest.TestCase):
    def test_concurrent_sessions(self):
        with tempfile.TemporaryDirectory(prefix="byd-load-") as tmp:
            proc = subprocess.Popen(
                [BINARY, "--transport", "http", "--listen", "127.0.0.1:0", "--workspace-root",
                 tmp, "--root", tmp, "--ruleset", "permissive", "--log-level", "warn",
                 "--max-sessions", str(SESSIONS + 8)],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            try:
                line = proc.stderr.readline().decode()
                port = int(re.search(r"127\.0\.0\.1:(\d+)/mcp", line).group(1))
                # One session first, ended, so the baseline is the server at rest.
                errors = []
                work(port, -1, errors)
                self.assertEqual(errors, [])
                time.sleep(1.0)
                baseline = counts(proc.pid)
                started = time.monotonic()
                threads = [threading.Thread(target=work, args=(port, n, errors))
                           for n in range(SESSIONS)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join(600)
                took = time.monotonic() - started
                self.assertEqual(errors, [])
                self.assertFalse(any(t.is_alive() for t in threads), "a session hung")
                print(f"\n{SESSIONS} sessions x {CALLS} calls in {took:.1f} s", file=sys.stderr)
                # Connection threads are made on demand and end when idle: afterwards there
                # are no more threads or descriptors than before (fewer once the warm-up's
                # thread has ended too).
                def leaked():
                    return any(now > before for now, before in zip(counts(proc.pid), baseline))
                deadline = time.monotonic() + 20
                while leaked() and time.monotonic() < deadline:
                    time.sleep(0.2)
                self.assertFalse(leaked(), f"threads and descriptors leaked: {counts(proc.pid)} "
                                           f"after, {baseline} before")
                dirs = sorted(os.listdir(tmp))
                self.assertEqual(len(dirs), SESSIONS + 1, dirs)  # one directory per session
            finally:
                proc.terminate()
                self.assertEqual(proc.wait(60), 0)
                proc.stderr.close()


if __name__ == "__main__":
    BINARY = sys.argv.pop(1)
    unittest.main()
