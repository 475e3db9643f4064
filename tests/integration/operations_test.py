#!/usr/bin/python3
"""What an operator reads: the audit log (--audit-log) over stdio and HTTP, with secrets
redacted, denials and their rules, and reopening on SIGHUP; and /metrics in Prometheus' text
format (parsed by prometheus_client, Debian's python3-prometheus-client), behind the operator's
token (--admin-token-file) or loopback alone.

usage: operations_test.py BINARY [unittest args]"""

import http.client
import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
import time
import unittest

from prometheus_client.parser import text_string_to_metric_families

import http_test
from http_test import Server
from mcp_client import Client

SECRET = "sk-live0123456789abcdefghijklmnop"
ADMIN = "operator-token-0123456789abcdef"
TENANT = "tenant-token-fedcba9876543210"


def lines_of(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def wait_for_lines(path, n, within=10.0):
    deadline = time.monotonic() + within
    while True:
        got = lines_of(path) if os.path.exists(path) else []
        if len(got) >= n or time.monotonic() > deadline:
            return got
        time.sleep(0.05)


class Workspace(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = os.path.join(self.tmp.name, "root")
        os.mkdir(self.root)
        with open(os.path.join(self.root, ".env"), "w") as f:
            f.write("API_KEY=hunter2\n")
        self.log = os.path.join(self.tmp.name, "audit.jsonl")

    def tearDown(self):
        self.tmp.cleanup()


class AuditOverStdio(Workspace):
    def start(self):
        return Client(BINARY, "--root", self.root, "--ruleset", "permissive", "--audit-log",
                      self.log)

    def test_each_call_is_a_line_with_its_decision_and_outcome(self):
        c = self.start()
        c.call("write_file", path="notes.txt", content="hello\n")
        c.call("read_file", path="notes.txt")
        denied = c.call("read_file", path=".env")
        self.assertTrue(denied.get("isError"), denied)
        c.call("execute", command=f"echo token={SECRET} > /dev/null; exit 3")
        c.call("read_file", path="no-such-file.txt")
        self.assertEqual(c.close(), 0)
        got = lines_of(self.log)
        self.assertEqual([line["tool"] for line in got],
                         ["write_file", "read_file", "read_file", "execute", "read_file"])
        write, read, env, run, missing = got
        for line in got:
            self.assertEqual(line["transport"], "stdio")
            self.assertEqual(line["via"], "client")
            self.assertRegex(line["time"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
            self.assertGreaterEqual(line["duration_ms"], 0)
        self.assertEqual(write["outcome"], "ok")
        self.assertEqual(write["arguments"], {"path": "notes.txt", "content": "hello\n"})
        self.assertEqual(write["permission"]["operation"], "write")
        self.assertEqual(write["permission"]["action"], "allow")
        self.assertTrue(write["permission"]["allowed"])
        self.assertEqual(read["outcome"], "ok")
        # The denial, the rule that made it, and the message the model got.
        self.assertEqual(env["outcome"], "denied")
        self.assertEqual(env["permission"]["action"], "deny")
        self.assertFalse(env["permission"]["allowed"])
        self.assertIn(".env", env["permission"]["rule"])
        self.assertIn("denied", env["error"])
        # A command that ran and failed is the command's outcome, not an error of the call.
        self.assertEqual(run["permission"]["operation"], "execute")
        self.assertEqual(missing["outcome"], "error")
        # The secret never reaches the log; what surrounds it does.
        with open(self.log, encoding="utf-8") as f:
            whole = f.read()
        self.assertNotIn(SECRET, whole)
        self.assertNotIn("hunter2", whole)
        self.assertIn("token=[redacted]", run["arguments"]["command"])
        self.assertEqual(stat.S_IMODE(os.stat(self.log).st_mode), 0o600)

    def test_a_link_to_a_denied_file_is_logged_as_denied(self):
        os.symlink(".env", os.path.join(self.root, "innocent.txt"))
        c = self.start()
        self.assertTrue(c.call("read_file", path="innocent.txt").get("isError"))
        c.close()
        (line,) = lines_of(self.log)
        self.assertEqual(line["outcome"], "denied")
        self.assertEqual(line["permission"]["action"], "deny")
        self.assertFalse(line["permission"]["allowed"])
        self.assertIn("through a link to .env", line["permission"]["rule"])

    def test_long_arguments_are_cut_saying_how_long_they_were(self):
        c = self.start()
        c.call("write_file", path="big.txt", content="x" * 5000)
        c.close()
        (line,) = lines_of(self.log)
        content = line["arguments"]["content"]
        self.assertLess(len(content), 300)
        self.assertIn("(5000 bytes)", content)

    def test_sighup_reopens_the_log_by_its_name(self):
        c = self.start()
        c.call("read_file", path=".env")
        wait_for_lines(self.log, 1)
        rotated = self.log + ".1"
        os.rename(self.log, rotated)
        c.call("ls", path=".")  # still the old file: the log was not reopened yet
        c.proc.send_signal(signal.SIGHUP)
        time.sleep(0.3)
        c.call("glob", pattern="*")
        self.assertTrue(c.ping(), "the server lives on after SIGHUP")
        self.assertEqual(c.close(), 0)
        self.assertEqual([line["tool"] for line in lines_of(rotated)], ["read_file", "ls"])
        self.assertEqual([line["tool"] for line in lines_of(self.log)], ["glob"])

    def test_a_log_that_cannot_be_opened_is_refused_at_start(self):
        bad = os.path.join(self.tmp.name, "no-such-dir", "audit.jsonl")
        r = subprocess.run([BINARY, "--root", self.root, "--audit-log", bad],
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn(b"--audit-log", r.stderr)
        self.assertIn(b"no-such-dir", r.stderr)


def metric_samples(text):
    """{(name, frozenset(labels)): value} of every sample, parsed as Prometheus parses it."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def sample(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())))


class OverHttp(Workspace):
    def setUp(self):
        super().setUp()
        self.admin_file = os.path.join(self.tmp.name, "admin")
        with open(self.admin_file, "w") as f:
            f.write(ADMIN + "\n")
        self.token_file = os.path.join(self.tmp.name, "token")
        with open(self.token_file, "w") as f:
            f.write(TENANT + "\n")
        self.servers = []

    def tearDown(self):
        for s in self.servers:
            s.stop()
        super().tearDown()

    def serve(self, *args):
        s = Server(self.root, "--audit-log", self.log, *args)
        self.servers.append(s)
        return s

    def metrics(self, server, token=None):
        headers = {"Authorization": "Bearer " + token} if token else {}
        return server.request("GET", "/metrics", headers=headers)

    def test_audit_lines_name_the_tenant_and_session(self):
        s = self.serve("--token-file", self.token_file)
        auth = {"Authorization": "Bearer " + TENANT}
        sid = s.initialize(headers=auth)
        status, _, body = s.call(sid, 2, "read_file", {"path": ".env"}, headers=auth)
        self.assertEqual(status, 200, body)
        (line,) = wait_for_lines(self.log, 1)
        self.assertEqual(line["transport"], "http")
        self.assertEqual(line["tenant"], "default")
        self.assertEqual(line["session"], sid[:8])
        self.assertEqual(line["outcome"], "denied")
        with open(self.log, encoding="utf-8") as f:
            self.assertNotIn(sid, f.read(), "the whole session id is never logged")

    def test_metrics_need_the_operators_token(self):
        s = self.serve("--token-file", self.token_file, "--admin-token-file", self.admin_file)
        for token in (None, TENANT, ADMIN + "x"):
            status, headers, _ = self.metrics(s, token)
            self.assertEqual(status, 401, token)
            self.assertIn("bearer", headers.get("www-authenticate", "").lower())
        status, headers, body = self.metrics(s, ADMIN)
        self.assertEqual(status, 200, body)
        self.assertTrue(headers["content-type"].startswith("text/plain; version=0.0.4"))
        # The operator's token opens nothing else.
        status, _, _ = s.request("POST", body=http_test.INIT,
                                 headers={"Authorization": "Bearer " + ADMIN})
        self.assertEqual(status, 401)

    def test_metrics_count_sessions_calls_decisions_and_bytes(self):
        s = self.serve("--admin-token-file", self.admin_file)
        sid = s.initialize()
        calls = [("write_file", {"path": "a.txt", "content": "0123456789"}),
                 ("read_file", {"path": "a.txt"}),
                 ("read_file", {"path": "a.txt"}),
                 ("read_file", {"path": ".env"}),
                 ("execute", {"command": "echo hi"})]
        for i, (tool, args) in enumerate(calls):
            status, _, body = s.call(sid, 10 + i, tool, args)
            self.assertEqual(status, 200, body)
        status, _, body = self.metrics(s, ADMIN)
        self.assertEqual(status, 200, body)
        m = metric_samples(body.decode())
        self.assertEqual(sample(m, "byd_sessions", tenant="default"), 1)
        self.assertEqual(sample(m, "byd_tool_calls_total", tool="read_file", outcome="ok"), 2)
        self.assertEqual(sample(m, "byd_tool_calls_total", tool="read_file", outcome="denied"), 1)
        self.assertEqual(sample(m, "byd_tool_calls_total", tool="write_file", outcome="ok"), 1)
        self.assertEqual(sample(m, "byd_tool_call_duration_seconds_count", tool="read_file"), 3)
        self.assertEqual(
            sample(m, "byd_tool_call_duration_seconds_bucket", tool="read_file", le="+Inf"), 3)
        self.assertGreaterEqual(
            sample(m, "byd_permission_decisions_total", operation="read", action="deny"), 1)
        self.assertGreaterEqual(
            sample(m, "byd_permission_decisions_total", operation="read", action="allow"), 2)
        self.assertEqual(sample(m, "byd_written_bytes_total", operation="write"), 10)
        self.assertGreaterEqual(sample(m, "byd_read_bytes_total", operation="read"), 20)
        self.assertGreaterEqual(sample(m, "byd_sandbox_starts_total"), 1)
        # The session ends: it is no longer counted.
        s.request("DELETE", headers={"Mcp-Session-Id": sid})
        m = metric_samples(self.metrics(s, ADMIN)[2].decode())
        self.assertEqual(sample(m, "byd_sessions", tenant="default"), 0)

    def test_without_an_operators_token_metrics_answer_loopback(self):
        s = self.serve()
        status, _, body = self.metrics(s)
        self.assertEqual(status, 200, body)
        self.assertIn(b"# TYPE byd_tool_calls_total counter", body)
        # A proxy on this machine speaks for clients elsewhere.
        for header in ("X-Forwarded-For", "Forwarded"):
            status, _, _ = s.request("GET", "/metrics", headers={header: "for=192.0.2.7"})
            self.assertEqual(status, 403, header)

    def test_made_up_tool_names_share_one_series(self):
        s = self.serve()
        sid = s.initialize()
        for i in range(3):
            s.call(sid, 20 + i, f"no_such_tool_{i}", {})
        m = metric_samples(self.metrics(s)[2].decode())
        self.assertEqual(sample(m, "byd_tool_calls_total", tool="(unknown)", outcome="error"), 3)
        self.assertFalse([k for k in m if ("tool", "no_such_tool_0") in k[1]])

    def test_the_pages_calls_are_answered_even_when_the_client_runs_calls_as_tasks(self):
        s = self.serve("--ui", "--admin-token-file", self.admin_file)
        init = json.loads(json.dumps(http_test.INIT))
        init["params"]["protocolVersion"] = "2025-11-25"
        init["params"]["capabilities"] = {
            "extensions": {"io.modelcontextprotocol/tasks": {}}}
        status, h, body = s.request("POST", body=init)
        self.assertEqual(status, 200, body)
        sid = h["mcp-session-id"]
        call = {"jsonrpc": "2.0", "id": "c1", "method": "tools/call",
                "params": {"name": "execute", "arguments": {"command": "echo from-the-page"}}}
        # The client itself gets a task for it ...
        status, _, body = s.request("POST", body=call, headers={
            "Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"})
        self.assertEqual(status, 200, body)
        self.assertEqual(http_test.body_messages(body)[-1]["result"]["resultType"], "task")
        # ... the page, which waits for its answer, gets the answer.
        call["id"] = "ui-1"
        status, _, body = s.request("POST", f"/ui/api/sessions/{sid}/mcp", body=call,
                                    headers={"Authorization": "Bearer " + ADMIN})
        self.assertEqual(status, 200, body)
        result = http_test.body_messages(body)[-1]["result"]
        self.assertEqual(result["structuredContent"]["stdout"], "from-the-page\n")
        (line,) = [l for l in wait_for_lines(self.log, 2) if l["via"] == "operator page"]
        self.assertEqual(line["tool"], "execute")

    def test_the_pages_activity_stream_follows_the_sessions_calls(self):
        s = self.serve("--ui", "--admin-token-file", self.admin_file)
        sid = s.initialize()
        self.assertEqual(s.call(sid, 2, "ls", {})[0], 200)
        auth = {"Authorization": "Bearer " + ADMIN}
        path = f"/ui/api/sessions/{sid}/activity/events"
        self.assertEqual(s.request("GET", path)[0], 401, "the operator's token alone")
        status, _, body = s.request("GET", path + "?after=x", headers=auth)
        self.assertEqual(status, 400)
        self.assertIn(b"after=", body)
        self.assertEqual(s.request("GET", "/ui/api/sessions/00ff/activity/events",
                                   headers=auth)[0], 404)

        def follow(query=""):
            conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=20)
            self.addCleanup(conn.close)
            conn.request("GET", path + query, headers=auth)
            r = conn.getresponse()
            self.assertEqual(r.status, 200)
            self.assertTrue(r.getheader("Content-Type").startswith("text/event-stream"))
            return r

        def next_event(r):
            data = []
            while True:
                line = r.fp.readline()
                self.assertTrue(line, "the stream ended early")
                line = line.decode().rstrip("\r\n")
                if line.startswith("data:"):
                    data.append(line[5:].strip())
                elif not line and data:
                    return json.loads("".join(data))

        # What happened before the page looked, then each call as it lands.
        stream = follow()
        (first,) = next_event(stream)
        self.assertEqual(first["tool"], "ls")
        self.assertEqual(s.call(sid, 3, "read_file", {"path": ".env"})[0], 200)
        (denied,) = next_event(stream)
        self.assertEqual((denied["tool"], denied["outcome"]), ("read_file", "denied"))
        self.assertGreater(denied["seq"], first["seq"])
        # A page that comes back asks for what it has not seen.
        self.assertEqual(next_event(follow(f"?after={first['seq']}")), [denied])
        self.assertEqual(next_event(follow(f"?after={denied['seq']}")), [])
        # The stream ends with its session.
        s.request("DELETE", headers={"Mcp-Session-Id": sid})
        deadline = time.monotonic() + 10
        while stream.fp.readline() and time.monotonic() < deadline:
            pass
        self.assertLess(time.monotonic(), deadline, "the stream outlived its session")

    def test_the_page_needs_the_operators_token(self):
        r = subprocess.run([BINARY, "--transport", "http", "--listen", "127.0.0.1:0", "--root",
                            self.root, "--ui"], stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=30)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn(b"--ui needs", r.stderr)
        self.assertIn(b"--admin-token-file", r.stderr)
        s = self.serve()  # without --ui there is no page, and no way around the tokens
        for path in ("/ui", "/ui/api/state"):
            status, _, _ = s.request("GET", path)
            self.assertEqual(status, 404, path)

    def test_the_operators_token_must_be_their_own(self):
        with open(self.admin_file, "w") as f:
            f.write(TENANT + "\n")
        r = subprocess.run([BINARY, "--transport", "http", "--listen", "127.0.0.1:0", "--root",
                            self.root, "--token-file", self.token_file, "--admin-token-file",
                            self.admin_file], stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=30)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn(b"--admin-token-file", r.stderr)
        self.assertNotIn(TENANT.encode(), r.stderr)


if __name__ == "__main__":
    BINARY = sys.argv.pop(1)
    http_test.BINARY = BINARY
    unittest.main()
