#!/usr/bin/python3
"""The HTTP transport against the real binary: every status code it promises, session life,
SSE answers with progress, and cancellation of a running command.

usage: http_test.py BINARY [unittest args]"""

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
ACCEPT = "application/json, text/event-stream"
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "http-test", "version": "1"}}}


class Server:
    """backyard-mcp --transport http on a free loopback port."""

    def __init__(self, root, *args, env=None, log_level="warn"):
        self.proc = subprocess.Popen(
            [BINARY, "--transport", "http", "--listen", "127.0.0.1:0", "--root", root,
             "--ruleset", "permissive", "--log-level", log_level, *args],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            env=env)
        # The address is in the line that says what is served (other lines may come first
        # at a verbose log level; they are kept in `head`).
        self.head = []
        match = None
        while not match:
            line = self.proc.stderr.readline().decode()
            self.head.append(line)
            match = re.search(r"http://127\.0\.0\.1:(\d+)/mcp", line)
            if not line:
                self.proc.kill()
                raise RuntimeError("no address in: " + "".join(self.head))
        self.port = int(match.group(1))

    def request(self, method, path="/mcp", body=None, headers=None, timeout=30):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        h = {"Host": f"127.0.0.1:{self.port}"}
        if body is not None:
            h.update({"Content-Type": "application/json", "Accept": ACCEPT})
        h.update(headers or {})
        data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
        conn.request(method, path, body=data, headers=h)
        resp = conn.getresponse()
        payload = resp.read()
        conn.close()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, payload

    def initialize(self, headers=None):
        status, h, body = self.request("POST", body=INIT, headers=headers)
        assert status == 200, (status, body)
        sid = h["mcp-session-id"]
        self.request("POST", body={"jsonrpc": "2.0", "method": "notifications/initialized"},
                     headers={"Mcp-Session-Id": sid, **(headers or {})})
        return sid

    def call(self, sid, rid, name, arguments, meta=None, headers=None):
        params = {"name": name, "arguments": arguments}
        if meta:
            params["_meta"] = meta
        return self.request("POST", body={"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                                          "params": params},
                            headers={"Mcp-Session-Id": sid,
                                     "MCP-Protocol-Version": "2025-06-18", **(headers or {})})

    def stop(self):
        self.proc.terminate()
        code = self.proc.wait(30)
        self.proc.stderr.close()
        return code


def read_to_end(sock):
    """Everything `sock` receives until the server closes it; then closes it."""
    answer = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            break
        answer += chunk
    sock.close()
    return answer


def sse_messages(payload):
    return [json.loads(line[len("data: "):]) for line in payload.decode().splitlines()
            if line.startswith("data: ") and line[len("data: "):].strip()]


def body_messages(body):
    """The messages of a POST's answer: one JSON message, or an SSE stream's (an answer that
    took longer than a second comes as a stream)."""
    if body.startswith((b"id:", b"event:", b"data:")):
        return sse_messages(body)
    return [json.loads(body)]


def read_event(resp):
    """The next SSE event of a streaming response as (id, message); (None, None) at its end."""
    event_id, data = None, None
    while True:
        line = resp.readline()
        if not line:
            return None, None
        line = line.decode().rstrip("\r\n")
        if line.startswith("id: "):
            event_id = line[4:]
        elif line.startswith("data: ") and line[6:].strip():
            data = json.loads(line[6:])
        elif line == "" and data is not None:
            return event_id, data


class HttpTransport(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="byd-http-")
        with open(os.path.join(cls.tmp.name, "hello.txt"), "w") as f:
            f.write("hello over http\n")
        cls.server = Server(cls.tmp.name, "--max-message-bytes", "65536")

    @classmethod
    def tearDownClass(cls):
        code = cls.server.stop()
        cls.tmp.cleanup()
        assert code == 0, f"server exit code {code}"

    def test_health_answers_without_a_session(self):
        status, h, body = self.server.request("GET", "/healthz")
        self.assertEqual(status, 200)
        self.assertEqual(json.loads(body)["status"], "ok")

    def test_session_life(self):
        sid = self.server.initialize()
        self.assertRegex(sid, r"^[0-9a-f]{32}$")
        status, h, body = self.server.call(sid, 2, "read_file", {"path": "hello.txt"})
        self.assertEqual(status, 200)
        self.assertEqual(h["content-type"], "application/json")
        self.assertIn("hello over http", json.loads(body)["result"]["content"][0]["text"])
        status, _, _ = self.server.request("DELETE", headers={"Mcp-Session-Id": sid})
        self.assertEqual(status, 200)
        status, _, _ = self.server.call(sid, 3, "ls", {})
        self.assertEqual(status, 404)

    def test_a_name_that_is_not_utf8_is_answered_as_over_stdio(self):
        odd = os.path.join(self.tmp.name, "odd")
        os.makedirs(odd, exist_ok=True)
        with open(os.path.join(os.fsencode(odd), b"caf\xe9.txt"), "w") as f:
            f.write("x")
        sid = self.server.initialize()
        answers = {}
        for name, args in (("ls", {"path": "odd"}), ("glob", {"pattern": "odd/*"})):
            status, _, body = self.server.call(sid, 9, name, args)
            self.assertEqual(status, 200, body)
            answers[name] = json.loads(body)["result"]
            self.assertFalse(answers[name]["isError"], answers[name])
            self.assertIn("caf\ufffd.txt", answers[name]["content"][0]["text"])
        # The same calls over stdio give the same answers.
        lines = [json.dumps(INIT), json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})]
        for i, (name, args) in enumerate((("ls", {"path": "odd"}), ("glob", {"pattern": "odd/*"}))):
            lines.append(json.dumps({"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call",
                                     "params": {"name": name, "arguments": args}}))
        out = subprocess.run([BINARY, "--root", self.tmp.name, "--ruleset", "permissive"],
                             input=("\n".join(lines) + "\n").encode(), capture_output=True,
                             timeout=30).stdout
        by_id = {m.get("id"): m for m in map(json.loads, out.decode().splitlines())}
        self.assertEqual(by_id[10]["result"]["content"], answers["ls"]["content"])
        self.assertEqual(by_id[11]["result"]["content"], answers["glob"]["content"])

    def test_sessions_are_distinct(self):
        a, b = self.server.initialize(), self.server.initialize()
        self.assertNotEqual(a, b)
        for sid in (a, b):
            status, _, body = self.server.call(sid, 7, "run_python",
                                               {"code": "x = %r\nx" % sid, "session": "s"})
            self.assertEqual(json.loads(body)["result"]["structuredContent"]["result"], repr(sid))
        # Each session's kernel keeps its own globals.
        _, _, body = self.server.call(a, 8, "run_python", {"code": "x", "session": "s"})
        self.assertEqual(json.loads(body)["result"]["structuredContent"]["result"], repr(a))

    def test_batches_only_at_2025_03_26(self):
        init = json.loads(json.dumps(INIT))
        init["params"]["protocolVersion"] = "2025-03-26"
        _, h, _ = self.server.request("POST", body=init)
        old = h["mcp-session-id"]
        batch = [{"jsonrpc": "2.0", "id": 1, "method": "ping"},
                 {"jsonrpc": "2.0", "method": "notifications/initialized"},
                 {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                  "params": {"name": "read_file", "arguments": {"path": "hello.txt"}}}]
        status, h, body = self.server.request("POST", body=batch,
                                              headers={"Mcp-Session-Id": old})
        self.assertEqual(status, 200, body)
        answers = sorted(json.loads(body), key=lambda m: m["id"])
        self.assertEqual([a["id"] for a in answers], [1, 2])
        self.assertIn("hello over http", answers[1]["result"]["content"][0]["text"])
        status, _, _ = self.server.request("POST", body=batch[1:2],
                                           headers={"Mcp-Session-Id": old})
        self.assertEqual(status, 202)  # nothing in it to answer
        # A batch whose only request is cancelled ends without an answer.
        result = {}
        sleeper = [{"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                    "params": {"name": "execute", "arguments": {"command": "sleep 3232"}}}]
        t = threading.Thread(target=lambda: result.setdefault(
            "answer", self.server.request("POST", body=sleeper, headers={"Mcp-Session-Id": old})))
        t.start()
        time.sleep(0.5)
        self.server.request("POST", body={"jsonrpc": "2.0", "method": "notifications/cancelled",
                                          "params": {"requestId": 3}},
                            headers={"Mcp-Session-Id": old})
        t.join(10)
        self.assertFalse(t.is_alive(), "the cancelled batch's POST did not end")
        self.assertEqual(result["answer"][0], 204)
        status, _, _ = self.server.request("POST", body=batch,
                                           headers={"Mcp-Session-Id": self.server.initialize()})
        self.assertEqual(status, 400)  # 2025-06-18 has no batches

    def test_notifications_get_202(self):
        sid = self.server.initialize()
        status, _, body = self.server.request(
            "POST", body={"jsonrpc": "2.0", "method": "notifications/initialized"},
            headers={"Mcp-Session-Id": sid})
        self.assertEqual((status, body), (202, b""))

    def test_progress_comes_as_sse_before_the_result(self):
        sid = self.server.initialize()
        status, h, body = self.server.call(
            sid, 4, "execute", {"command": "echo one; sleep 1.3; echo two; sleep 1.3"},
            meta={"progressToken": "tok"})
        self.assertEqual(status, 200)
        self.assertTrue(h["content-type"].startswith("text/event-stream"), h)
        messages = sse_messages(body)
        self.assertGreaterEqual(len(messages), 2, messages)
        self.assertEqual(messages[-1]["id"], 4)
        self.assertEqual(messages[-1]["result"]["structuredContent"]["stdout"], "one\ntwo\n")
        progress = [m for m in messages[:-1] if m.get("method") == "notifications/progress"]
        self.assertTrue(progress, messages)
        self.assertEqual(progress[0]["params"]["progressToken"], "tok")

    def test_streams_start_with_a_priming_event_from_2025_11_25(self):
        init = json.loads(json.dumps(INIT))
        init["params"]["protocolVersion"] = "2025-11-25"
        status, h, _ = self.server.request("POST", body=init)
        sid = h["mcp-session-id"]
        status, h, body = self.server.call(sid, 4, "execute", {"command": "sleep 1.2; echo x"},
                                           meta={"progressToken": 1},
                                           headers={"MCP-Protocol-Version": "2025-11-25"})
        self.assertTrue(h["content-type"].startswith("text/event-stream"), h)
        first_event = body.decode().split("\n\n")[0].splitlines()
        self.assertEqual(first_event[0].split(":")[0], "id", first_event)
        self.assertIn("retry: 1000", first_event)
        self.assertIn("data: ", first_event)  # empty: nothing to deliver, only a place to resume

    def test_cancelling_a_running_command(self):
        sid = self.server.initialize()
        result = {}

        def run():
            result["answer"] = self.server.call(sid, 5, "execute",
                                                {"command": "sleep 3131", "timeout_s": 60})

        started = time.monotonic()
        t = threading.Thread(target=run)
        t.start()
        time.sleep(0.5)
        status, _, _ = self.server.request(
            "POST", body={"jsonrpc": "2.0", "method": "notifications/cancelled",
                          "params": {"requestId": 5, "reason": "test"}},
            headers={"Mcp-Session-Id": sid})
        self.assertEqual(status, 202)
        t.join(10)
        self.assertFalse(t.is_alive(), "the cancelled call's POST did not end")
        self.assertLess(time.monotonic() - started, 5)
        self.assertEqual(result["answer"][0], 204)
        # The POST ends once the work has stopped, so its end is the client's sign of that.
        left = subprocess.run(["pgrep", "-f", "slee[p] 3131"], capture_output=True, text=True)
        self.assertEqual(left.stdout, "")

    def test_a_dropped_stream_resumes_without_loss_or_repeats(self):
        sid = self.server.initialize()
        port = self.server.port
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        body = {"jsonrpc": "2.0", "id": 11, "method": "tools/call",
                "params": {"name": "execute", "_meta": {"progressToken": 7},
                           "arguments": {"command": "echo 1; sleep 1; echo 2; sleep 1; echo 3; "
                                                      "sleep 1; echo 4; sleep 1"}}}
        conn.request("POST", "/mcp", body=json.dumps(body).encode(),
                     headers={"Host": f"127.0.0.1:{port}", "Content-Type": "application/json",
                              "Accept": ACCEPT, "Mcp-Session-Id": sid})
        resp = conn.getresponse()
        self.assertEqual(resp.status, 200)
        first_id, first = read_event(resp)
        self.assertEqual(first["method"], "notifications/progress")
        conn.close()  # the connection drops; the command runs on
        time.sleep(4.5)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("GET", "/mcp", headers={"Host": f"127.0.0.1:{port}",
                                             "Accept": "text/event-stream",
                                             "Mcp-Session-Id": sid, "Last-Event-ID": first_id})
        resp = conn.getresponse()
        self.assertEqual(resp.status, 200)
        events = []
        while True:
            event_id, message = read_event(resp)
            if event_id is None:
                break
            events.append((event_id, message))
        conn.close()
        stream, number = first_id.split(":")
        ids = [e[0] for e in events]
        # Every later event once, in order, and nothing before the one the client had.
        self.assertEqual(ids, [f"{stream}:{int(number) + 1 + i}" for i in range(len(events))])
        self.assertGreaterEqual(len(events), 2, events)
        self.assertTrue(all(m.get("method") == "notifications/progress" for _, m in events[:-1]))
        self.assertEqual(events[-1][1]["id"], 11)
        self.assertEqual(events[-1][1]["result"]["structuredContent"]["stdout"], "1\n2\n3\n4\n")
        status, _, _ = self.server.request("GET", headers={"Accept": "text/event-stream",
                                                           "Mcp-Session-Id": sid,
                                                           "Last-Event-ID": "nope:3"})
        self.assertEqual(status, 404)

    def test_get_stream_opens_once(self):
        sid = self.server.initialize()
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=10)
        conn.request("GET", "/mcp", headers={"Host": f"127.0.0.1:{self.server.port}",
                                             "Accept": "text/event-stream",
                                             "Mcp-Session-Id": sid})
        resp = conn.getresponse()
        self.assertEqual(resp.status, 200)
        self.assertTrue(resp.getheader("Content-Type").startswith("text/event-stream"))
        status, _, _ = self.server.request("GET", headers={"Accept": "text/event-stream",
                                                           "Mcp-Session-Id": sid})
        self.assertEqual(status, 409)
        # Ending the session ends its stream.
        self.server.request("DELETE", headers={"Mcp-Session-Id": sid})
        self.assertEqual(resp.read(), b"")
        conn.close()

    def test_bad_requests(self):
        sid = self.server.initialize()
        s = self.server
        cases = [
            ("missing session", s.request("POST", body={"jsonrpc": "2.0", "id": 9,
                                                        "method": "ping"}), 400),
            ("unknown session", s.request("POST", body={"jsonrpc": "2.0", "id": 9,
                                                        "method": "ping"},
                                          headers={"Mcp-Session-Id": "0" * 32}), 404),
            ("unsupported version", s.request("POST", body={"jsonrpc": "2.0", "id": 9,
                                                            "method": "ping"},
                                              headers={"Mcp-Session-Id": sid,
                                                       "MCP-Protocol-Version": "1999-01-01"}),
             400),
            ("not JSON", s.request("POST", body=b"{nope", headers={"Mcp-Session-Id": sid}), 400),
            ("not JSON-RPC", s.request("POST", body={"hello": 1},
                                       headers={"Mcp-Session-Id": sid}), 400),
            ("wrong content type", s.request("POST", body=b"{}",
                                             headers={"Content-Type": "text/plain"}), 415),
            ("wrong Accept", s.request("POST", body=INIT, headers={"Accept": "application/json"}),
             406),
            ("PUT", s.request("PUT", body=b"{}"), 405),
            ("too large", s.request("POST", body=b"[" + b" " * 70000 + b"]",
                                    headers={"Mcp-Session-Id": sid}), 413),
            ("foreign Host", s.request("POST", body=INIT, headers={"Host": "evil.example"}), 403),
            ("Host with another port", s.request("POST", body=INIT,
                                                 headers={"Host": "127.0.0.1:1"}), 403),
            ("foreign Origin", s.request("POST", body=INIT,
                                         headers={"Origin": "http://evil.example"}), 403),
            # Without a port, a name means its scheme's default: not the port listened on.
            ("Host without a port", s.request("POST", body=INIT,
                                              headers={"Host": "127.0.0.1"}), 403),
            ("Origin without a port", s.request("POST", body=INIT,
                                                headers={"Origin": "http://localhost"}), 403),
            ("https Origin without a port",
             s.request("POST", body=INIT, headers={"Origin": "https://localhost"}), 403),
        ]
        for name, (status, _, body), want in cases:
            self.assertEqual(status, want, f"{name}: {body[:200]!r}")
        status, _, body = s.request("POST", body=INIT,
                                    headers={"Origin": f"http://localhost:{s.port}"})
        self.assertEqual(status, 200, body)
        self.assertEqual(s.request("GET", "/healthz")[0], 200)  # still serving

    def test_allowed_host_names_and_the_names_beneath_a_dotted_one(self):
        s = Server(self.tmp.name, "--allow-host", ".svc.cluster.local",
                   "--allow-host", "Front.Example")
        try:
            p = s.port
            cases = [
                (f"byd-x7k2q.agents.svc.cluster.local:{p}", 200),
                (f"BYD-X7K2Q.Agents.SVC.cluster.local:{p}", 200),
                (f"front.example:{p}", 200),
                (f"svc.cluster.local:{p}", 403),  # the dotted name stands for what is beneath
                (f".svc.cluster.local:{p}", 403),
                (f"evilsvc.cluster.local:{p}", 403),  # no dot before the suffix
                (f"a.svc.cluster.local.evil.example:{p}", 403),
                (f"a.front.example:{p}", 403),  # an exact name has nothing beneath it
                ("byd-x7k2q.agents.svc.cluster.local:1", 403),  # the port is still checked
                (f"byd-x7k2q.agents.svc.cluster.local.:{p}", 200),  # the root's dot
                (f"front.example.:{p}", 200),
                (f"localhost.:{p}", 200),
                (f"front.example..:{p}", 403),  # one dot only
                (f"svc.cluster.local.:{p}", 403),  # still not beneath
                (f"evil.example.:{p}", 403),
            ]
            for host, want in cases:
                status, _, body = s.request("POST", body=INIT, headers={"Host": host})
                self.assertEqual(status, want, f"{host}: {body[:200]!r}")
            status, _, _ = s.request("POST", body=INIT,
                                     headers={"Origin": f"http://a.b.svc.cluster.local:{p}"})
            self.assertEqual(status, 200)
            status, _, _ = s.request("POST", body=INIT,
                                     headers={"Origin": f"http://a.b.svc.cluster.locall:{p}"})
            self.assertEqual(status, 403)
        finally:
            self.assertEqual(s.stop(), 0)


def python_kernels(pid):
    """The Python processes that descend from `pid` (its sessions' kernels and spares)."""
    parent, comm = {}, {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    head, tail = f.read().rsplit(")", 1)
                parent[int(name)] = int(tail.split()[1])
                comm[int(name)] = head.split("(", 1)[1]
            except (FileNotFoundError, ProcessLookupError, IndexError):
                pass

    def under(p):
        while p and p != pid:
            p = parent.get(p)
        return p == pid
    return sum(1 for p in parent if comm[p].startswith("python") and under(parent[p]))


class HttpKernels(unittest.TestCase):
    """Each HTTP session pays for the kernels it uses: one for a session that runs one, and a
    spare kept ahead only once it has needed a second."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="byd-kernels-")
        os.mkdir(os.path.join(self.tmp.name, "spaces"))
        self.server = Server(self.tmp.name, "--workspace-root",
                             os.path.join(self.tmp.name, "spaces"))
        self.addCleanup(self.tmp.cleanup)
        self.addCleanup(self.server.stop)

    def settle(self, expected, within=20.0):
        """The server's kernel count once it stops changing (at `expected`, or after `within`)."""
        deadline = time.monotonic() + within
        count = python_kernels(self.server.proc.pid)
        while count != expected and time.monotonic() < deadline:
            time.sleep(0.1)
            count = python_kernels(self.server.proc.pid)
        time.sleep(1.0)  # nothing more starts after it (a spare would, within this)
        return python_kernels(self.server.proc.pid)

    def run_python(self, sid, rid, code, session="default"):
        status, _, body = self.server.call(sid, rid, "run_python",
                                           {"code": code, "session": session})
        self.assertEqual(status, 200, body)
        result = body_messages(body)[-1]["result"]
        self.assertFalse(result.get("isError"), result)
        return result["structuredContent"]["result"]

    def test_a_session_starts_one_kernel_until_it_needs_a_second(self):
        rest = self.settle(-1, within=1.0)  # the first stack's check, and its spare, if any
        sid = self.server.initialize()
        self.assertEqual(self.run_python(sid, 2, "6 * 7"), "42")
        self.assertEqual(self.settle(rest + 1), rest + 1)
        # A second Python session: its kernel, and from then on a spare ahead of the next.
        self.assertEqual(self.run_python(sid, 3, "1 + 1", session="b"), "2")
        self.assertEqual(self.settle(rest + 3), rest + 3)
        # The spare serves the third session at once, and the next one is started.
        self.assertEqual(self.run_python(sid, 4, "2 + 2", session="c"), "4")
        self.assertEqual(self.settle(rest + 4), rest + 4)
        # Ending the session ends its kernels and its spare.
        self.server.request("DELETE", headers={"Mcp-Session-Id": sid})
        self.assertEqual(self.settle(rest), rest)


STATELESS_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}


def stateless_headers(method, name=None, version="2026-07-28"):
    h = {"MCP-Protocol-Version": version, "Mcp-Method": method}
    if name is not None:
        h["Mcp-Name"] = name
    return h


def start_class_server(cls, prefix, files=None):
    """A server for a test class, in a temporary directory holding `files` ({name: text})."""
    cls.tmp = tempfile.TemporaryDirectory(prefix=prefix)
    for name, text in (files or {}).items():
        with open(os.path.join(cls.tmp.name, name), "w") as f:
            f.write(text)
    cls.server = Server(cls.tmp.name)


def stop_class_server(cls):
    code = cls.server.stop()
    cls.tmp.cleanup()
    assert code == 0, f"server exit code {code}"


TASKS = {"io.modelcontextprotocol/clientCapabilities":
         {"extensions": {"io.modelcontextprotocol/tasks": {}}}}


class HttpTasks(unittest.TestCase):
    """The tasks extension on the real server: execute and run_python run as tasks for a client
    that declares it (stateless, or a session that declared it at initialize), are polled,
    cancelled (the command's processes end) and collected from another connection."""

    @classmethod
    def setUpClass(cls):
        start_class_server(cls, "byd-http-tasks-")

    @classmethod
    def tearDownClass(cls):
        stop_class_server(cls)

    def rpc(self, method, params, name=None, sid=None, meta=TASKS):
        body = {"jsonrpc": "2.0", "id": 9, "method": method, "params": dict(params)}
        if sid is None:
            body["params"]["_meta"] = {**STATELESS_META, **meta}
            headers = stateless_headers(method, name)
        else:
            headers = {"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
        status, _, payload = self.server.request("POST", body=body, headers=headers)
        messages = body_messages(payload)
        answer = [m for m in messages if m.get("id") == 9][0]
        return status, answer

    def poll(self, task, sid=None, until=("completed", "failed", "cancelled"), timeout=30):
        deadline = time.time() + timeout
        while True:
            status, answer = self.rpc("tasks/get", {"taskId": task}, task, sid)
            self.assertEqual(status, 200, answer)
            if answer["result"]["status"] in until or time.time() > deadline:
                return answer["result"]
            time.sleep(0.1)

    def test_a_command_runs_as_a_task_and_is_collected(self):
        status, answer = self.rpc("tools/call", {"name": "execute", "arguments": {
            "command": "sleep 1; echo done > out.txt; echo finished"}}, "execute")
        self.assertEqual(status, 200, answer)
        created = answer["result"]
        self.assertEqual(created["resultType"], "task", created)
        self.assertEqual(created["status"], "working")
        self.assertFalse(os.path.exists(os.path.join(self.tmp.name, "out.txt")))
        done = self.poll(created["taskId"])
        self.assertEqual(done["status"], "completed", done)
        self.assertEqual(done["result"]["structuredContent"]["stdout"], "finished\n")
        with open(os.path.join(self.tmp.name, "out.txt")) as f:
            self.assertEqual(f.read(), "done\n")
        # Python too; and without the extension, the same call answers at once.
        status, answer = self.rpc("tools/call", {"name": "run_python",
                                                 "arguments": {"code": "6 * 7"}}, "run_python")
        done = self.poll(answer["result"]["taskId"])
        self.assertEqual(done["result"]["structuredContent"]["result"], "42", done)
        status, answer = self.rpc("tools/call", {"name": "execute", "arguments": {
            "command": "echo now"}}, "execute", meta={})
        self.assertEqual(answer["result"]["resultType"], "complete", answer)
        self.assertEqual(answer["result"]["structuredContent"]["stdout"], "now\n")
        # A tool that is quick is never a task.
        status, answer = self.rpc("tools/call", {"name": "ls", "arguments": {}}, "ls")
        self.assertEqual(answer["result"]["resultType"], "complete", answer)

    def test_a_cancelled_task_ends_its_command(self):
        marker = f"sleep 60.{time.time_ns() % 1000000:06d}"  # the process the shell execs
        status, answer = self.rpc("tools/call", {"name": "execute", "arguments": {
            "command": marker, "timeout_s": 120}}, "execute")
        task = answer["result"]["taskId"]
        deadline = time.time() + 15  # its sandbox starts first, slowly on a loaded machine
        while marker not in subprocess.run(["ps", "-eo", "args"], capture_output=True,
                                           text=True).stdout:
            self.assertLess(time.time(), deadline, "the task's command never ran")
            time.sleep(0.1)
        status, answer = self.rpc("tasks/cancel", {"taskId": task}, task)
        ack = {k: v for k, v in answer["result"].items() if k != "_meta"}
        self.assertEqual(ack, {"resultType": "complete"}, answer)
        self.assertEqual(self.poll(task)["status"], "cancelled")
        deadline = time.time() + 10
        while marker in subprocess.run(["ps", "-eo", "args"], capture_output=True,
                                       text=True).stdout:
            self.assertLess(time.time(), deadline, "the cancelled command still runs")
            time.sleep(0.1)
        # Cancelling it again, or asking for an unknown task.
        status, answer = self.rpc("tasks/cancel", {"taskId": task}, task)
        self.assertEqual(answer["result"]["resultType"], "complete")
        status, answer = self.rpc("tasks/get", {"taskId": "nosuch"}, "nosuch")
        self.assertEqual(answer["error"]["code"], -32602, answer)
        # Without the extension, tasks/get is refused naming it.
        status, answer = self.rpc("tasks/get", {"taskId": task}, task, meta={})
        self.assertEqual(answer["error"]["code"], -32021, answer)
        self.assertEqual(answer["error"]["data"]["requiredCapabilities"],
                         {"extensions": {"io.modelcontextprotocol/tasks": {}}})

    def test_a_session_that_declared_the_extension_collects_after_reconnecting(self):
        init = json.loads(json.dumps(INIT))
        init["params"]["protocolVersion"] = "2025-11-25"
        init["params"]["capabilities"] = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
        status, h, body = self.server.request("POST", body=init)
        self.assertEqual(status, 200, body)
        sid = h["mcp-session-id"]
        status, answer = self.rpc("tools/call", {"name": "execute", "arguments": {
            "command": "sleep 1; echo later"}}, sid=sid)
        task = answer["result"]["taskId"]
        # Each request is a connection of its own: this one comes later, on another.
        done = self.poll(task, sid=sid)
        self.assertEqual(done["result"]["structuredContent"]["stdout"], "later\n", done)


class HttpStateless(unittest.TestCase):
    """The stateless revision (2026-07-28) on the same endpoint as the sessions."""

    @classmethod
    def setUpClass(cls):
        start_class_server(cls, "byd-http-stateless-",
                           {"hello.txt": "hello without a session\n"})

    @classmethod
    def tearDownClass(cls):
        stop_class_server(cls)

    def call(self, rid, name, arguments, meta=None, headers=None):
        body = {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                "params": {"name": name, "arguments": arguments,
                           "_meta": {**STATELESS_META, **(meta or {})}}}
        h = stateless_headers("tools/call", name)
        h.update(headers or {})
        return self.server.request("POST", body=body, headers=h)

    def test_a_call_without_a_session(self):
        status, h, body = self.call(3, "read_file", {"path": "hello.txt"})
        self.assertEqual(status, 200, body)
        self.assertNotIn("mcp-session-id", h)
        answer = json.loads(body)
        self.assertEqual(answer["id"], 3)
        self.assertEqual(answer["result"]["resultType"], "complete")
        self.assertIn("hello without a session", answer["result"]["content"][0]["text"])

    def test_clients_using_the_same_id_get_their_own_answers(self):
        results = {}

        def run(word):
            results[word] = self.call(1, "execute", {"command": f"sleep 0.5; echo {word}"})

        threads = [threading.Thread(target=run, args=(w,)) for w in ("alpha", "beta", "gamma")]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        for word, (status, _, body) in results.items():
            self.assertEqual(status, 200, body)
            answer = body_messages(body)[-1]
            self.assertEqual(answer["id"], 1)
            self.assertEqual(answer["result"]["structuredContent"]["stdout"], word + "\n")
        self.assertEqual(len(results), 3)

    def test_headers_must_match_the_body(self):
        status, _, body = self.call(4, "read_file", {"path": "hello.txt"},
                                    headers={"Mcp-Name": "write_file"})
        self.assertEqual(status, 400)
        self.assertEqual(json.loads(body)["error"]["code"], -32020)
        self.assertEqual(json.loads(body)["id"], 4)
        status, _, body = self.call(5, "read_file", {"path": "hello.txt"},
                                    headers={"Mcp-Method": "tools/list"})
        self.assertEqual((status, json.loads(body)["error"]["code"]), (400, -32020))
        # The header's version and the body's must agree; an unknown one is named back.
        status, _, body = self.call(6, "read_file", {"path": "hello.txt"},
                                    meta={"io.modelcontextprotocol/protocolVersion": "2099-01-01"})
        self.assertEqual((status, json.loads(body)["error"]["code"]), (400, -32020))
        status, _, body = self.call(7, "read_file", {"path": "hello.txt"},
                                    meta={"io.modelcontextprotocol/protocolVersion": "2099-01-01"},
                                    headers={"MCP-Protocol-Version": "2099-01-01"})
        error = json.loads(body)["error"]
        self.assertEqual((status, error["code"]), (400, -32022))
        self.assertEqual(error["data"]["requested"], "2099-01-01")

    def test_methods_of_the_session_era_are_not_found(self):
        for method in ("ping", "initialize", "logging/setLevel"):
            body = {"jsonrpc": "2.0", "id": 9, "method": method, "params": {"_meta": STATELESS_META}}
            status, _, payload = self.server.request("POST", body=body,
                                                     headers=stateless_headers(method))
            self.assertEqual(status, 404, method)
            self.assertEqual(json.loads(payload)["error"]["code"], -32601)

    def test_discover_lists_both_eras(self):
        body = {"jsonrpc": "2.0", "id": 1, "method": "server/discover",
                "params": {"_meta": STATELESS_META}}
        status, _, payload = self.server.request("POST", body=body,
                                                 headers=stateless_headers("server/discover"))
        self.assertEqual(status, 200, payload)
        result = json.loads(payload)["result"]
        self.assertIn("2025-11-25", result["supportedVersions"])
        self.assertIn("2026-07-28", result["supportedVersions"])
        self.assertIn("tools", result["capabilities"])
        # Sessions keep working beside it.
        sid = self.server.initialize()
        status, _, _ = self.server.call(sid, 2, "ls", {})
        self.assertEqual(status, 200)

    def test_closing_the_stream_cancels_the_call(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=30)
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "execute",
                           "arguments": {"command": "echo started; sleep 3232", "timeout_s": 60},
                           "_meta": {**STATELESS_META, "progressToken": "p"}}}
        conn.request("POST", "/mcp", body=json.dumps(body).encode(),
                     headers={"Host": f"127.0.0.1:{self.server.port}",
                              "Content-Type": "application/json", "Accept": ACCEPT,
                              **stateless_headers("tools/call", "execute")})
        resp = conn.getresponse()
        self.assertTrue(resp.getheader("Content-Type").startswith("text/event-stream"))
        event_id, message = read_event(resp)
        self.assertEqual(message["method"], "notifications/progress")
        self.assertIsNone(event_id)  # stateless streams cannot be resumed: no event ids

        def running():
            return subprocess.run(["pgrep", "-f", "slee[p] 3232"],
                                  capture_output=True).returncode == 0

        self.assertTrue(running())
        conn.close()
        deadline = time.monotonic() + 30  # at the latest, the next keep-alive write notices
        while time.monotonic() < deadline and running():
            time.sleep(0.2)
        self.assertFalse(running(), "the command of a closed stateless stream still runs")

    def test_a_silent_call_turns_into_a_stream_that_can_be_cancelled(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=30)
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "execute",
                           "arguments": {"command": "sleep 3333", "timeout_s": 60},
                           "_meta": STATELESS_META}}
        conn.request("POST", "/mcp", body=json.dumps(body).encode(),
                     headers={"Host": f"127.0.0.1:{self.server.port}",
                              "Content-Type": "application/json", "Accept": ACCEPT,
                              **stateless_headers("tools/call", "execute")})
        resp = conn.getresponse()  # headers come after a second without an answer
        self.assertTrue(resp.getheader("Content-Type").startswith("text/event-stream"))

        def running():
            return subprocess.run(["pgrep", "-f", "slee[p] 3333"],
                                  capture_output=True).returncode == 0

        deadline = time.monotonic() + 15  # its sandbox starts first, slowly under load
        while not running():
            self.assertLess(time.monotonic(), deadline, "the command never ran")
            time.sleep(0.1)
        conn.close()
        deadline = time.monotonic() + 40  # the next keep-alive (15 s) notices the close
        while time.monotonic() < deadline and running():
            time.sleep(0.2)
        self.assertFalse(running(), "the command of a closed stateless stream still runs")

    def test_a_burst_of_connections_waits_in_a_deep_queue(self):
        # The listening socket's backlog (ss: Send-Q of a listener): a burst of clients waits
        # for the accept loop instead of being reset by the kernel.
        out = subprocess.run(["ss", "-Hltn", f"sport = :{self.server.port}"],
                             capture_output=True, text=True).stdout.split()
        with open("/proc/sys/net/core/somaxconn") as f:
            ceiling = int(f.read())
        self.assertEqual(int(out[2]), min(1024, ceiling), out)
        # And a burst is served whole.
        results = []

        def one():
            status, _, body = self.call(1, "read_file", {"path": "hello.txt"})
            results.append(status)

        threads = [threading.Thread(target=one) for _ in range(100)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.assertEqual(results, [200] * 100)

    def test_session_clients_are_not_taken_for_stateless_ones(self):
        # An initialize is a session's start, whatever version its header names.
        status, h, body = self.server.request("POST", body=INIT,
                                              headers={"MCP-Protocol-Version": "2099-01-01"})
        self.assertEqual(status, 200, body)
        self.assertIn("mcp-session-id", h)
        # Ids must be strings or integers, on either path.
        for rid in (1.5, None, {"a": 1}):
            body = {"jsonrpc": "2.0", "id": rid, "method": "tools/list",
                    "params": {"_meta": STATELESS_META}}
            status, _, payload = self.server.request("POST", body=body,
                                                     headers=stateless_headers("tools/list"))
            self.assertEqual(status, 400, (rid, payload))

    def test_refused_when_sessions_have_workspaces_of_their_own(self):
        with tempfile.TemporaryDirectory(prefix="byd-http-ws-") as root:
            server = Server(root, "--workspace-root", root)
            try:
                body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                        "params": {"_meta": STATELESS_META}}
                status, _, payload = server.request("POST", body=body,
                                                    headers=stateless_headers("tools/list"))
                self.assertEqual(status, 400)
                # Not an error of the stateless revision: the client falls back to initialize.
                self.assertEqual(json.loads(payload)["error"]["code"], -32600)
                self.assertTrue(server.initialize())
            finally:
                self.assertEqual(server.stop(), 0)


class HttpLimits(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="byd-http-")

    def tearDown(self):
        self.tmp.cleanup()

    def test_token_is_required(self):
        token_file = os.path.join(self.tmp.name, "token")
        with open(token_file, "w") as f:
            f.write("s3cret-token\n")
        server = Server(self.tmp.name, "--token-file", token_file)
        try:
            status, h, _ = server.request("POST", body=INIT)
            self.assertEqual(status, 401)
            self.assertIn("Bearer", h["www-authenticate"])
            status, _, _ = server.request("POST", body=INIT,
                                          headers={"Authorization": "Bearer wrong-token!"})
            self.assertEqual(status, 401)
            status, _, _ = server.request("POST", body=INIT,
                                          headers={"Authorization": "Bearer s3cret-token"})
            self.assertEqual(status, 200)
            self.assertEqual(server.request("GET", "/healthz")[0], 200)
        finally:
            self.assertEqual(server.stop(), 0)

    def test_session_cap_and_idle_reaping(self):
        server = Server(self.tmp.name, "--max-sessions", "2", "--session-idle", "1")
        try:
            a = server.initialize()
            server.initialize()
            status, h, _ = server.request("POST", body=INIT)
            self.assertEqual(status, 429)
            self.assertIn("retry-after", h)
            # A call longer than the idle time keeps its session.
            status, _, body = server.call(a, 9, "execute", {"command": "sleep 2.5; echo kept"})
            self.assertEqual(status, 200, body)
            self.assertEqual(json.loads(body)["result"]["structuredContent"]["stdout"], "kept\n")
            time.sleep(2.5)  # both sessions go idle and are reaped
            status, _, _ = server.call(a, 2, "ls", {})
            self.assertEqual(status, 404)
            self.assertEqual(server.request("POST", body=INIT)[0], 200)
        finally:
            self.assertEqual(server.stop(), 0)

    def test_sigterm_lets_calls_in_flight_finish(self):
        server = Server(self.tmp.name)
        sid = server.initialize()
        result = {}

        def run():
            result["answer"] = server.call(sid, 2, "execute", {"command": "sleep 1; echo drained"})

        t = threading.Thread(target=run)
        t.start()
        time.sleep(0.4)
        server.proc.terminate()
        t.join(15)
        self.assertEqual(server.proc.wait(15), 0)
        server.proc.stderr.close()
        status, _, body = result["answer"]
        self.assertEqual(status, 200, body)
        self.assertEqual(json.loads(body)["result"]["structuredContent"]["stdout"], "drained\n")

    def test_sigterm_at_once_after_the_address_stops_the_server(self):
        # A signal that comes before the listening loop has begun still ends it: one in six
        # such starts hung in accept() when only a server already listening could be stopped.
        for _ in range(12):
            server = Server(self.tmp.name)
            server.proc.terminate()
            try:
                self.assertEqual(server.proc.wait(15), 0)
            finally:
                server.proc.kill()
                server.proc.stderr.close()

    def test_a_stalled_client_is_cut_off(self):
        import socket
        server = Server(self.tmp.name, "--read-timeout", "1")
        try:
            stalled = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(4)]
            for s in stalled:  # headers promising a body that never comes
                s.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
                          "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{".encode())
            self.assertEqual(server.request("GET", "/healthz")[0], 200)  # others are served
            started = time.monotonic()
            for s in stalled:  # each request fails (an error answer, or the socket closes)
                s.settimeout(10)
                try:
                    s.recv(4096)
                except ConnectionResetError:
                    pass
                s.close()
            self.assertLess(time.monotonic() - started, 3)  # after about a second
        finally:
            self.assertEqual(server.stop(), 0)

    def trickle(self, port, source="127.0.0.1"):
        """A connection that starts a request and then sends one header line at a time."""
        import socket
        s = socket.create_connection(("127.0.0.1", port), source_address=(source, 0))
        s.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode())
        return s

    def test_a_request_sent_slowly_is_cut_off_at_its_deadline(self):
        # One header line a second keeps every read short; the request as a whole has three
        # seconds. Before, such a client held its thread for as long as it kept sending.
        server = Server(self.tmp.name, "--read-timeout", "3")
        try:
            s = self.trickle(server.port)
            started, cut = time.monotonic(), None
            for i in range(16):
                time.sleep(1)
                try:
                    s.sendall(f"X-Slow-{i}: 1\r\n".encode())
                except (BrokenPipeError, ConnectionResetError):
                    cut = time.monotonic() - started
                    break
            s.close()
            self.assertIsNotNone(cut, "the slow request was never cut off")
            self.assertLess(cut, 10)
        finally:
            self.assertEqual(server.stop(), 0)

    @staticmethod
    def refused(sockets, timeout=10):
        """The sockets among `sockets` that get a 503 within `timeout` seconds (the server
        refuses at once; the wait is for a loaded machine to run it)."""
        import select
        got, deadline = [], time.monotonic() + timeout
        while time.monotonic() < deadline and not got:
            ready, _, _ = select.select(sockets, [], [], 0.2)
            got = [s for s in ready if b"503" in s.recv(4096)]
        return got

    def test_connections_are_capped_per_address_and_in_total(self):
        server = Server(self.tmp.name, "--max-connections", "8",
                        "--max-connections-per-address", "3")
        self.addCleanup(server.proc.kill)  # should an assertion stop the test before stop()
        held = []
        try:
            # Four from one address: one of them is refused; another address is served.
            held += [self.trickle(server.port, "127.0.0.3") for _ in range(4)]
            self.assertEqual(len(self.refused(held)), 1)
            self.assertEqual(server.request("GET", "/healthz")[0], 200)
            # Up to the total (8), from other addresses; past it, refused (one or two, as the
            # health check's connection may not have ended yet).
            more = [self.trickle(server.port, f"127.0.0.{4 + i}") for i in range(6)]
            held += more
            self.assertGreaterEqual(len(self.refused(more)), 1)
        finally:
            for s in held:
                s.close()
        # Once they have gone, the server serves again.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                if server.request("GET", "/healthz", timeout=2)[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.2)
        self.assertEqual(server.request("GET", "/healthz")[0], 200)
        self.assertEqual(server.stop(), 0)

    def test_health_is_answered_while_many_slow_clients_are_held(self):
        server = Server(self.tmp.name)
        held = []
        try:
            held = [self.trickle(server.port, f"127.0.{1 + i // 200}.{2 + i % 200}")
                    for i in range(300)]
            time.sleep(0.5)
            for _ in range(5):
                self.assertEqual(server.request("GET", "/healthz", timeout=10)[0], 200)
            status, _, _ = server.request("POST", body=INIT)
            self.assertEqual(status, 200)
        finally:
            for s in held:
                s.close()
            self.assertEqual(server.stop(), 0)

    def test_a_refused_request_does_not_leave_its_body_for_the_next(self):
        # A request refused before its body is read (a foreign Host) ends its connection:
        # before, the unread body was parsed as the next request, answered 400 line by line.
        import socket
        server = Server(self.tmp.name)
        try:
            body = json.dumps(INIT).encode()
            bad = (f"POST /mcp HTTP/1.1\r\nHost: evil.example\r\nContent-Type: application/json"
                   f"\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body
            good = (f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n\r\n").encode()
            s = socket.create_connection(("127.0.0.1", server.port))
            s.sendall(bad + good)
            s.settimeout(10)
            answer = read_to_end(s)
            self.assertTrue(answer.startswith(b"HTTP/1.1 403"), answer[:200])
            self.assertNotIn(b"400", answer)
            self.assertEqual(server.request("GET", "/healthz")[0], 200)
        finally:
            self.assertEqual(server.stop(), 0)

    def test_an_answer_before_the_connection_ends_says_so(self):
        # An error answer ends its connection, and says so: a client that took it for kept
        # alive would send its next request into a closing socket and see it dropped.
        import socket
        server = Server(self.tmp.name)
        try:
            host = f"Host: 127.0.0.1:{server.port}\r\n"
            body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
            s = socket.create_connection(("127.0.0.1", server.port))
            s.settimeout(10)
            # A kept-alive success first: it says nothing of closing, and the connection stays.
            s.sendall(f"GET /healthz HTTP/1.1\r\n{host}\r\n".encode())
            ok = b""
            while b"\r\n\r\n" not in ok or not ok.endswith(b"}"):  # the whole JSON answer
                chunk = s.recv(65536)
                self.assertTrue(chunk, ok)
                ok += chunk
            head = ok.split(b"\r\n\r\n")[0].lower()
            self.assertTrue(ok.startswith(b"HTTP/1.1 200"), ok[:200])
            self.assertIn(b"keep-alive: timeout=", head)
            self.assertNotIn(b"connection: close", head)
            # Then an error (no session): Connection: close, no Keep-Alive, and the end.
            s.sendall((f"POST /mcp HTTP/1.1\r\n{host}Content-Type: application/json\r\n"
                       f"Accept: application/json, text/event-stream\r\n"
                       f"Content-Length: {len(body)}\r\n\r\n").encode() + body)
            answer = read_to_end(s)
            head, _, rest = answer.partition(b"\r\n\r\n")
            self.assertTrue(head.startswith(b"HTTP/1.1 4"), answer[:300])
            lines = head.lower().split(b"\r\n")
            self.assertIn(b"connection: close", lines)
            self.assertFalse([line for line in lines if line.startswith(b"keep-alive")], head)
            length = [int(line.split(b":")[1]) for line in lines
                      if line.startswith(b"content-length")]
            self.assertEqual(length, [len(rest)])
            self.assertIn(b"jsonrpc", rest)
            self.assertEqual(server.request("GET", "/healthz")[0], 200)
        finally:
            self.assertEqual(server.stop(), 0)

    def test_beyond_loopback_needs_a_token(self):
        proc = subprocess.run([BINARY, "--transport", "http", "--listen", "0.0.0.0:0", "--root",
                               self.tmp.name], capture_output=True, text=True, timeout=30,
                              env={k: v for k, v in os.environ.items() if k != "BACKYARD_TOKEN"})
        self.assertEqual(proc.returncode, 2)
        self.assertIn("needs a token", proc.stderr)


if __name__ == "__main__":
    BINARY = sys.argv.pop(1)
    unittest.main()
