#!/usr/bin/python3
"""Runtimes (--runtimes) against the real binary and a real Docker engine, over HTTP: a session
asks for one by name (`_meta` "io.backyard/runtime" or ?runtime=); one built from a base image
and packages (Debian's, and pip's from a local index standing for PyPI) is built once through
the engine's build endpoint, streaming its progress to the call that waited for it, and reused
by the next session; its limits and network rules hold in its sessions; an unknown runtime, or
one its tenant may not use, is refused naming those it may; a failed build says why in its
last lines. Then every runtime of examples/runtimes.json is built and checked.

usage: runtimes_test.py BINARY [unittest args]
Needs BYD_DOCKER_TESTS=1 (else skipped, exit 77) and the local image
backyard-mcp/python:bookworm (scripts/docker-setup)."""

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import unittest
import urllib.parse

import http_test
from http_test import INIT, sse_messages
from operations_test import metric_samples, sample
from package_index import PAGE, Index
from tenants_test import LoggedServer

BASE = os.environ.get("BYD_DOCKER_IMAGE", "backyard-mcp/python:bookworm")
SOCKET = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock").removeprefix("unix://")
EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                        "runtimes.json")
ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-fedcba9876543210xyz"


def engine(method, path):
    out = subprocess.run(["curl", "-s", "--unix-socket", SOCKET, "-X", method,
                          "http://localhost" + path], capture_output=True, text=True,
                         timeout=120).stdout
    return json.loads(out) if out.strip() else None


def runtime_images(name):
    flt = urllib.parse.quote(json.dumps({"label": [f"io.backyard-mcp.runtime={name}"]}))
    return engine("GET", "/images/json?filters=" + flt) or []


def bearer(token):
    return {"Authorization": "Bearer " + token}


class Service:
    """A server with `runtimes` and two tenants (alice may use `alice_may`; bob every one)."""

    def __init__(self, test, runtimes, alice_may=None, *args):
        self.tmp = tempfile.TemporaryDirectory(prefix="byd-runtimes-")
        test.addCleanup(self.tmp.cleanup)
        root = os.path.join(self.tmp.name, "root")
        spaces = os.path.join(self.tmp.name, "spaces")
        os.mkdir(root)
        os.mkdir(spaces)
        runtimes_file = os.path.join(self.tmp.name, "runtimes.json")
        with open(runtimes_file, "w") as f:
            json.dump(runtimes, f)
        alice = {"name": "alice"}
        if alice_may is not None:
            alice["runtimes"] = alice_may
        tokens = os.path.join(self.tmp.name, "tokens.json")
        with open(tokens, "w") as f:
            json.dump({ALICE: alice, BOB: {"name": "bob"}}, f)
        os.chmod(tokens, 0o600)
        self.server = LoggedServer(root, "--backend", "docker", "--image", BASE, "--runtime",
                                   "runc", "--workspace-root", spaces, "--tokens-file", tokens,
                                   "--runtimes", runtimes_file, *args, log_level="info")
        test.addCleanup(self.server.stop)
        self.test = test

    def open(self, token, runtime=None, query=None, expect=200):
        init = json.loads(json.dumps(INIT))
        if runtime is not None:
            init["params"]["_meta"] = {"io.backyard/runtime": runtime}
        path = "/mcp" + ("?runtime=" + query if query is not None else "")
        status, h, body = self.server.request("POST", path, body=init, headers=bearer(token))
        self.test.assertEqual(status, expect, body)
        if expect != 200:
            return json.loads(body)["error"]["message"]
        self.instructions = json.loads(body)["result"]["instructions"]
        return h["mcp-session-id"]

    def call(self, sid, token, name, arguments, timeout=900):
        """(result, progress messages) of a call that asks for progress."""
        status, _, body = self.server.request(
            "POST", body={"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                          "params": {"name": name, "arguments": arguments,
                                     "_meta": {"progressToken": "p"}}},
            headers={"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-06-18",
                     **bearer(token)}, timeout=timeout)
        self.test.assertEqual(status, 200, body)
        messages = sse_messages(body) if body.startswith(b"event:") or body.startswith(
            b"id:") or body.startswith(b"data:") else [json.loads(body)]
        progress = [m["params"].get("message", "") for m in messages
                    if m.get("method") == "notifications/progress"]
        return [m for m in messages if m.get("id") == 7][0]["result"], progress

    def sh(self, sid, token, command, **kw):
        result, progress = self.call(sid, token, "execute", {"command": command, **kw})
        return result, progress

    def builds(self, runtime):
        """/metrics' count of `runtime`'s builds by outcome, and of its timed builds."""
        status, _, body = self.server.request("GET", "/metrics")
        self.test.assertEqual(status, 200, body)
        m = metric_samples(body.decode())
        counts = {outcome: sample(m, "byd_runtime_builds_total", runtime=runtime,
                                  outcome=outcome) or 0 for outcome in ("ok", "error")}
        timed = sample(m, "byd_runtime_build_duration_seconds_count", runtime=runtime) or 0
        return counts, timed


def tiny_runtime(index, **extra):
    return {"description": "jq and tinypkg", "base_image": BASE,
            "packages": {"apt": ["jq"], "pip": ["tinypkg==1.0"]},
            "pip_index_url": index.url + "/", **extra}


class RuntimesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.index = Index()

    @classmethod
    def tearDownClass(cls):
        cls.index.close()

    def test_asking_for_a_runtime_one_may_not_use_names_those_one_may(self):
        service = Service(self, {"tiny": tiny_runtime(self.index),
                                 "plain": {"image": BASE}}, ["plain"])
        message = service.open(ALICE, "tiny", expect=400)
        self.assertEqual(message, "runtime 'tiny' is not one tenant 'alice' may use; it may use: "
                                  "plain")
        message = service.open(ALICE, query="nosuch", expect=400)
        self.assertEqual(message, "unknown runtime 'nosuch'; runtimes you may use: plain")
        message = service.open(BOB, "nosuch", expect=400)
        self.assertEqual(message, "unknown runtime 'nosuch'; runtimes you may use: plain, tiny")
        message = service.open(BOB, "../x", expect=400)
        self.assertIn('_meta "io.backyard/runtime": a runtime name is 1 to 64', message)
        # Alice asking for none gets the first she may use.
        sid = service.open(ALICE)
        self.assertIn("It runs the runtime 'plain'", service.instructions)
        result, _ = service.sh(sid, ALICE, "echo hi")
        self.assertEqual(result["structuredContent"]["stdout"], "hi\n")
        # The server still serves.
        self.assertEqual(service.server.request("GET", "/healthz")[0], 200)

    def test_a_runtime_is_built_once_streaming_its_progress_then_reused(self):
        spec = tiny_runtime(self.index, limits={"container_memory": 200 * 1024 * 1024,
                                                "max_timeout_s": 40})
        for image in runtime_images("tiny"):
            engine("DELETE", "/images/" + image["Id"] + "?force=true")
        service = Service(self, {"tiny": spec})
        sid = service.open(BOB, "tiny")
        self.assertIn("It runs the runtime 'tiny': jq and tinypkg.", service.instructions)
        # Nothing is built before it is used.
        self.assertEqual(runtime_images("tiny"), [])
        result, progress = service.sh(
            sid, BOB, "jq --version; python3 -c 'import tinypkg; print(tinypkg.VALUE)'")
        self.assertFalse(result.get("isError"), result)
        out = result["structuredContent"]["stdout"].split()
        self.assertEqual(out[0][:3], "jq-")
        self.assertEqual(out[1:], ["42"])
        self.assertTrue(progress, "the build sent no progress")
        self.assertTrue(any("Step" in p or "apt" in p or "pip" in p for p in progress), progress)
        images = runtime_images("tiny")
        self.assertEqual(len(images), 1)
        # Its containers have its memory.
        flt = urllib.parse.quote(json.dumps({"ancestor": [images[0]["Id"]]}))
        made = engine("GET", "/containers/json?filters=" + flt)
        self.assertTrue(made)
        for c in made:
            self.assertEqual(engine("GET", f"/containers/{c['Id']}/json")["HostConfig"]["Memory"],
                             200 * 1024 * 1024)
        self.assertTrue(images[0]["RepoTags"][0].startswith("backyard-runtime/tiny:"), images)
        self.assertTrue(any("/files/tinypkg" in h for h in self.index.hits))
        # The runtime's ceiling of a timeout.
        result, _ = service.sh(sid, BOB, "true", timeout_s=41)
        self.assertTrue(result.get("isError"), result)
        self.assertIn("above the limit of 40 s (the max_timeout_s of runtime tiny)",
                      result["content"][0]["text"])
        # A second session (by the URL's parameter) and Python: no build, the same image.
        again = service.open(ALICE, query="tiny")
        result, progress = service.call(again, ALICE, "run_python",
                                        {"code": "import tinypkg; tinypkg.VALUE + 1"})
        self.assertEqual(result["structuredContent"]["result"], "43", result)
        self.assertEqual(progress, [])
        self.assertEqual([i["Id"] for i in runtime_images("tiny")], [images[0]["Id"]])
        built = [line for line in service.server.log if "building runtime 'tiny'" in line]
        self.assertEqual(len(built), 1, built)
        self.assertEqual(service.builds("tiny"), ({"ok": 1, "error": 0}, 1))
        # A server started again finds the image too.
        service2 = Service(self, {"tiny": spec})
        sid = service2.open(BOB, "tiny")
        result, progress = service2.sh(sid, BOB, "jq -n 1")
        self.assertEqual(result["structuredContent"]["stdout"], "1\n")
        self.assertFalse([line for line in service2.server.log if "building runtime" in line])
        self.assertEqual(service2.builds("tiny"), ({"ok": 0, "error": 0}, 0))

    def test_a_failed_build_says_why_in_its_last_lines(self):
        service = Service(self, {"broken": {"base_image": BASE,
                                            "packages": {"apt": ["nosuch-package-xyz"]}}})
        sid = service.open(BOB, "broken")
        result, _ = service.sh(sid, BOB, "true")
        self.assertTrue(result.get("isError"), result)
        text = result["content"][0]["text"]
        self.assertIn("runtime 'broken': the build of backyard-runtime/broken:", text)
        self.assertIn("Unable to locate package nosuch-package-xyz", text)
        self.assertEqual(runtime_images("broken"), [])
        self.assertEqual(service.builds("broken"), ({"ok": 0, "error": 1}, 1))
        # The session and the server live on.
        result, _ = service.call(sid, BOB, "ls", {})
        self.assertFalse(result.get("isError"), result)

    def test_a_runtimes_network_rules_hold_in_its_sessions(self):
        page = f"http://127.0.0.2:{self.index.port}/"
        rule = {"default": "deny",
                "rules": [{"pattern": f"127.0.0.2:{self.index.port}", "action": "allow"}]}
        service = Service(self, {"online": {"image": BASE, "network": rule},
                                 "offline": {"image": BASE}})
        fetch = ("python3 -c \"import urllib.request as u; "
                 f"print(u.urlopen('{page}', timeout=10).read().decode())\"")
        online = service.open(BOB, "online")
        result, _ = service.sh(online, BOB, fetch)
        self.assertEqual(result["structuredContent"]["stdout"], PAGE + "\n", result)
        offline = service.open(BOB, "offline")
        result, _ = service.sh(offline, BOB, fetch)
        self.assertNotEqual(result["structuredContent"]["exit_code"], 0, result)
        self.assertNotIn(PAGE, result["structuredContent"]["stdout"])


class ExampleRuntimes(unittest.TestCase):
    """Each runtime of examples/runtimes.json, built from the local base image (once: the
    images are kept under their recipes' digests) and checked for what it promises."""

    CHECKS = {
        "python-minimal": ("python3 -c 'import sys; print(sys.version_info[0])'", "3"),
        "python-datascience": (
            "python3 -c 'import numpy, pandas, matplotlib, sklearn; "
            "print(int(pandas.DataFrame({\"a\": numpy.arange(4)}).a.sum()))'", "6"),
        "python-web": ("python3 -c 'import fastapi, httpx, sqlalchemy, uvicorn; print(1)'", "1"),
        "node-minimal": ("node -e 'console.log(6 * 7)'", "42"),
        "node-typescript": ("printf 'const x: number = 42; console.log(x)' > /tmp/a.ts && "
                            "tsc --outDir /tmp /tmp/a.ts && node /tmp/a.js", "42"),
    }

    def test_each_example_runtime_builds_and_runs(self):
        with open(EXAMPLES) as f:
            runtimes = json.load(f)
        self.assertEqual(sorted(runtimes), sorted(self.CHECKS))
        service = Service(self, {name: {**spec, "base_image": BASE}
                                 for name, spec in runtimes.items()})
        for name, (command, expected) in self.CHECKS.items():
            with self.subTest(runtime=name):
                sid = service.open(BOB, name)
                result, _ = service.sh(sid, BOB, command, timeout_s=300)
                self.assertFalse(result.get("isError"), result)
                self.assertEqual(result["structuredContent"]["stdout"].strip(), expected, result)


if __name__ == "__main__":
    http_test.BINARY = os.path.abspath(sys.argv.pop(1))
    if os.environ.get("BYD_DOCKER_TESTS") != "1":
        print("skipped: BYD_DOCKER_TESTS=1 is not set (no Docker engine set up for tests)")
        sys.exit(77)
    unittest.main(verbosity=2)
