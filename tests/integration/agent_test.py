#!/usr/bin/python3
"""backyard-mcp as the agent inside a container (deploy/agent/Dockerfile), as a Swarm service or
a Kubernetes pod runs it: the image built here from the binary under test, the container run as
the Kubernetes manifests run it (read-only root, no capabilities, no new privileges, a non-root
user, the workspace and /tmp on tmpfs), and a front over stdio (--backend remote) driving it
with its token. Checks that it runs without a nested sandbox and says so, that the file tools,
execute and stateful run_python work through the front, that a timed-out cell leaves nothing
running and the session's state stays, that what needs the sandbox is refused by name, and
that a front that reaches it by a name it does not accept is told which setting to change.
Under runc: the engine's gVisor here has no network (--network=none), so nothing reaches a
port inside it.

usage: agent_test.py BINARY [unittest args]
Needs BYD_DOCKER_TESTS=1 (the test command sets the engine up and sets it) and a Release
binary (the image holds the binary alone, not a sanitizer's runtime); otherwise it reports
itself skipped (exit 77)."""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mcp_client import Client, text  # noqa: E402

BINARY = None
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOKEN = "agent-test-token-0123456789abcdef"
AGENT_UID = 65532
LABEL = "io.backyard-mcp.test=agent"
SERVER_IMAGE = "backyard-mcp/server:agent-test"
AGENT_IMAGE = "backyard-mcp/agent:test"


def docker(*args, check=True, timeout=300):
    r = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError(f"docker {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout.strip()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build_images():
    """The server's image with this binary, and the agent's on it (their apt layers cached)."""
    ctx = tempfile.mkdtemp(prefix="byd-agent-ctx-")
    try:
        shutil.copy(BINARY, os.path.join(ctx, "backyard-mcp"))
        docker("build", "-q", "--network", "host", "-t", SERVER_IMAGE, "-f",
               os.path.join(ROOT, "examples/compose/server.Dockerfile"), ctx, timeout=900)
        docker("build", "-q", "--build-arg", f"BASE={SERVER_IMAGE}", "-t", AGENT_IMAGE, "-f",
               os.path.join(ROOT, "deploy/agent/Dockerfile"), os.path.join(ROOT, "deploy/agent"))
    finally:
        shutil.rmtree(ctx)


class Agent:
    """One agent container, published on a loopback port of this machine. With `same_port`
    it listens on the port it is reached by (the name and port a front uses must be ones it
    accepts); without, on 8080 behind another port."""

    def __init__(self, same_port=True):
        self.port = free_port()
        listen = self.port if same_port else 8080
        self.id = docker(
            "run", "-d", "--label", LABEL, "--runtime", "runc",
            "--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
            "--user", f"{AGENT_UID}:{AGENT_UID}", "--memory", "512m", "--pids-limit", "256",
            "--tmpfs", f"/workspace:uid={AGENT_UID},gid={AGENT_UID},mode=0700",
            "--tmpfs", "/tmp:mode=1777",
            "-e", f"BACKYARD_TOKEN={TOKEN}", "-e", f"BACKYARD_LISTEN=0.0.0.0:{listen}",
            "-p", f"127.0.0.1:{self.port}:{listen}", AGENT_IMAGE)
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=2):
                    break
            except urllib.error.HTTPError:
                break  # an answer (a name it does not accept): it listens
            except OSError:
                if time.monotonic() > deadline:
                    raise AssertionError("the agent did not answer /healthz: " + self.logs())
                time.sleep(0.2)

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}/mcp"

    def logs(self):
        r = subprocess.run(["docker", "logs", self.id], capture_output=True, text=True)
        return r.stdout + r.stderr

    def processes(self):
        return docker("top", self.id, "-eo", "pid,args")

    def remove(self):
        docker("rm", "-f", self.id, check=False)


class AgentCase(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.token_file = os.path.join(cls.tmp.name, "token")
        with open(cls.token_file, "w") as f:
            f.write(TOKEN + "\n")
        os.chmod(cls.token_file, 0o600)
        cls.addClassCleanup(cls.tmp.cleanup)
        cls.agent = Agent()
        cls.addClassCleanup(cls.agent.remove)

    def front(self, agent=None):
        client = Client(BINARY, "--backend", "remote", "--remote-url", (agent or self.agent).url,
                        "--token-file", self.token_file, "--log-level", "warn")
        self.addCleanup(lambda: client.proc.poll() is not None or client.close())
        return client


class AgentInAContainer(AgentCase):
    def test_it_runs_without_a_nested_sandbox_and_says_so(self):
        logs = self.agent.logs()
        self.assertIn("--sandbox container", logs)
        self.assertIn("the container this server runs in (/.dockerenv) is the boundary", logs)
        self.assertIn("run_python", logs)  # offered: its tools are in the start-up line
        self.assertNotIn(TOKEN, logs)
        # No bubblewrap, no helper: the agent's own processes only.
        self.assertNotIn("bwrap", self.agent.processes())

    def test_files_commands_and_python_go_through_the_front(self):
        client = self.front()
        wrote = client.call("write_file", path="notes/a.txt", content="from the front\n")
        self.assertFalse(wrote.get("isError"), text(wrote))
        ran = client.call("execute", command="id -u; cat notes/a.txt; pwd")
        self.assertFalse(ran.get("isError"), text(ran))
        self.assertEqual(ran["structuredContent"]["stdout"],
                         f"{AGENT_UID}\nfrom the front\n/workspace\n")
        # What a command wrote, the file tools read.
        client.call("execute", command="printf 'made here\\n' > made.txt")
        self.assertEqual(client.call("read_file", path="made.txt")["structuredContent"]["content"],
                         "made here\n")
        # Python keeps its state between calls, in the container's workspace.
        first = client.call("run_python", code="import os\nn = 41\nos.getcwd()")
        self.assertEqual(first["structuredContent"]["result"], "'/workspace'", text(first))
        again = client.call("run_python", code="n + 1")
        self.assertEqual(again["structuredContent"]["result"], "42", text(again))
        self.assertEqual(client.close(), 0)

    def test_a_timed_out_cell_leaves_nothing_running_and_the_session_lives(self):
        client = self.front()
        client.call("run_python", session="slow", code="kept = 'yes'")
        slow = client.call("run_python", session="slow", timeout_s=1,
                           code="import subprocess, time\n"
                                "subprocess.Popen(['sleep', '7777'])\n"
                                "time.sleep(60)")
        self.assertTrue(slow.get("isError") or slow["structuredContent"].get("timed_out"),
                        text(slow))
        deadline = time.monotonic() + 10
        while "sleep 7777" in self.agent.processes() and time.monotonic() < deadline:
            time.sleep(0.2)
        self.assertNotIn("sleep 7777", self.agent.processes())
        after = client.call("run_python", session="slow", code="kept")
        self.assertEqual(after["structuredContent"]["result"], "'yes'", text(after))

    def test_what_needs_the_sandbox_is_refused_by_name(self):
        client = self.front()
        isolated = client.call("run_python", code="1", isolated=True)
        self.assertTrue(isolated.get("isError"))
        self.assertIn("an isolated run needs the sandbox (--sandbox bwrap); under --sandbox "
                      "container run_python has named sessions only", text(isolated))
        client.call("run_python", session="base", code="x = 1")
        forked = client.call("run_python", session="copy", fork_from="base", code="x")
        self.assertTrue(forked.get("isError"))
        self.assertIn("forking a session needs the sandbox", text(forked))
        self.assertTrue(client.ping())


class AgentReachedByAnotherName(AgentCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.behind = Agent(same_port=False)
        cls.addClassCleanup(cls.behind.remove)

    def test_the_front_is_told_which_setting_to_change(self):
        client = self.front(self.behind)
        refused = client.call("read_file", path="a.txt")
        self.assertTrue(refused["isError"])
        self.assertIn("refused the host name it was reached by (HTTP 403: Host not allowed): "
                      "start it with --allow-host", text(refused))
        self.assertNotIn("token", text(refused).split("(")[0])


def skip_unless_images_can_be_built():
    """Exits 77 (skipped) without an engine set up for tests, or for a sanitizer build."""
    if os.environ.get("BYD_DOCKER_TESTS") != "1":
        print("skipped: no Docker engine set up for tests (BYD_DOCKER_TESTS=1 is not set)")
        sys.exit(77)
    if "libasan" in subprocess.run(["ldd", BINARY], capture_output=True, text=True).stdout:
        print("skipped: a sanitizer build (the image holds a Release binary; its run covers this)")
        sys.exit(77)


def main():
    global BINARY
    BINARY = os.path.realpath(sys.argv.pop(1))
    skip_unless_images_can_be_built()
    build_images()
    program = unittest.main(exit=False, verbosity=2)
    left = docker("ps", "-aq", "--filter", "label=" + LABEL)
    if left:
        print("containers left behind: " + left)
        sys.exit(1)
    sys.exit(0 if program.result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
