"""A small MCP client over stdio for integration tests: starts the binary, sends requests,
waits for the answer with the same id, and fails loudly (never hangs) when none comes."""

import json
import os
import select
import subprocess
import sys
import tempfile
import time
import unittest


class Client:
    def __init__(self, binary, *args, initialize=True, env=None):
        self.proc = subprocess.Popen([binary, *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        self.buffer = b""
        self.pending = []  # messages read while waiting for another id
        self.next_id = 1
        if initialize:
            self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                        "clientInfo": {"name": "integration", "version": "1"}})
            self.send_raw(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')

    def send_raw(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def read_message(self, timeout=30):
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no message from the server")
            ready, _, _ = select.select([self.proc.stdout], [], [], left)
            if ready:
                chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
                if not chunk:
                    raise EOFError("server closed stdout")
                self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def wait_for(self, predicate, timeout=30):
        for i, m in enumerate(self.pending):
            if predicate(m):
                return self.pending.pop(i)
        while True:
            m = self.read_message(timeout)
            if predicate(m):
                return m
            self.pending.append(m)

    def request(self, method, params=None, timeout=30):
        rid = self.next_id
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.send_raw(json.dumps(msg).encode() + b"\n")
        return self.wait_for(lambda m: m.get("id") == rid, timeout)

    def call(self, tool, **arguments):
        r = self.request("tools/call", {"name": tool, "arguments": arguments})
        assert "result" in r, f"{tool} {arguments}: {r}"
        return r["result"]

    def ping(self):
        return self.request("ping", timeout=10).get("result") == {}

    def close(self, timeout=30):
        self.proc.stdin.close()
        code = self.proc.wait(timeout)
        self.stderr = self.proc.stderr.read().decode("utf-8", "replace")
        self.proc.stdout.close()
        self.proc.stderr.close()
        return code


class ElicitingClient(Client):
    """A client that can be asked, and answers every question with `self.answer` (or, when it
    is a function, with what it returns for the question's message)."""

    def __init__(self, binary, *args):
        super().__init__(binary, *args, initialize=False)
        self.answer = True
        self.asked = []
        self.request("initialize", {"protocolVersion": "2025-06-18",
                                    "capabilities": {"elicitation": {}},
                                    "clientInfo": {"name": "integration", "version": "1"}})
        self.send_raw(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')

    def read_message(self, timeout=30):
        while True:
            m = super().read_message(timeout)
            if m.get("method") != "elicitation/create":
                return m
            asked = m["params"]["message"]
            self.asked.append(asked)
            answer = self.answer(asked) if callable(self.answer) else self.answer
            reply = {"jsonrpc": "2.0", "id": m["id"],
                     "result": {"action": "accept", "content": {"approve": answer}}}
            self.send_raw(json.dumps(reply).encode() + b"\n")


def binary_and_backend(argv):
    """Takes the server binary and any `--backend NAME`, `--runtime NAME`, `--image NAME` and
    `--python-new-sessions HOW` off the front of `argv` (leaving the rest to unittest): (binary,
    extra server arguments). The Docker backend gets the locally built test image unless
    another is named."""
    binary = argv.pop(1) if len(argv) > 1 else "build/backyard-mcp"
    extra = []
    while len(argv) > 2 and argv[1] in ("--backend", "--runtime", "--image",
                                        "--python-new-sessions"):
        extra += [argv.pop(1), argv.pop(1)]
    if "docker" in extra and os.environ.get("BYD_DOCKER_TESTS") != "1":
        print("skipped: BYD_DOCKER_TESTS=1 is not set (no Docker engine set up for tests)")
        sys.exit(77)
    if "docker" in extra and "--image" not in extra:
        extra += ["--image", os.environ.get("BYD_DOCKER_IMAGE", "backyard-mcp/python:bookworm")]
    return binary, extra


def text(result):
    return result["content"][0]["text"]


class ServerCase(unittest.TestCase):
    """Tests that share one server: it serves a temporary workspace (mode 0777, for the
    sandbox's user) with `server_args()`, after `prepare(workspace)` has filled it; each test
    ends with a ping, and the class with the server's exit code checked. Subclasses set
    BINARY."""

    BINARY = None
    PREFIX = "byd-test-"

    @classmethod
    def server_args(cls):
        return ["--ruleset", "permissive"]

    @classmethod
    def prepare(cls, workspace):
        pass

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix=cls.PREFIX)
        os.chmod(cls.tmp.name, 0o777)
        cls.prepare(cls.tmp.name)
        cls.client = Client(cls.BINARY, "--root", cls.tmp.name, *cls.server_args())

    @classmethod
    def tearDownClass(cls):
        code = cls.client.close()
        cls.tmp.cleanup()
        assert code == 0, f"server exit code {code}"

    def tearDown(self):
        self.assertTrue(self.client.ping())


def http_exchange(port, method, body=None, sid=None, token=None, timeout=60):
    """One request to a Streamable HTTP endpoint at 127.0.0.1:`port`/mcp: (status, the session
    id it names, the JSON-RPC messages of its answer, whether one JSON body or an SSE stream,
    and the raw answer)."""
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    headers = {"Accept": "application/json, text/event-stream",
               "Content-Type": "application/json", "MCP-Protocol-Version": "2025-11-25"}
    if sid:
        headers["Mcp-Session-Id"] = sid
    if token:
        headers["Authorization"] = "Bearer " + token
    conn.request(method, "/mcp", json.dumps(body).encode() if body is not None else None, headers)
    resp = conn.getresponse()
    payload = resp.read().decode()
    conn.close()
    if payload.startswith("{"):
        messages = [json.loads(payload)]
    else:
        messages = [json.loads(line[5:]) for line in payload.splitlines()
                    if line.startswith("data:") and line[5:].strip()]
    return resp.status, resp.getheader("Mcp-Session-Id"), messages, payload
