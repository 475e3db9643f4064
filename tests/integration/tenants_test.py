#!/usr/bin/python3
"""Tenants (--tokens-file) against the real binary over HTTP: each token names its tenant, whose
cap, rules, limits and workspace are its own and whose sessions no other tenant can reach; the
file's mistakes are refused at start, naming the tenant and key and never a token.

usage: tenants_test.py BINARY [unittest args]"""

import glob
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import http_test
from http_test import INIT, Server

ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-fedcba9876543210xyz"


def bearer(token):
    return {"Authorization": "Bearer " + token}


def result_text(body):
    message = json.loads(body)
    return message["result"]["content"][0]["text"], message["result"]


class LoggedServer(Server):
    """A Server whose whole log is kept (read as it comes, so that it never fills the pipe)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.log = list(self.head)
        self.reader = threading.Thread(target=self._drain, daemon=True)
        self.reader.start()

    def _drain(self):
        for line in self.proc.stderr:
            self.log.append(line.decode(errors="replace"))

    def stop(self):
        self.proc.terminate()
        code = self.proc.wait(30)
        self.reader.join(10)
        self.proc.stderr.close()
        return code


class TenantsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = os.path.join(self.tmp.name, "root")
        self.spaces = os.path.join(self.tmp.name, "spaces")
        os.mkdir(self.root)
        os.mkdir(self.spaces)
        for i in range(3):
            with open(os.path.join(self.root, f"f{i}.txt"), "w") as f:
                f.write("x\n")

    def tearDown(self):
        self.tmp.cleanup()

    def tokens_file(self, doc, mode=0o600, name="tokens.json"):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w") as f:
            f.write(doc if isinstance(doc, str) else json.dumps(doc))
        os.chmod(path, mode)
        return path

    def tenants(self):
        return {
            # alice: by the token's digest; two sessions at most; read-only.
            "sha256:" + hashlib.sha256(ALICE.encode()).hexdigest().upper(): {
                "name": "alice", "max_sessions": 2, "ruleset": "readonly"},
            # bob: the token itself; one session; at most one result per listing.
            BOB: {"name": "bob", "max_sessions": 1, "limits": {"max_results": 1}},
        }

    def start(self, doc, *args):
        server = LoggedServer(self.root, "--tokens-file", self.tokens_file(doc),
                              "--workspace-root", self.spaces, *args, log_level="debug")
        self.addCleanup(server.stop)
        return server

    def start_fails(self, doc, *args, mode=0o600, env=None):
        path = self.tokens_file(doc, mode)
        proc = subprocess.run(
            [http_test.BINARY, "--transport", "http", "--listen", "127.0.0.1:0",
             "--root", self.root, "--tokens-file", path, *args],
            capture_output=True, text=True, timeout=30, env=env)
        self.assertEqual(proc.returncode, 2, proc.stderr)
        return proc.stderr

    def test_each_token_names_its_tenant_and_its_cap(self):
        server = self.start(self.tenants())
        self.assertEqual(server.request("POST", body=INIT)[0], 401)
        self.assertEqual(server.request("POST", body=INIT, headers=bearer("nobody-" + BOB))[0], 401)
        # The digest's own hex is no token.
        digest = hashlib.sha256(ALICE.encode()).hexdigest()
        self.assertEqual(server.request("POST", body=INIT, headers=bearer(digest))[0], 401)
        a1 = server.initialize(bearer(ALICE))
        server.initialize(bearer(ALICE))
        status, h, body = server.request("POST", body=INIT, headers=bearer(ALICE))
        self.assertEqual(status, 429, body)
        self.assertIn("retry-after", h)
        self.assertIn("tenant 'alice' has 2 sessions open", body.decode())
        # One tenant at its cap does not take the pool from another.
        b1 = server.initialize(bearer(BOB))
        self.assertEqual(server.request("POST", body=INIT, headers=bearer(BOB))[0], 429)
        # Ending a session makes room for the next.
        status, _, _ = server.request("DELETE", headers={"Mcp-Session-Id": a1, **bearer(ALICE)})
        self.assertEqual(status, 200)
        server.initialize(bearer(ALICE))
        self.assertTrue(b1)

    def test_parallel_initializes_do_not_pass_the_cap_together(self):
        server = self.start(self.tenants())
        statuses = []

        def initialize():
            statuses.append(server.request("POST", body=INIT, headers=bearer(ALICE))[0])

        threads = [threading.Thread(target=initialize) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.assertEqual(sorted(statuses), [200, 200] + [429] * 6)

    def test_a_tenant_cannot_reach_another_tenants_session(self):
        server = self.start(self.tenants())
        a = server.initialize(bearer(ALICE))
        b = server.initialize(bearer(BOB))
        # Bob naming Alice's session: unknown to him, whatever he asks.
        status, _, body = server.call(a, 2, "ls", {}, headers=bearer(BOB))
        self.assertEqual(status, 404, body)
        status, _, _ = server.request("DELETE", headers={"Mcp-Session-Id": a, **bearer(BOB)})
        self.assertEqual(status, 404)
        status, _, _ = server.request("GET", headers={"Mcp-Session-Id": a, "Accept":
                                                      "text/event-stream", **bearer(BOB)})
        self.assertEqual(status, 404)
        # ... and the session lives on for Alice.
        status, _, body = server.call(a, 3, "ls", {}, headers=bearer(ALICE))
        self.assertEqual(status, 200, body)
        status, _, body = server.call(b, 3, "ls", {}, headers=bearer(BOB))
        self.assertEqual(status, 200, body)

    def test_rules_limits_and_workspaces_are_the_tenants(self):
        server = self.start(self.tenants())
        a = server.initialize(bearer(ALICE))
        b = server.initialize(bearer(BOB))
        # Alice is read-only: no write tool offered, and a write refused.
        status, _, body = server.request(
            "POST", body={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            headers={"Mcp-Session-Id": a, **bearer(ALICE)})
        names = [t["name"] for t in json.loads(body)["result"]["tools"]]
        self.assertIn("read_file", names)
        self.assertNotIn("write_file", names)
        status, _, body = server.call(a, 3, "write_file", {"path": "w.txt", "content": "a\n"},
                                      headers=bearer(ALICE))
        text, result = result_text(body)
        self.assertTrue(result["isError"], text)
        self.assertIn("write denied for 'w.txt'", text)
        # Bob writes, into a directory of his own under the workspace root.
        status, _, body = server.call(b, 4, "write_file", {"path": "w.txt", "content": "b\n"},
                                      headers=bearer(BOB))
        text, result = result_text(body)
        self.assertFalse(result["isError"], text)
        written = glob.glob(os.path.join(self.spaces, "bob", "session-*", "w.txt"))
        self.assertEqual(len(written), 1, os.listdir(self.spaces))
        self.assertEqual(glob.glob(os.path.join(self.spaces, "alice", "session-*", "w.txt")), [])
        # Bob's listings stop at one entry; Alice's at the server's limit.
        for name in ("x1", "x2"):
            server.call(b, 5, "write_file", {"path": name, "content": ""}, headers=bearer(BOB))
        text, result = result_text(server.call(b, 6, "ls", {}, headers=bearer(BOB))[2])
        self.assertEqual(len(result["structuredContent"]["entries"]), 1, text)
        self.assertTrue(result["structuredContent"]["truncated"])
        # A timeout beyond the tenant's limits is refused naming where the limit comes from.
        text, result = result_text(server.call(b, 7, "execute", {
            "command": "true", "timeout_s": 3600}, headers=bearer(BOB))[2])
        self.assertTrue(result["isError"], text)
        self.assertIn("(the limits of tenant bob)", text)
        # No token reaches the log, even at debug.
        self.assertEqual(server.stop(), 0)
        log = "".join(server.log)
        self.assertIn("session", log)
        self.assertNotIn(ALICE, log)
        self.assertNotIn(BOB, log)

    def test_the_tokens_file_from_the_environment(self):
        env = dict(os.environ, BACKYARD_TOKENS_FILE=self.tokens_file(self.tenants()))
        server = Server(self.root, "--workspace-root", self.spaces, env=env)
        self.addCleanup(server.stop)
        self.assertEqual(server.request("POST", body=INIT)[0], 401)
        server.initialize(bearer(BOB))

    def test_mistakes_are_refused_at_start(self):
        tenants = self.tenants()
        message = self.start_fails(tenants, "--workspace-root", self.spaces, mode=0o644)
        self.assertIn("may be read or written by users other than its owner (mode 0644)", message)
        cases = [
            ("[]", "must be a JSON object with one key per token"),
            ("{", "is not valid JSON"),
            ({BOB: {"name": "bob", "max_session": 2}}, "unknown key 'max_session'"),
            ({BOB: {"name": "b b"}}, "\"name\" must be 1 to 64 letters"),
            ({"short": {"name": "bob"}}, "its token has 5 characters, fewer than 16"),
            ({"sha256:abc": {"name": "bob"}}, "the 64 hex digits of a SHA-256"),
            ({BOB: {"name": "bob", "max_sessions": 0}}, "tenant 1 ('bob'): max_sessions"),
            ({BOB: {"name": "bob", "limits": {"max_timeout_s": -1}}},
             "limits.max_timeout_s"),
            ({BOB: {"name": "bob", "limits": {"timeout": 1}}}, "limits: unknown key 'timeout'"),
            ({BOB: {"name": "bob", "ruleset": "no-such-preset"}}, "tenant 1 ('bob'): ruleset"),
            ({BOB: {"name": "bob", "workspace_root": "/no/such/dir"}},
             "workspace_root '/no/such/dir' is not a directory"),
            ({BOB: {"name": "bob"}, ALICE: {"name": "bob"}}, "the name 'bob' is taken"),
            ({BOB: {"name": "bob"},
              "sha256:" + hashlib.sha256(BOB.encode()).hexdigest(): {"name": "bob2"}},
             "its token is another tenant's too"),
        ]
        for doc, expected in cases:
            with self.subTest(expected=expected):
                message = self.start_fails(doc, "--workspace-root", self.spaces)
                self.assertIn(expected, message)
                self.assertNotIn(BOB, message)
                self.assertNotIn(ALICE, message)
        # Roots that are, hold or lie in one another's, however spelled.
        nested = os.path.join(self.spaces, "inner")
        os.mkdir(nested)
        message = self.start_fails({BOB: {"name": "bob", "workspace_root": self.spaces + "/"},
                                    ALICE: {"name": "alice", "workspace_root": nested}})
        self.assertIn("is, holds or lies in another tenant's", message)
        message = self.start_fails({BOB: {"name": "bob", "workspace_root": nested},
                                    ALICE: {"name": "alice",
                                            "workspace_root": nested + "/../inner"}})
        self.assertIn("is, holds or lies in another tenant's", message)
        # Two tenants sharing the root's files: refused without a workspace root.
        message = self.start_fails({BOB: {"name": "bob"}, ALICE: {"name": "alice"}})
        self.assertIn("would work in the root, which other tenants see too", message)
        # One token or the other, not both.
        token = os.path.join(self.tmp.name, "token")
        with open(token, "w") as f:
            f.write("single-token-0123456789\n")
        message = self.start_fails(self.tenants(), "--token-file", token)
        self.assertIn("give it or --token-file, not both", message)

    def test_runtime_mistakes_are_refused_at_start(self):
        """The runtimes file's mistakes (and a tenant's runtimes), each named; read from
        BACKYARD_RUNTIMES as from --runtimes. Nothing here reaches an engine."""
        base = {"base_image": "debian:bookworm"}
        cases = [
            ("[]", "must be a JSON object with one key per runtime"),
            ({"a b": {"image": "x"}}, "the runtime name 'a b' must be 1 to 64 letters"),
            ({"py": {"image": "x", "base_image": "y"}}, "runtime 'py': give either \"image\""),
            ({"py": {}}, "runtime 'py': give either \"image\""),
            ({"py": {"image": "x", "packages": {"apt": ["jq"]}}},
             "\"packages\", \"pip_index_url\" and \"npm_registry\" go with \"base_image\""),
            ({"py": {**base, "packages": {"apt": ["jq; rm -rf /"]}}},
             "runtime 'py': packages.apt: apt package 'jq; rm -rf /': the character ';'"),
            ({"py": {**base, "packages": {"cargo": ["x"]}}},
             "packages: unknown key 'cargo' (known: apt, pip, npm)"),
            ({"py": {**base, "pip_index_url": "http://x/ $(id)"}}, "pip_index_url"),
            ({"py": {**base, "limits": {"memory": 1}}},
             "limits: unknown key 'memory' (known: container_memory, cpus, pids, max_timeout_s)"),
            ({"py": {**base, "limits": {"cpus": 0}}}, "runtime 'py': limits.cpus"),
            ({"py": {**base, "network": {"default": "sometimes"}}}, "runtime 'py': network"),
            ({"py": {**base, "colour": "red"}}, "runtime 'py': unknown key 'colour'"),
        ]
        for doc, expected in cases:
            with self.subTest(expected=expected):
                path = self.tokens_file(doc, name="runtimes.json")
                for how in ("flag", "environment"):
                    args = ["--backend", "docker", "--workspace-root", self.spaces]
                    env = dict(os.environ)
                    if how == "flag":
                        args += ["--runtimes", path]
                    else:
                        env["BACKYARD_RUNTIMES"] = path
                    message = self.start_fails({BOB: {"name": "bob"}}, *args, env=env)
                    self.assertIn(expected, message)
        # Runtimes are the Docker backend's, or a Swarm front's.
        path = self.tokens_file({"py": {"image": "x"}}, name="runtimes.json")
        message = self.start_fails({BOB: {"name": "bob"}}, "--runtimes", path)
        self.assertIn("runtimes are images of the Docker backend or of a Swarm front's agents: "
                      "they need --backend docker or --placement docker-swarm", message)
        # A tenant's runtimes must be the server's.
        message = self.start_fails({BOB: {"name": "bob", "runtimes": ["py", "nosuch"]}},
                                   "--backend", "docker", "--workspace-root", self.spaces,
                                   "--runtimes", path)
        self.assertIn("tenant 1 ('bob'): runtimes: \"nosuch\" is not a runtime of --runtimes "
                      "(py)", message)

    def test_one_token_is_one_tenant(self):
        token = os.path.join(self.tmp.name, "token")
        with open(token, "w") as f:
            f.write("single-token-0123456789\n")
        server = Server(self.root, "--token-file", token, "--max-sessions", "1")
        self.addCleanup(server.stop)
        self.assertEqual(server.request("POST", body=INIT)[0], 401)
        server.initialize(bearer("single-token-0123456789"))
        self.assertEqual(
            server.request("POST", body=INIT, headers=bearer("single-token-0123456789"))[0], 429)


def make_dirs(test):
    """A temporary directory for `test`, with the server's root and workspace root in it."""
    test.tmp = tempfile.TemporaryDirectory()
    test.addCleanup(test.tmp.cleanup)
    test.root = os.path.join(test.tmp.name, "root")
    test.spaces = os.path.join(test.tmp.name, "spaces")
    os.mkdir(test.root)
    os.mkdir(test.spaces)


class NamedSessionsTest(unittest.TestCase):
    """A session named by its client (io.backyard/session) comes back to a later connection of
    the same tenant: its files, and its Python state while its kernels live."""

    def setUp(self):
        make_dirs(self)
        tokens = os.path.join(self.tmp.name, "tokens.json")
        with open(tokens, "w") as f:
            json.dump({ALICE: {"name": "alice"}, BOB: {"name": "bob"}}, f)
        os.chmod(tokens, 0o600)
        # Idle sessions (and a named session's kernels) go after 2 s.
        self.server = Server(self.root, "--tokens-file", tokens, "--workspace-root", self.spaces,
                             "--session-idle", "2")
        self.addCleanup(self.server.stop)

    def initialize(self, token, name=None, header=None):
        """POSTs an initialize naming its session by `_meta` (name) or the header."""
        init = json.loads(json.dumps(INIT))
        headers = bearer(token)
        if name is not None:
            init["params"]["_meta"] = {"io.backyard/session": name}
        if header is not None:
            headers["Backyard-Session"] = header
        return self.server.request("POST", body=init, headers=headers)

    def open(self, token, name=None, header=None, told=None):
        """A session's id; `told`: what its instructions must say."""
        status, h, body = self.initialize(token, name, header)
        self.assertEqual(status, 200, body)
        if told is not None:
            self.assertIn(told, json.loads(body)["result"]["instructions"])
        return h["mcp-session-id"]

    def call(self, sid, token, name, arguments):
        status, _, body = self.server.call(sid, 5, name, arguments, headers=bearer(token))
        self.assertEqual(status, 200, body)
        return json.loads(body)["result"]

    def end(self, sid, token):
        status, _, _ = self.server.request("DELETE", headers={"Mcp-Session-Id": sid,
                                                              **bearer(token)})
        self.assertEqual(status, 200)

    def test_a_named_session_comes_back(self):
        first = self.open(ALICE, name="work")
        self.assertFalse(self.call(first, ALICE, "write_file",
                                   {"path": "a.txt", "content": "kept\n"})["isError"])
        self.assertFalse(self.call(first, ALICE, "run_python", {"code": "x = 41"})["isError"])
        self.assertTrue(os.path.isfile(os.path.join(self.spaces, "alice", "named-work", "a.txt")))
        self.end(first, ALICE)
        # A new connection, by the header: the files and the kernel's globals are there.
        again = self.open(ALICE, header="work",
                          told="its files and Python sessions are as they were left")
        result = self.call(again, ALICE, "read_file", {"path": "a.txt"})
        self.assertEqual(result["structuredContent"]["content"], "kept\n")
        result = self.call(again, ALICE, "run_python", {"code": "x + 1"})
        self.assertEqual(result["structuredContent"]["result"], "42")
        # Two connections on one name share it, each answered on its own.
        beside = self.open(ALICE, name="work")
        self.assertFalse(self.call(beside, ALICE, "write_file",
                                   {"path": "b.txt", "content": "b\n"})["isError"])
        self.assertEqual(self.call(again, ALICE, "read_file",
                                   {"path": "b.txt"})["structuredContent"]["content"], "b\n")
        # An unnamed session and another tenant's "work" are elsewhere.
        plain = self.open(ALICE)
        self.assertTrue(self.call(plain, ALICE, "read_file", {"path": "a.txt"})["isError"])
        bobs = self.open(BOB, name="work")
        self.assertTrue(self.call(bobs, BOB, "read_file", {"path": "a.txt"})["isError"])
        result = self.call(bobs, BOB, "run_python", {"code": "'x' in globals()"})
        self.assertEqual(result["structuredContent"]["result"], "False")
        # Once no connection has used it for the idle time, its kernels stop; its files stay.
        self.end(again, ALICE)
        self.end(beside, ALICE)
        time.sleep(4)
        last = self.open(ALICE, name="work", told="its Python sessions start afresh")
        self.assertEqual(self.call(last, ALICE, "read_file",
                                   {"path": "a.txt"})["structuredContent"]["content"], "kept\n")
        result = self.call(last, ALICE, "run_python", {"code": "'x' in globals()"})
        self.assertEqual(result["structuredContent"]["result"], "False")

    def test_a_call_longer_than_the_idle_time_does_not_end_its_session(self):
        sid = self.open(ALICE)
        result = self.call(sid, ALICE, "execute", {"command": "sleep 3; echo slept"})
        self.assertEqual(result["structuredContent"]["stdout"], "slept\n")
        # Idle time counts from the answer, not from the request.
        time.sleep(1)
        result = self.call(sid, ALICE, "execute", {"command": "echo still"})
        self.assertEqual(result["structuredContent"]["stdout"], "still\n")

    def open_for_tasks(self, token, name):
        """A named session whose client declared the tasks extension."""
        init = json.loads(json.dumps(INIT))
        init["params"]["protocolVersion"] = "2025-11-25"
        init["params"]["capabilities"] = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
        init["params"]["_meta"] = {"io.backyard/session": name}
        status, h, body = self.server.request("POST", body=init, headers=bearer(token))
        self.assertEqual(status, 200, body)
        return h["mcp-session-id"]

    def rpc(self, sid, token, method, params):
        status, _, body = self.server.request(
            "POST", body={"jsonrpc": "2.0", "id": 8, "method": method, "params": params},
            headers={"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25",
                     **bearer(token)})
        self.assertEqual(status, 200, body)
        messages = http_test.body_messages(body)
        return [m for m in messages if m.get("id") == 8][0]

    def test_a_task_outlives_its_connection_and_is_collected_by_a_later_one(self):
        first = self.open_for_tasks(ALICE, "build")
        answer = self.rpc(first, ALICE, "tools/call", {"name": "execute", "arguments": {
            "command": "sleep 4; echo built > out.txt; echo built"}})
        task = answer["result"]["taskId"]
        # Its client goes quiet for longer than the idle time: a session running a task is not
        # idle (were it ended, the task would be cancelled with it).
        time.sleep(3)
        again = self.open_for_tasks(ALICE, "build")
        deadline = time.time() + 30
        while True:
            got = self.rpc(again, ALICE, "tasks/get", {"taskId": task})["result"]
            if got["status"] != "working" or time.time() > deadline:
                break
            time.sleep(0.2)
        self.assertEqual(got["status"], "completed", got)
        self.assertEqual(got["result"]["structuredContent"]["stdout"], "built\n")
        # The task's session, once idle, goes; what it finished stays to be read.
        for _ in range(4):
            time.sleep(1)
            got = self.rpc(again, ALICE, "tasks/get", {"taskId": task})["result"]
            self.assertEqual(got["status"], "completed", got)
        status, _, _ = self.server.request("DELETE", headers={"Mcp-Session-Id": first,
                                                              **bearer(ALICE)})
        self.assertEqual(status, 404)  # reaped
        with open(os.path.join(self.spaces, "alice", "named-build", "out.txt")) as f:
            self.assertEqual(f.read(), "built\n")
        # Another name of the tenant, and another tenant's session of the same name, see nothing.
        for token, name in ((ALICE, "other"), (BOB, "build")):
            with self.subTest(token=token[:5], name=name):
                sid = self.open_for_tasks(token, name)
                error = self.rpc(sid, token, "tasks/get", {"taskId": task})["error"]
                self.assertEqual(error["code"], -32602, error)

    def api(self, method, path, token=ALICE):
        status, _, body = self.server.request(method, path, headers=bearer(token))
        return status, body

    def test_stored_workspaces_are_read_and_purged_by_their_tenant_alone(self):
        sid = self.open(ALICE, name="work")
        self.call(sid, ALICE, "write_file", {"path": "src/a.txt", "content": "kept\n"})
        self.call(sid, ALICE, "execute", {"command": "ln -s /etc/hostname out; ln -s src in"})
        self.open(BOB, name="mine")
        status, body = self.api("GET", "/api/sessions")
        self.assertEqual(status, 200, body)
        listed = json.loads(body)["sessions"]
        self.assertEqual([(s["name"], s["connected"]) for s in listed], [("work", 1)])
        status, body = self.api("GET", "/api/sessions/work/ls?path=src")
        self.assertEqual(status, 200, body)
        entries = json.loads(body)["entries"]
        self.assertEqual([(e["name"], e["type"], e["size"]) for e in entries],
                         [("a.txt", "file", 5)])
        status, body = self.api("GET", "/api/sessions/work/read?path=src/a.txt")
        self.assertEqual((status, body), (200, b"kept\n"))
        # Through a link inside, yes; out of the workspace, by any way, no.
        self.assertEqual(self.api("GET", "/api/sessions/work/read?path=in/a.txt"), (200, b"kept\n"))
        with open("/etc/hostname", "rb") as f:
            hostname = f.read().strip()
        for path in ("../../tokens.json", "/etc/hostname", "out", "src/../../x"):
            with self.subTest(path=path):
                status, body = self.api("GET", "/api/sessions/work/read?path=" + path)
                self.assertIn(status, (400, 403, 404), body)
                self.assertNotIn(hostname, body)
        # Another tenant, no token, a name that is none, a session that is not.
        self.assertEqual(self.api("GET", "/api/sessions/work/read?path=src/a.txt", BOB)[0], 404)
        self.assertEqual(self.server.request("GET", "/api/sessions")[0], 401)
        self.assertEqual(self.api("GET", "/api/sessions/a%20b/ls")[0], 400)
        self.assertEqual(self.api("GET", "/api/sessions/nothing/ls")[0], 404)
        self.assertEqual(self.api("DELETE", "/api/sessions/work", BOB)[0], 404)
        # A purge ends the session's connections and removes its files for good.
        status, body = self.api("DELETE", "/api/sessions/work")
        self.assertEqual(status, 200, body)
        status, _, _ = self.server.call(sid, 9, "ls", {}, headers=bearer(ALICE))
        self.assertEqual(status, 404)
        self.assertFalse(os.path.exists(os.path.join(self.spaces, "alice", "named-work")))
        self.assertEqual(self.api("GET", "/api/sessions/work/ls")[0], 404)
        self.assertEqual(json.loads(self.api("GET", "/api/sessions")[1])["sessions"], [])
        # The name can be used again, afresh.
        again = self.open(ALICE, name="work")
        self.assertTrue(self.call(again, ALICE, "read_file", {"path": "src/a.txt"})["isError"])

    def test_a_bad_name_is_refused(self):
        for name, header in (("../up", None), ("", None), (None, "a b"), ("x" * 65, None)):
            with self.subTest(name=name, header=header):
                status, _, body = self.initialize(ALICE, name, header)
                self.assertEqual(status, 400, body)
                self.assertIn("a session name is 1 to 64 letters", body.decode())
        status, _, body = self.initialize(ALICE, 7)
        self.assertEqual(status, 400)
        self.assertIn("must be a string", body.decode())


class RetentionTest(unittest.TestCase):
    """--workspace-ttl: a session's directory unopened for that long is deleted for good; one
    still open, or a named session's that lingers, is not."""

    def test_directories_unopened_for_the_ttl_are_deleted(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        root = os.path.join(tmp.name, "root")
        spaces = os.path.join(tmp.name, "spaces")
        os.mkdir(root)
        os.mkdir(spaces)
        # Spelled with a trailing slash: the open session's directory is still known as open.
        server = Server(root, "--workspace-root", spaces + "/", "--workspace-ttl", "2",
                        "--session-idle", "3")
        self.addCleanup(server.stop)

        def start(name=None):
            init = json.loads(json.dumps(INIT))
            if name:
                init["params"]["_meta"] = {"io.backyard/session": name}
            status, h, body = server.request("POST", body=init)
            self.assertEqual(status, 200, body)
            sid = h["mcp-session-id"]
            status, _, body = server.call(sid, 2, "write_file", {"path": "f.txt", "content": "x"})
            self.assertEqual(status, 200, body)
            return sid

        def dirs():
            return sorted(os.listdir(spaces))

        ended, kept = start(), start()
        named = start("keep")
        self.assertEqual(len(dirs()), 3, dirs())
        for sid in (ended, named):
            self.assertEqual(server.request("DELETE", headers={"Mcp-Session-Id": sid})[0], 200)
        # The open session (used now and then) keeps its directory however old; the others
        # go once closed for 2 s (the named one after its backend's 3 s of lingering, too).
        deadline = time.monotonic() + 30
        seen = []
        while time.monotonic() < deadline and len(dirs()) > 1:
            seen.append(len(dirs()))
            self.assertEqual(server.call(kept, 9, "ls", {})[0], 200)
            time.sleep(0.25)
        self.assertIn(2, seen)  # the unnamed one went first: the named one lingered
        self.assertEqual(len(dirs()), 1, dirs())
        self.assertTrue(dirs()[0].startswith("session-"))
        status, _, body = server.call(kept, 3, "read_file", {"path": "f.txt"})
        self.assertEqual(json.loads(body)["result"]["structuredContent"]["content"].strip(), "x")

    def test_retention_settings_are_checked(self):
        with tempfile.TemporaryDirectory() as root:
            for args, expected in (
                    (["--transport", "http", "--workspace-ttl", "5"],
                     "--workspace-ttl needs --transport http and a workspace root"),
                    (["--session-pool", "2"],
                     "--session-pool needs --transport http and a backend with sandboxes"),
                    (["--transport", "http", "--backend", "state", "--session-pool", "2"],
                     "--session-pool needs --transport http and a backend with sandboxes"),
                    (["--transport", "http", "--session-pool", "257"], "--session-pool"),
                    (["--transport", "http", "--persist-containers"],
                     "--persist-containers needs --transport http and --backend docker"),
                    (["--persist-containers", "--backend", "docker"],
                     "--persist-containers needs --transport http and --backend docker"),
                    (["--transport", "http", "--persist-containers", "--backend", "docker"],
                     "--persist-containers needs a workspace root")):
                with self.subTest(args=args):
                    proc = subprocess.run([http_test.BINARY, "--root", root, *args],
                                          capture_output=True, text=True, timeout=30)
                    self.assertEqual(proc.returncode, 2, proc.stderr)
                    self.assertIn(expected, proc.stderr)


def metric(server, family):
    """The samples of one family of /metrics (a loopback client needs no token), by labels."""
    status, _, body = server.request("GET", "/metrics")
    assert status == 200, status
    return {labels: float(value) for labels, value in
            re.findall("^" + family + r"(\{[^}]*\}|) (\S+)$", body.decode(), re.M)}


class SessionPoolTest(unittest.TestCase):
    """--session-pool: sessions made ahead for each tenant (directory, sandbox, spare kernel),
    taken by its next unnamed sessions and made again; what no session took goes at the end."""

    def setUp(self):
        make_dirs(self)

    def wait_ready(self, server, want):
        deadline = time.monotonic() + 60
        while True:
            ready = metric(server, "byd_session_pool_ready")
            if ready == want or time.monotonic() > deadline:
                return ready
            time.sleep(0.1)

    def inotify_instances(self, server):
        fds = f"/proc/{server.proc.pid}/fd"
        count = 0
        for fd in os.listdir(fds):
            try:  # a descriptor the server closes between the listing and the look is not one
                count += os.readlink(f"{fds}/{fd}") == "anon_inode:inotify"
            except FileNotFoundError:
                pass
        return count

    def dirs(self, tenant):
        return sorted(glob.glob(os.path.join(self.spaces, tenant, "session-*")))

    def test_each_tenant_has_sessions_ready_and_the_next_takes_one(self):
        tokens = os.path.join(self.tmp.name, "tokens.json")
        with open(tokens, "w") as f:
            json.dump({ALICE: {"name": "alice", "ruleset": "readonly"}, BOB: {"name": "bob"}}, f)
        os.chmod(tokens, 0o600)
        server = LoggedServer(self.root, "--tokens-file", tokens, "--workspace-root",
                              self.spaces, "--session-pool", "2")
        self.addCleanup(server.stop)
        want = {'{tenant="alice"}': 2, '{tenant="bob"}': 2}
        self.assertEqual(self.wait_ready(server, want), want)
        ahead = {t: self.dirs(t) for t in ("alice", "bob")}
        self.assertEqual([len(d) for d in ahead.values()], [2, 2], ahead)
        # bob's two sandboxes run (and the one the start checked the sandbox with, which
        # ended); alice's rules run nothing, so hers have none.
        self.assertEqual(metric(server, "byd_sandbox_starts_total"), {"": 3})
        # Nothing has looked into their workspaces yet: they hold none of the few inotify
        # instances a user may have.
        self.assertEqual(self.inotify_instances(server), 0)

        sid = server.initialize(bearer(BOB))
        status, _, body = server.call(sid, 2, "execute", {"command": "pwd; echo $$"},
                                      headers=bearer(BOB))
        self.assertEqual(status, 200, body)
        out = json.loads(body)["result"]["structuredContent"]["stdout"].split()
        self.assertIn(out[0], ahead["bob"])  # a directory made ahead
        self.assertGreater(self.inotify_instances(server), 0)  # now its workspace is followed
        status, _, body = server.call(sid, 3, "run_python", {"code": "x = 41\nx + 1"},
                                      headers=bearer(BOB))
        self.assertEqual(json.loads(body)["result"]["structuredContent"]["result"], "42", body)
        # The pool is made whole again: one more sandbox, for the new one. The session's calls
        # started none: its sandbox was running.
        self.assertEqual(self.wait_ready(server, want), want)
        self.assertEqual(metric(server, "byd_sandbox_starts_total"), {"": 4})
        self.assertEqual(len(self.dirs("bob")), 3)

        # alice's session is hers, under her rules, in a directory made ahead for her.
        alice = server.initialize(bearer(ALICE))
        status, _, body = server.call(alice, 2, "write_file", {"path": "a.txt", "content": "x"},
                                      headers=bearer(ALICE))
        self.assertIn("denied", body.decode())
        status, _, body = server.call(alice, 3, "ls", {}, headers=bearer(ALICE))
        self.assertEqual(status, 200, body)
        self.assertEqual(self.wait_ready(server, want), want)
        self.assertEqual(len(self.dirs("alice")), 3)

        # At the end, the directories made ahead that no session took go; the used ones stay.
        self.assertEqual(server.stop(), 0)
        self.assertEqual(self.dirs("bob"), [out[0]])
        self.assertEqual(len(self.dirs("alice")), 1)
        self.assertIn(self.dirs("alice")[0], ahead["alice"])  # hers was made ahead


if __name__ == "__main__":
    http_test.BINARY = os.path.abspath(sys.argv.pop(1))
    unittest.main()
