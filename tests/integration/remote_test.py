"""--backend remote against a real backyard-mcp HTTP service: a front over stdio (as a desktop
client launches it) whose tools run on the service. The service's rules judge the calls and
its questions reach the front's client; progress comes back, cancellation goes there; its
errors pass through as they are; a service that goes away is reported and used again once it
is back. (The contract suites of the file tools, execute and run_python run through the same
client in the unit tests: the Remote cases of tests/tools/.)

usage: remote_test.py BINARY [unittest args]"""

import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mcp_client import Client, ElicitingClient, text  # noqa: E402

BINARY = None
TOKEN = "remote-test-token-0123456789"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def leftover(pattern):
    return subprocess.run(["pgrep", "-f", pattern], capture_output=True).returncode == 0


class Service:
    """backyard-mcp over HTTP on a fixed loopback port, so that it can come back on it."""

    def __init__(self, root, token_file, *args, port=None):
        self.root, self.token_file, self.args = root, token_file, args
        self.port = port or free_port()
        self.proc = None
        self.start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self):
        self.proc = subprocess.Popen(
            [BINARY, "--transport", "http", "--listen", f"127.0.0.1:{self.port}", "--root",
             self.root, "--token-file", self.token_file, "--log-level", "warn", *self.args],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        while True:
            line = self.proc.stderr.readline()
            if not line:
                raise AssertionError("the service ended before it listened")
            if f"127.0.0.1:{self.port}/mcp".encode() in line:
                break
        # The rest of its stderr is not read: it goes nowhere.
        self.proc.stderr.close()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(30)

    def post(self, body, session=None):
        """A request straight to the service: (its session id, the JSON-RPC answer)."""
        headers = {"Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream",
                   "Authorization": "Bearer " + TOKEN}
        if session:
            headers["Mcp-Session-Id"] = session
        req = urllib.request.Request(self.url, json.dumps(body).encode(), headers)
        with urllib.request.urlopen(req, timeout=30) as resp:
            payload = resp.read().decode()
            sid = resp.headers.get("Mcp-Session-Id", session)
        if not payload:
            return sid, None
        if payload.startswith("{"):
            return sid, json.loads(payload)
        messages = [json.loads(line[5:]) for line in payload.splitlines()
                    if line.startswith("data:")]
        return sid, next(m for m in messages if m.get("id") == body.get("id"))


class RemoteCase(unittest.TestCase):
    SERVICE_ARGS = ("--ruleset", "permissive")

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="byd-remote-")
        self.addCleanup(self.tmp.cleanup)
        self.ws = os.path.join(self.tmp.name, "ws")
        os.mkdir(self.ws)
        with open(os.path.join(self.ws, "notes.txt"), "w") as f:
            f.write("remote notes\n")
        with open(os.path.join(self.ws, ".env"), "w") as f:
            f.write("SECRET=do-not-read\n")
        self.token_file = os.path.join(self.tmp.name, "token")
        with open(self.token_file, "w") as f:
            f.write(TOKEN + "\n")
        self.service = Service(self.ws, self.token_file, *self.SERVICE_ARGS)
        self.addCleanup(self.service.stop)

    def front(self, cls=Client, token_file=None):
        client = cls(BINARY, "--backend", "remote", "--remote-url", self.service.url,
                     "--token-file", token_file or self.token_file)
        self.addCleanup(lambda: client.proc.poll() is None and client.close())
        return client


class RemoteTools(RemoteCase):
    def test_the_tools_are_the_services_and_work_in_its_workspace(self):
        client = self.front()
        names = [t["name"] for t in client.request("tools/list")["result"]["tools"]]
        self.assertEqual(names[:3], ["ls", "read_file", "write_file"])
        self.assertIn("execute", names)
        self.assertIn("run_python", names)
        self.assertEqual(client.call("read_file", path="notes.txt")["structuredContent"]
                         ["content"], "remote notes\n")
        written = client.call("write_file", path="made/here.txt", content="from the front\n")
        self.assertFalse(written.get("isError"), written)
        with open(os.path.join(self.ws, "made", "here.txt")) as f:
            self.assertEqual(f.read(), "from the front\n")
        run = client.call("execute", command="cat made/here.txt; echo err >&2; exit 3")
        self.assertEqual(run["structuredContent"]["stdout"], "from the front\n")
        self.assertEqual(run["structuredContent"]["stderr"], "err\n")
        self.assertEqual(run["structuredContent"]["exit_code"], 3)
        self.assertEqual(client.call("run_python", code="x = 20")["structuredContent"]
                         .get("result"), None)
        self.assertEqual(client.call("run_python", code="x * 2 + 2")["structuredContent"]
                         ["result"], "42")
        # The service's rules judge: its secrets stay unread.
        secret = client.call("read_file", path=".env")
        self.assertTrue(secret["isError"])
        self.assertIn("secrets are never read", text(secret))
        self.assertEqual(client.close(), 0)
        self.assertIn("the remote service's rules", client.stderr)

    def test_a_read_only_service_offers_no_writes_through_the_front(self):
        self.service.stop()
        self.service = Service(self.ws, self.token_file, "--ruleset", "readonly")
        client = self.front()
        names = {t["name"] for t in client.request("tools/list")["result"]["tools"]}
        self.assertIn("read_file", names)
        self.assertFalse(names & {"write_file", "edit_file", "execute", "run_python"}, names)
        answer = client.request("tools/call", {"name": "write_file",
                                               "arguments": {"path": "x", "content": "y"}})
        _, direct = self.service.post({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                       "params": {"name": "write_file",
                                                  "arguments": {"path": "x", "content": "y"}}},
                                      self.open_direct())
        self.assertFalse(os.path.exists(os.path.join(self.ws, "x")))
        # The same answer as the service's own, error for error.
        self.assertEqual(answer.get("error"), direct.get("error"))
        self.assertEqual(answer.get("result"), direct.get("result"))

    def open_direct(self):
        sid, _ = self.service.post({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                    "params": {"protocolVersion": "2025-11-25",
                                               "capabilities": {},
                                               "clientInfo": {"name": "direct", "version": "1"}}})
        self.service.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
        return sid

    def test_errors_pass_through_as_the_service_sent_them(self):
        client = self.front()
        sid = self.open_direct()
        for params in ({"name": "no_such_tool", "arguments": {}},
                       {"name": "read_file", "arguments": {"path": 7}},
                       {"name": "read_file", "arguments": {"path": "missing.txt"}}):
            via_front = client.request("tools/call", params)
            _, direct = self.service.post({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                                           "params": params}, sid)
            self.assertEqual(via_front.get("error"), direct.get("error"), params)
            self.assertEqual(via_front.get("result"), direct.get("result"), params)
            self.assertTrue("error" in via_front or via_front["result"].get("isError"), params)

    def test_progress_comes_back_under_the_clients_token(self):
        client = self.front()
        client.send_raw(json.dumps({
            "jsonrpc": "2.0", "id": 77, "method": "tools/call",
            "params": {"name": "execute", "_meta": {"progressToken": "mine-1"},
                       "arguments": {"command": "for i in 1 2 3 4; do echo step$i; sleep 0.6;"
                                                " done"}}}).encode() + b"\n")
        answer = client.wait_for(lambda m: m.get("id") == 77, 60)
        self.assertEqual(answer["result"]["structuredContent"]["exit_code"], 0)
        progress = [m["params"] for m in client.pending
                    if m.get("method") == "notifications/progress"]
        self.assertTrue(progress, client.pending)
        self.assertTrue(all(p["progressToken"] == "mine-1" for p in progress), progress)
        self.assertTrue(any(p.get("message", "").endswith(tuple(f"step{i}" for i in range(1, 5)))
                            for p in progress), progress)

    def test_a_cancelled_call_stops_its_command_on_the_service(self):
        client = self.front()
        client.send_raw(json.dumps({
            "jsonrpc": "2.0", "id": 9, "method": "tools/call",
            "params": {"name": "execute",
                       "arguments": {"command": "sleep 993"}}}).encode() + b"\n")
        deadline = time.monotonic() + 20
        while not leftover("slee[p] 993"):
            self.assertLess(time.monotonic(), deadline, "the command never started")
            time.sleep(0.1)
        client.send_raw(json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                    "params": {"requestId": 9}}).encode() + b"\n")
        deadline = time.monotonic() + 10
        while leftover("slee[p] 993"):
            self.assertLess(time.monotonic(), deadline, "the command outlived its cancellation")
            time.sleep(0.1)
        self.assertTrue(client.ping())
        self.assertFalse(any(m.get("id") == 9 for m in client.pending),
                         "a cancelled request was answered")
        self.assertEqual(client.call("execute", command="echo still")["structuredContent"]
                         ["stdout"], "still\n")

    def test_a_service_that_goes_away_is_reported_and_used_again_when_back(self):
        client = self.front()
        self.assertEqual(client.call("run_python", code="kept = 5\nkept")["structuredContent"]
                         ["result"], "5")
        self.service.stop()
        start = time.monotonic()
        gone = client.call("read_file", path="notes.txt")
        self.assertTrue(gone["isError"])
        self.assertRegex(text(gone), r"the remote service at http://127\.0\.0\.1:\d+/mcp is not "
                                     r"reachable: .*\(tried 4 times\)")
        self.assertLess(time.monotonic() - start, 10)
        self.assertTrue(client.ping(), "the front stopped serving")
        self.service.start()
        back = client.call("read_file", path="notes.txt")
        self.assertEqual(back["structuredContent"]["content"], "remote notes\n")
        # A new service: a new session there, whose Python starts afresh, and says so.
        fresh = client.call("run_python", code="'kept' in globals()")["structuredContent"]
        self.assertEqual(fresh["result"], "False")
        self.assertTrue(fresh["new_session"])
        self.assertEqual(client.close(), 0)
        self.assertIn("session was lost", client.stderr)

    def test_a_wrong_token_is_refused_by_name(self):
        wrong = os.path.join(self.tmp.name, "wrong")
        with open(wrong, "w") as f:
            f.write("not-the-token\n")
        client = self.front(token_file=wrong)
        refused = client.call("read_file", path="notes.txt")
        self.assertTrue(refused["isError"])
        self.assertRegex(text(refused), r"refused this server's token \(HTTP 401")
        self.assertNotIn("not-the-token", text(refused))
        listed = client.request("tools/list")
        self.assertIn("refused this server's token", listed["error"]["message"])


class RemoteQuestions(RemoteCase):
    SERVICE_ARGS = ("--ruleset", "default")

    def test_the_services_question_reaches_the_client_and_its_answer_goes_back(self):
        client = self.front(ElicitingClient)
        client.answer = True
        done = client.call("execute", command="echo approved > approved.txt")
        self.assertFalse(done.get("isError"), done)
        self.assertEqual(len(client.asked), 1)
        self.assertIn("echo approved", client.asked[0])
        self.assertTrue(os.path.exists(os.path.join(self.ws, "approved.txt")))
        client.answer = False
        refused = client.call("execute", command="echo denied > denied.txt")
        self.assertTrue(refused["isError"])
        self.assertEqual(len(client.asked), 2)
        self.assertFalse(os.path.exists(os.path.join(self.ws, "denied.txt")))

    def test_a_client_that_cannot_be_asked_gets_the_services_fallback(self):
        client = self.front()
        refused = client.call("execute", command="echo x > x.txt")
        self.assertTrue(refused["isError"])
        self.assertIn("needs approval", text(refused))
        self.assertFalse(os.path.exists(os.path.join(self.ws, "x.txt")))


class RemoteSettings(unittest.TestCase):
    def refused(self, *args):
        r = subprocess.run([BINARY, *args], stdin=subprocess.DEVNULL, capture_output=True,
                           text=True, timeout=30)
        self.assertEqual(r.returncode, 2, r.stderr)
        return r.stderr

    def test_mistakes_are_named(self):
        self.assertIn("--backend remote needs --remote-url", self.refused("--backend", "remote"))
        self.assertIn("is not an http:// or https:// URL",
                      self.refused("--backend", "remote", "--remote-url", "ftp://h/mcp"))
        self.assertIn("--ruleset does not apply to --backend remote",
                      self.refused("--backend", "remote", "--remote-url", "http://127.0.0.1:9/mcp",
                                   "--ruleset", "permissive"))
        self.assertIn("needs --transport stdio",
                      self.refused("--backend", "remote", "--remote-url", "http://127.0.0.1:9/mcp",
                                   "--transport", "http"))
        self.assertIn("--remote-url needs --backend remote",
                      self.refused("--remote-url", "http://127.0.0.1:9/mcp"))


if __name__ == "__main__":
    BINARY = os.path.abspath(sys.argv.pop(1))
    unittest.main()
