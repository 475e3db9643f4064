"""End to end: the sandbox reaches the network only through the server's proxy, and only what
the ruleset's `network` rules allow. A local HTTP server on 127.0.0.2 stands for the internet
(no packet leaves the machine); it also serves a PEP 503 simple index of a wheel this test
builds, standing for PyPI (package_index.py). curl, pip and urllib reach an allowed HOST:PORT
through the proxy; another port is refused with a reason; a direct connection that ignores the proxy fails;
localhost and 127.0.0.1 are refused even under a rule that allows every target; and without a
rule that allows any target there is no proxy and no route.

Usage: network_test.py BINARY [--backend docker --runtime runc|runsc]
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mcp_client import Client, ElicitingClient, binary_and_backend, text  # noqa: E402
from package_index import PAGE, Index as Internet  # noqa: E402

BINARY, EXTRA = binary_and_backend(sys.argv)


class Network(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.net = Internet()
        cls.tmp = tempfile.TemporaryDirectory(prefix="byd-net-ws-")
        cls.root = os.path.join(cls.tmp.name, "ws")
        os.makedirs(cls.root)
        rules = {"extends": "permissive", "name": "net",
                 "network": {"rules": [
                     {"pattern": f"127.0.0.2:{cls.net.port}", "action": "allow"},
                     {"pattern": "*", "action": "allow"}]}}
        cls.rules = os.path.join(cls.tmp.name, "rules.json")
        with open(cls.rules, "w") as f:
            json.dump(rules, f)
        cls.client = Client(BINARY, "--root", cls.root, "--log-level", "info",
                            "--ruleset", cls.rules, *EXTRA)

    @classmethod
    def tearDownClass(cls):
        code = cls.client.close()
        cls.net.close()
        cls.tmp.cleanup()
        assert code == 0, f"server exit code {code}"
        # Every attempt is logged with target, decision and rule.
        assert f"network: allowed 127.0.0.2:{cls.net.port} (network rule 1" in cls.client.stderr
        assert "network: refused" in cls.client.stderr

    def tearDown(self):
        self.assertTrue(self.client.ping())

    def run_cmd(self, command):
        r = self.client.call("execute", command=command, timeout_s=60)
        return r, text(r)

    def test_curl_reaches_an_allowed_target_through_the_proxy(self):
        r, body = self.run_cmd(f"curl -sS http://127.0.0.2:{self.net.port}/")
        self.assertIn(PAGE, body)
        r, body = self.run_cmd(f"curl -sS -x socks5h://127.0.0.1:3128 "
                               f"http://127.0.0.2:{self.net.port}/")
        self.assertIn(PAGE, body)

    def test_python_urllib_reaches_it_from_execute_and_run_python(self):
        code = f"import urllib.request; print(urllib.request.urlopen('http://127.0.0.2:{self.net.port}/').read().decode())"
        r, body = self.run_cmd(f'python3 -c "{code}"')
        self.assertIn(PAGE, body)
        r = self.client.call("run_python", code=code)
        self.assertIn(PAGE, text(r))

    def test_pip_downloads_from_a_local_index_through_the_proxy(self):
        r, body = self.run_cmd(
            f"python3 -m pip download --no-deps --disable-pip-version-check -q -d /tmp/dl "
            f"--index-url http://127.0.0.2:{self.net.port}/simple/ tinypkg && echo /tmp/dl/*")
        self.assertIn(self.net.wheel, body)
        self.assertIn(f"/files/{self.net.wheel}", self.net.hits)

    def test_another_port_is_refused_with_a_reason(self):
        other = self.net.port + 1 if self.net.port < 65535 else self.net.port - 1
        r, body = self.run_cmd(f"curl -sS -i http://127.0.0.2:{other}/")
        self.assertIn("403", body)
        self.assertIn(f"network denied for 127.0.0.2:{other}", body)
        self.assertIn("127.0.0.2 is loopback, which only a rule naming that IP literal opens",
                      body)

    def test_a_direct_connection_that_ignores_the_proxy_fails(self):
        hits = len(self.net.hits)
        r, body = self.run_cmd(f"curl -sS --noproxy '*' -m 5 http://127.0.0.2:{self.net.port}/;"
                               " echo rc=$?")
        self.assertNotIn(PAGE, body)
        self.assertNotIn("rc=0", body)
        code = ("import socket\ns = socket.socket()\ns.settimeout(5)\n"
                f"print('connected' if s.connect_ex(('127.0.0.2', {self.net.port})) == 0 "
                "else 'no route')")
        self.assertIn("no route", text(self.client.call("run_python", code=code)))
        self.assertEqual(len(self.net.hits), hits)

    def test_localhost_and_loopback_are_refused_even_under_a_rule_for_everything(self):
        for host in ("localhost", "127.0.0.1", "[::1]"):
            with self.subTest(host=host):
                r, body = self.run_cmd(f"curl -sS -i --noproxy '' -x http://127.0.0.1:3128 "
                                       f"http://{host}:{self.net.port}/")
                self.assertIn("403", body)
                self.assertIn("is loopback", body)
                self.assertNotIn(PAGE, body)


class AskedNetwork(unittest.TestCase):
    """A target whose rule asks: the user is asked (by elicitation) while the call lasts, and
    the answer holds for the session."""

    def test_ask_then_the_answer_holds(self):
        net = Internet()
        with tempfile.TemporaryDirectory(prefix="byd-net-ws-") as tmp:
            root = os.path.join(tmp, "ws")
            os.makedirs(root)
            rules = os.path.join(tmp, "rules.json")
            with open(rules, "w") as f:
                json.dump({"extends": "permissive", "name": "asks", "network": {"rules": [
                    {"pattern": f"127.0.0.2:{net.port}", "action": "ask"}]}}, f)
            c = ElicitingClient(BINARY, "--root", root, "--log-level", "warn", "--ruleset", rules,
                                *EXTRA)
            try:
                fetch = f"curl -sS -i http://127.0.0.2:{net.port}/"
                c.answer = True
                body = text(c.call("execute", command=fetch + "; " + fetch, timeout_s=30))
                self.assertEqual(body.count(PAGE), 2, body)
                self.assertEqual(len(c.asked), 1)
                self.assertIn(f"execute wants to reach 127.0.0.2:{net.port}", c.asked[0])
                # The answer holds for the session: a later call, from Python, is not asked.
                code = ("import urllib.request; print(urllib.request.urlopen("
                        f"'http://127.0.0.2:{net.port}/').read().decode())")
                self.assertIn(PAGE, text(c.call("run_python", code=code)))
                self.assertEqual(len(c.asked), 1)
            finally:
                c.close()
            c = ElicitingClient(BINARY, "--root", root, "--log-level", "warn", "--ruleset", rules,
                                *EXTRA)
            try:
                c.answer = False
                for _ in range(2):
                    body = text(c.call("execute", command=fetch, timeout_s=30))
                    self.assertIn("403", body)
                    self.assertNotIn(PAGE, body)
                self.assertEqual(len(c.asked), 1)  # a no holds as well
            finally:
                c.close()
                net.close()


class KeptContainer(unittest.TestCase):
    """Docker: a kept container (--container-name) still reaches the proxy when a later server
    reattaches it (the directory bound into it stays; the new server listens there)."""

    def test_a_reattached_container_reaches_the_proxy(self):
        if "docker" not in EXTRA:
            self.skipTest("--container-name is the Docker backend's")
        net = Internet()
        name = f"byd-kept-net-{os.getpid()}"
        with tempfile.TemporaryDirectory(prefix="byd-net-ws-") as root:
            os.chmod(root, 0o755)
            rules = os.path.join(root, "rules.json")
            with open(rules, "w") as f:
                json.dump({"extends": "permissive", "name": "kept", "network": {"rules": [
                    {"pattern": f"127.0.0.2:{net.port}", "action": "allow"}]}}, f)
            try:
                for round in range(2):
                    c = Client(BINARY, "--root", root, "--log-level", "info", "--ruleset", rules,
                               "--container-name", name, *EXTRA)
                    try:
                        body = text(c.call("execute", timeout_s=60,
                                           command=f"curl -sS http://127.0.0.2:{net.port}/"))
                        self.assertIn(PAGE, body, f"round {round}")
                    finally:
                        c.close()
                    if round == 1:
                        self.assertIn("reattached container", c.stderr)
                        self.assertNotIn("without the relay", c.stderr)
            finally:
                subprocess.run(["docker", "rm", "-f", name], capture_output=True)
                net.close()


class NoNetwork(unittest.TestCase):
    """Without a rule that allows any target (every preset): no proxy, no variables, no route."""

    def test_no_proxy_and_no_route(self):
        net = Internet()
        with tempfile.TemporaryDirectory(prefix="byd-net-ws-") as root:
            os.chmod(root, 0o755)  # the container's user enters it
            c = Client(BINARY, "--root", root, "--log-level", "warn", "--ruleset", "permissive",
                       *EXTRA)
            try:
                r = c.call("execute", command="env | grep -ci proxy; "
                           f"curl -sS -m 5 http://127.0.0.2:{net.port}/; "
                           "curl -sS -m 5 -x http://127.0.0.1:3128 "
                           f"http://127.0.0.2:{net.port}/; echo done", timeout_s=30)
                body = text(r)
                self.assertIn("done", body)
                self.assertNotIn(PAGE, body)
                self.assertTrue(r["structuredContent"]["stdout"].startswith("0\n"), body)
            finally:
                c.close()
                net.close()
            self.assertEqual(net.hits, [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
