"""--placement kubernetes: an HTTP front that places an agent for each session through
agent-sandbox. No Kubernetes API server runs on this machine, so a small one stands in for it
here: it keeps SandboxClaims as the API server would (create with a generated name, watch,
list by label, delete) and reports each claim ready at once, its Sandbox's Service naming this
machine. The agent is a real backyard-mcp HTTP service. What is checked is the front's part:
a claim per session, labelled with it, the session's tools run on its agent with the agents'
token, the claim deleted when the session ends or the front stops, and the API server's
refusals named to the client while the front keeps serving.

usage: placement_test.py BINARY [unittest args]"""

import json
import os
import random
import re
import signal
import socket
import string
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import remote_test  # noqa: E402
from mcp_client import http_exchange  # noqa: E402

BINARY = None
NAMESPACE = "agents"
CLAIMS = f"/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/{NAMESPACE}/sandboxclaims"
SANDBOXES = f"/apis/agents.x-k8s.io/v1beta1/namespaces/{NAMESPACE}/sandboxes/"
PODS = f"/api/v1/namespaces/{NAMESPACE}/pods/"
API_TOKEN = "api-token-for-the-front"
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "placement-test", "version": "1"}}}


class FakeApi:
    """The API server's side for SandboxClaims and Sandboxes, on a free loopback port."""

    def __init__(self):
        self.claims = {}  # name -> claim object
        self.requests = []  # (method, path, Authorization)
        self.refuse_create = False
        self.patches = []  # (path, body, Content-Type)
        self.pods = set()  # the pods that live, by name
        self.modes = {}  # a Sandbox's operatingMode, by name, once patched
        self.version = 1
        self.lock = threading.Lock()
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def reply(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def handle_any(self, method):
                url = urllib.parse.urlsplit(self.path)
                query = urllib.parse.parse_qs(url.query)
                with api.lock:
                    api.requests.append((method, url.path, self.headers.get("Authorization")))
                if self.headers.get("Authorization") != "Bearer " + API_TOKEN:
                    return self.reply(401, status(401, "Unauthorized", "Unauthorized"))
                if method == "POST" and url.path == CLAIMS:
                    body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                    if api.refuse_create:
                        return self.reply(403, status(
                            403, "Forbidden", "sandboxclaims.extensions.agents.x-k8s.io is "
                            "forbidden: User \"system:serviceaccount:agents:front\" cannot "
                            "create resource \"sandboxclaims\""))
                    return self.reply(201, api.create(body))
                if method == "GET" and url.path == CLAIMS and "watch" in query:
                    name = query["fieldSelector"][0].removeprefix("metadata.name=")
                    with api.lock:
                        claim = api.claims.get(name)
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Connection", "close")
                    self.end_headers()
                    if claim is not None:
                        event = {"type": "MODIFIED", "object": api.ready(name)}
                        self.wfile.write(json.dumps(event).encode() + b"\n")
                    self.wfile.flush()
                    self.close_connection = True
                    return None
                if method == "GET" and url.path == CLAIMS:
                    label = query.get("labelSelector", [""])[0]
                    key, has, value = label.partition("=")
                    with api.lock:
                        items = [c for c in api.claims.values()
                                 if (c["metadata"]["labels"].get(key) == value if has
                                     else key in c["metadata"]["labels"])]
                    return self.reply(200, {"kind": "SandboxClaimList", "items": items,
                                            "metadata": {"resourceVersion": "1"}})
                if method == "GET" and url.path.startswith(PODS):
                    name = url.path[len(PODS):]
                    if name not in api.pods:
                        return self.reply(404, status(404, "NotFound",
                                                      f'pods "{name}" not found'))
                    return self.reply(200, {"apiVersion": "v1", "kind": "Pod",
                                            "metadata": {"name": name, "namespace": NAMESPACE}})
                if method == "GET" and url.path.startswith(SANDBOXES):
                    name = url.path[len(SANDBOXES):]
                    with api.lock:
                        known = name in api.claims
                    if not known:
                        return self.reply(404, status(404, "NotFound", f"{name} not found"))
                    return self.reply(200, {
                        "apiVersion": "agents.x-k8s.io/v1beta1", "kind": "Sandbox",
                        "metadata": {"name": name, "namespace": NAMESPACE},
                        "status": {"serviceFQDN": "127.0.0.1", "replicas": 1}})
                if method == "PATCH":
                    body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                    with api.lock:
                        api.patches.append((url.path, body,
                                            self.headers.get("Content-Type")))
                        if url.path.startswith(SANDBOXES):
                            name = url.path[len(SANDBOXES):]
                            api.modes[name] = body["spec"]["operatingMode"]
                            return self.reply(200, {"kind": "Sandbox", "metadata": {
                                "name": name}, "spec": body["spec"]})
                        claim = api.claims.get(url.path[len(CLAIMS) + 1:])
                        if claim is None:
                            return self.reply(404, status(404, "NotFound", "no claim"))
                        for field in ("labels", "annotations"):
                            for k, v in body["metadata"].get(field, {}).items():
                                if v is None:
                                    claim["metadata"].setdefault(field, {}).pop(k, None)
                                else:
                                    claim["metadata"].setdefault(field, {})[k] = v
                        return self.reply(200, claim)
                if method == "DELETE" and url.path.startswith(CLAIMS + "/"):
                    name = url.path[len(CLAIMS) + 1:]
                    with api.lock:
                        gone = api.claims.pop(name, None)
                    if gone is None:
                        return self.reply(404, status(404, "NotFound", f"{name} not found"))
                    return self.reply(200, status(200, "Success", ""))
                return self.reply(404, status(404, "NotFound", "no route " + url.path))

            def do_GET(self):
                self.handle_any("GET")

            def do_POST(self):
                self.handle_any("POST")

            def do_DELETE(self):
                self.handle_any("DELETE")

            def do_PATCH(self):
                self.handle_any("PATCH")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def create(self, body):
        with self.lock:
            name = body["metadata"]["generateName"] + "".join(
                random.choices(string.ascii_lowercase + string.digits, k=5))
            self.version += 1
            claim = {**body, "metadata": {**body["metadata"], "name": name,
                                          "namespace": NAMESPACE,
                                          "resourceVersion": str(self.version)}}
            claim["metadata"].pop("generateName")
            self.claims[name] = claim
            return claim

    def ready(self, name):
        with self.lock:
            self.version += 1
            claim = self.claims[name]
            claim["metadata"]["resourceVersion"] = str(self.version)
            claim["status"] = {
                "conditions": [{"type": "Ready", "status": "True", "reason": "SandboxReady",
                                "message": "", "lastTransitionTime": "2026-12-07T12:00:00Z"}],
                "sandbox": {"name": name}}
            return claim

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def status(code, reason, message):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure" if code >= 400 else "Success", "message": message,
            "reason": reason, "code": code}


def wait_for(predicate, why, timeout=30):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(why)
        time.sleep(0.05)


class Front:
    """backyard-mcp --placement kubernetes on a free loopback port."""

    def __init__(self, *args):
        self.proc = subprocess.Popen([BINARY, "--transport", "http", "--listen", "127.0.0.1:0",
                                      "--backend", "remote", "--placement", "kubernetes",
                                      "--log-level", "info", *args],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
        self.log = []
        while True:
            line = self.proc.stderr.readline()
            if not line:
                raise AssertionError("the front ended before it listened: " + "".join(self.log))
            self.log.append(line)
            match = re.search(r"http://127\.0\.0\.1:(\d+)/mcp", line)
            if match:
                self.port = int(match.group(1))
                break
        self.reader = threading.Thread(target=self.read_log, daemon=True)
        self.reader.start()

    def read_log(self):
        for line in self.proc.stderr:
            self.log.append(line)

    def request(self, method, body=None, sid=None):
        return http_exchange(self.port, method, body, sid)

    def open(self, named=None):
        init = json.loads(json.dumps(INIT))
        if named:
            init["params"]["_meta"] = {"io.backyard/session": named}
        code, sid, messages, payload = self.request("POST", init)
        assert code == 200 and sid, (code, payload)
        self.request("POST", {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
        return sid, messages[0]["result"]

    def call(self, sid, name, **arguments):
        _, _, messages, payload = self.request(
            "POST", {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                     "params": {"name": name, "arguments": arguments}}, sid)
        answer = [m for m in messages if m.get("id") == 7]
        assert answer, payload
        return answer[0]

    def api(self, method, path):
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}/api/{path}", method=method)
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(60)
        self.reader.join(10)
        return self.proc.returncode


class Placement(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="byd-placement-")
        self.addCleanup(self.tmp.cleanup)
        self.ws = os.path.join(self.tmp.name, "ws")
        os.mkdir(self.ws)
        self.agent_token = os.path.join(self.tmp.name, "agent-token")
        with open(self.agent_token, "w") as f:
            f.write(remote_test.TOKEN + "\n")
        self.api_token = os.path.join(self.tmp.name, "api-token")
        with open(self.api_token, "w") as f:
            f.write(API_TOKEN + "\n")
        remote_test.BINARY = BINARY
        self.agent = remote_test.Service(self.ws, self.agent_token, "--ruleset", "permissive")
        self.addCleanup(self.agent.stop)
        self.api = FakeApi()
        self.addCleanup(self.api.stop)

    def front(self, *extra):
        front = Front(*extra, "--kubernetes-api", f"http://127.0.0.1:{self.api.port}",
                      "--kubernetes-token-file", self.api_token,
                      "--kubernetes-namespace", NAMESPACE, "--kubernetes-warm-pool", "pool-a",
                      "--agent-port", str(self.agent.port),
                      "--agent-token-file", self.agent_token)
        self.addCleanup(front.stop)
        return front

    def test_each_session_gets_a_claim_of_its_own_and_gives_it_back_when_it_ends(self):
        front = self.front()
        self.assertEqual(self.api.claims, {}, "nothing is claimed before a session begins")
        first, init = front.open()
        self.assertIn("sandbox of your own", init["instructions"])
        second, _ = front.open()
        self.assertEqual(len(self.api.claims), 2)
        labels = [c["metadata"]["labels"] for c in self.api.claims.values()]
        self.assertTrue(all(lb["app.kubernetes.io/managed-by"] == "backyard-mcp" for lb in labels))
        self.assertEqual(len({lb["backyard-mcp/session"] for lb in labels}), 2, labels)
        specs = [c["spec"] for c in self.api.claims.values()]
        self.assertEqual(specs, [{"warmPoolRef": {"name": "pool-a"}}] * 2)
        self.assertTrue(all(auth == "Bearer " + API_TOKEN for _, _, auth in self.api.requests))

        # The session's tools are its agent's, and run in the agent's workspace.
        _, _, listed, _ = front.request("POST", {"jsonrpc": "2.0", "id": 3,
                                                 "method": "tools/list"}, first)
        names = [t["name"] for t in listed[0]["result"]["tools"]]
        self.assertIn("execute", names)
        self.assertIn("run_python", names)
        wrote = front.call(first, "write_file", path="from-front.txt", content="placed\n")
        self.assertFalse(wrote["result"].get("isError"), wrote)
        with open(os.path.join(self.ws, "from-front.txt")) as f:
            self.assertEqual(f.read(), "placed\n")
        ran = front.call(second, "execute", command="cat from-front.txt; echo $((6 * 7))")
        self.assertEqual(ran["result"]["structuredContent"]["stdout"], "placed\n42\n")

        # Ending a session deletes its claim, and only its.
        names_before = set(self.api.claims)
        code, _, _, _ = front.request("DELETE", sid=first)
        self.assertEqual(code, 200)
        self.assertEqual(len(self.api.claims), 1)
        deleted = [p.rsplit("/", 1)[1] for m, p, _ in self.api.requests if m == "DELETE"]
        self.assertEqual(len(deleted), 1)
        self.assertIn(deleted[0], names_before)
        again = front.call(second, "execute", command="echo still")
        self.assertEqual(again["result"]["structuredContent"]["stdout"], "still\n")

        # A front that stops gives back every claim it holds.
        self.assertEqual(front.stop(), 0)
        self.assertEqual(self.api.claims, {}, "".join(front.log))
        for name in names_before:
            self.assertTrue(any(f"{name} removed" in line for line in front.log), name)

    def test_a_named_sessions_claim_is_suspended_resumed_and_purged(self):
        front = self.front("--session-idle", "1", "--kubernetes-workspace-size", "2Gi")
        sid, _ = front.open(named="work")
        (name, claim), = self.api.claims.items()
        self.assertEqual(claim["metadata"]["annotations"]["backyard-mcp/name"], "work")
        template, = claim["spec"]["volumeClaimTemplates"]
        self.assertEqual(template["metadata"]["name"], "workspace")
        self.assertEqual(template["spec"]["resources"]["requests"]["storage"], "2Gi")
        ran = front.call(sid, "execute", command="echo named")
        self.assertEqual(ran["result"]["structuredContent"]["stdout"], "named\n")
        # Left, then ended after --session-idle: its Sandbox suspended, its claim kept.
        self.assertEqual(front.request("DELETE", sid=sid)[0], 200)
        wait_for(lambda: self.api.modes.get(name) == "Suspended", "".join(front.log))
        self.assertIn(name, self.api.claims)
        self.assertIn("backyard-mcp/closed", self.api.claims[name]["metadata"]["annotations"])
        self.assertTrue(all(t == "application/merge-patch+json" for _, _, t in self.api.patches))
        # The next session of that name resumes it.
        sid, _ = front.open(named="work")
        self.assertEqual(list(self.api.claims), [name])
        self.assertEqual(self.api.modes[name], "Running")
        self.assertNotIn("backyard-mcp/closed", self.api.claims[name]["metadata"]["annotations"])
        ran = front.call(sid, "execute", command="echo again")
        self.assertEqual(ran["result"]["structuredContent"]["stdout"], "again\n")
        # Purged: the claim is deleted (its Sandbox and PVC with it).
        code, answer = front.api("DELETE", "sessions/work")
        self.assertEqual((code, answer), (200, {"purged": "work"}), "".join(front.log))
        self.assertEqual(self.api.claims, {})

    def test_a_named_sessions_claim_closed_for_the_ttl_is_deleted(self):
        front = self.front("--session-idle", "1", "--workspace-ttl", "2")
        sid, _ = front.open(named="brief")
        (name, _), = self.api.claims.items()
        self.assertEqual(front.request("DELETE", sid=sid)[0], 200)
        wait_for(lambda: self.api.modes.get(name) == "Suspended", "".join(front.log))
        closed = time.monotonic()
        wait_for(lambda: name not in self.api.claims, "".join(front.log))
        self.assertGreaterEqual(time.monotonic() - closed, 0.9)
        self.assertTrue(any("session 'brief' of tenant 'default', unopened for --workspace-ttl"
                            in line for line in front.log), "".join(front.log))

    def test_a_starting_front_deletes_the_claims_of_fronts_that_are_gone(self):
        # Claims left by an earlier run of this front (its host name, a pod's name in a pod),
        # by a front whose pod is gone and by one whose pod lives.
        host = socket.gethostname()
        self.api.pods.add("front-live")
        for name, front in (("byd-own00", host), ("byd-gone0", "front-gone"),
                            ("byd-live0", "front-live")):
            self.api.create({"metadata": {"generateName": "x", "labels": {
                "app.kubernetes.io/managed-by": "backyard-mcp", "backyard-mcp/session": name,
                "backyard-mcp/front": front}}, "spec": {"warmPoolRef": {"name": "pool-a"}}})
        front = self.front()
        left = {c["metadata"]["labels"]["backyard-mcp/front"] for c in self.api.claims.values()}
        self.assertEqual(left, {"front-live"}, "".join(front.log))
        self.assertTrue(any("front front-gone, which is gone" in line for line in front.log))
        # Its own claims carry its name.
        front.open()
        made = [c for c in self.api.claims.values()
                if c["metadata"]["labels"]["backyard-mcp/front"] != "front-live"]
        self.assertEqual([c["metadata"]["labels"]["backyard-mcp/front"] for c in made], [host])

    def test_a_claim_the_api_server_refuses_is_named_and_the_front_serves_on(self):
        front = self.front()
        self.api.refuse_create = True
        code, sid, messages, payload = front.request("POST", INIT)
        # The client learns that its session could not start; the operator's log, why.
        self.assertEqual(code, 500, payload)
        self.assertIsNone(sid)
        self.assertIn("cannot start a session", payload)
        self.assertNotIn("serviceaccount", payload)
        deadline = time.monotonic() + 10
        while not any("refused to create a SandboxClaim in namespace agents" in line
                      for line in front.log):
            self.assertLess(time.monotonic(), deadline, "".join(front.log))
            time.sleep(0.05)
        logged = next(line for line in front.log if "SandboxClaim" in line)
        self.assertIn("HTTP 403", logged)
        self.assertIn("front's service account needs the Role", logged)
        self.assertEqual(self.api.claims, {})
        self.api.refuse_create = False
        sid, _ = front.open()
        ran = front.call(sid, "execute", command="echo after")
        self.assertEqual(ran["result"]["structuredContent"]["stdout"], "after\n")


class PlacementSettings(unittest.TestCase):
    def refused(self, *args):
        r = subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=30,
                           stdin=subprocess.DEVNULL)
        self.assertEqual(r.returncode, 2, r.stderr)
        return r.stderr

    def test_mistakes_are_named(self):
        with tempfile.NamedTemporaryFile("w", suffix=".token") as token:
            token.write("agent-token-0123456789\n")
            token.flush()
            http = ["--transport", "http", "--listen", "127.0.0.1:0"]
            self.assertIn("--placement kubernetes needs --backend remote",
                          self.refused(*http, "--placement", "kubernetes",
                                       "--agent-token-file", token.name))
            self.assertIn("needs --transport http",
                          self.refused("--backend", "remote", "--placement", "kubernetes",
                                       "--agent-token-file", token.name))
            self.assertIn("give one of them",
                          self.refused(*http, "--backend", "remote", "--placement", "kubernetes",
                                       "--remote-url", "http://127.0.0.1:9/mcp",
                                       "--agent-token-file", token.name))
            self.assertIn("needs --agent-token-file",
                          self.refused(*http, "--backend", "remote", "--placement", "kubernetes"))
            self.assertIn("--agent-port needs --placement",
                          self.refused(*http, "--agent-port", "9000"))
            self.assertIn("--kubernetes-token-file needs --kubernetes-api",
                          self.refused(*http, "--backend", "remote", "--placement", "kubernetes",
                                       "--agent-token-file", token.name,
                                       "--kubernetes-token-file", token.name))
            self.assertIn("--persist-containers does not apply to --placement",
                          self.refused(*http, "--backend", "remote", "--placement", "kubernetes",
                                       "--agent-token-file", token.name,
                                       "--persist-containers"))
            # Runtimes: a Swarm front's agents run an image every node has, under their own
            # rules; a Kubernetes front's sandboxes are its warm pool's template.
            swarm = [*http, "--backend", "remote", "--placement", "docker-swarm",
                     "--agent-token-file", token.name]
            for runtime, expected in (
                    ({"base_image": "debian:12"},
                     "runtime 'r': --placement docker-swarm runs an \"image\" every node has"),
                    ({"image": "agent:1", "network": {"default": "deny"}},
                     "runtime 'r': network: a Swarm session's agent judges its network by its "
                     "own ruleset")):
                with tempfile.NamedTemporaryFile("w", suffix=".json") as runtimes:
                    json.dump({"r": runtime}, runtimes)
                    runtimes.flush()
                    self.assertIn(expected, self.refused(*swarm, "--runtimes", runtimes.name))
                    self.assertIn("they need --backend docker or --placement docker-swarm",
                                  self.refused(*http, "--backend", "remote", "--placement",
                                               "kubernetes", "--agent-token-file", token.name,
                                               "--runtimes", runtimes.name))
            self.assertIn("--kubernetes-workspace-size '1 GB' is no storage quantity",
                          self.refused(*http, "--backend", "remote", "--placement", "kubernetes",
                                       "--agent-token-file", token.name,
                                       "--kubernetes-workspace-size", "1 GB"))
            # Outside a pod, with no API server named, the front says what is missing.
            env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
            r = subprocess.run([BINARY, *http, "--backend", "remote", "--placement", "kubernetes",
                                "--agent-token-file", token.name], capture_output=True,
                               text=True, timeout=30, env=env, stdin=subprocess.DEVNULL)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("not in a Kubernetes pod", r.stderr)


if __name__ == "__main__":
    BINARY = sys.argv.pop(1)
    unittest.main()
