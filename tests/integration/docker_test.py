#!/usr/bin/python3
"""The Docker backend against the real binary and a real engine: the tools inside a container,
its hardening, resource attacks with the server answering ping throughout, isolation of HTTP
sessions, cleanup, a named container that outlives the server, and an engine that cannot be
reached. Runs once per runtime given (runc, runsc).

usage: [DOCKER_HOST=unix:///PATH] docker_test.py BINARY [--podman] [--runtime runc|runsc]...
       [unittest args]
With --podman, against Podman's Docker-compatible service at BYD_PODMAN_SOCKET (default
/run/podman/podman.sock); it needs BYD_PODMAN_TESTS=1, set by the test command once the service
runs.
Needs BYD_DOCKER_TESTS=1 (the test command sets the engine up and sets it); without it the
test reports itself skipped (exit 77), since there is no engine to test against."""

import hashlib
import http.client
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sandbox_privileges_test import (COMMAND_ATTACKS, PYTHON_ATTACKS, evil_tar,  # noqa: E402
                                     setid_files)

BINARY = None
RUNTIME = "runc"
IMAGE = os.environ.get("BYD_DOCKER_IMAGE", "backyard-mcp/python:bookworm")
SANDBOX_UID = 65533  # the container's user by default: a uid that owns nothing of the host's
# The slowest ping allowed while an attack runs beside the server. On two cores the attack
# takes every cycle it can; a server built with AddressSanitizer (scripts/test sets
# ASAN_OPTIONS for that build) does two to three times the work per ping.
PING_LIMIT_MS = 250 if "ASAN_OPTIONS" not in os.environ else 500
# The engine: Docker's socket, or DOCKER_HOST's (Podman's service speaks the same API); the
# server under test finds it the same way.
SOCKET = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock").removeprefix("unix://")


def engine(method, path, body=None):
    """A call to the Docker Engine API through curl (the test's own view of the engine)."""
    cmd = ["curl", "-s", "--unix-socket", SOCKET, "-X", method, "http://localhost" + path]
    if body is not None:
        cmd += ["-H", "Content-Type: application/json", "-d", json.dumps(body)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout
    return json.loads(out) if out.strip() else None


def our_containers():
    return engine("GET", "/containers/json?all=1&filters=" +
                  "%7B%22label%22%3A%5B%22io.backyard-mcp%22%5D%7D") or []


class Stdio:
    """backyard-mcp over stdio, with a reader thread so pings can be timed during a call."""

    def __init__(self, *args, image=None):
        self.proc = subprocess.Popen(
            [BINARY, "--backend", "docker", "--image", image or IMAGE, "--runtime", RUNTIME,
             "--ruleset", "permissive", "--ask-fallback", "allow", "--log-level", "info", *args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.answers = {}
        self.cv = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.stderr_lines = []
        threading.Thread(target=self._read_stderr, daemon=True).start()
        self.next_id = 100
        init = self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                           "clientInfo": {"name": "docker-test", "version": "1"}})
        self.instructions = init["result"]["instructions"]
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _read(self):
        for line in self.proc.stdout:
            msg = json.loads(line)
            if "id" in msg:
                with self.cv:
                    self.answers[msg["id"]] = (msg, time.monotonic())
                    self.cv.notify_all()

    def _read_stderr(self):
        for line in self.proc.stderr:
            self.stderr_lines.append(line.decode(errors="replace"))

    def send(self, msg):
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()

    def start(self, method, params):
        with self.cv:
            self.next_id += 1
            rid = self.next_id
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return rid

    def wait(self, rid, timeout=180):
        with self.cv:
            self.cv.wait_for(lambda: rid in self.answers, timeout)
            return self.answers.pop(rid)[0]

    def request(self, method, params, timeout=180):
        return self.wait(self.start(method, params), timeout)

    def tool(self, name, arguments, timeout=180):
        return self.request("tools/call", {"name": name, "arguments": arguments}, timeout)["result"]

    def sh(self, command, timeout_s=60):
        return self.tool("execute", {"command": command, "timeout_s": timeout_s})[
            "structuredContent"]

    def ping_ms(self):
        start = time.monotonic()
        self.request("ping", {}, timeout=30)
        return (time.monotonic() - start) * 1000

    def log_tail(self, lines=30):
        """The end of the server's log, for a failure's message."""
        return "".join(self.stderr_lines[-lines:])

    def close(self):
        self.proc.stdin.close()
        code = self.proc.wait(120)
        return code


class DockerBackend(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.baseline = {c["Id"] for c in our_containers()}
        cls.server = Stdio()

    @classmethod
    def tearDownClass(cls):
        code = cls.server.close()
        assert code == 0, f"server exit code {code}"
        left = {c["Id"] for c in our_containers()} - cls.baseline
        assert not left, f"containers left behind: {left}"

    def test_reports_its_runtime(self):
        expected = "gVisor (runsc)" if RUNTIME == "runsc" else "runc, without gVisor"
        self.assertIn(expected, self.server.instructions)
        self.assertIn("/workspace", self.server.instructions)
        banner = [line for line in self.server.stderr_lines if "serving a Docker container" in line]
        self.assertEqual(len(banner), 1, self.server.log_tail())
        self.assertIn(expected, banner[0])

    def test_commands_and_files_meet_in_the_workspace(self):
        w = self.server.tool("write_file", {"path": "notes/a.txt", "content": "from the host\n"})
        self.assertFalse(w["isError"], w)
        r = self.server.sh("cat /workspace/notes/a.txt; pwd; id -u; echo made > b.txt")
        self.assertEqual(r["stdout"], f"from the host\n/workspace\n{SANDBOX_UID}\n")
        self.assertEqual(r["exit_code"], 0)
        read = self.server.tool("read_file", {"path": "/workspace/b.txt"})
        self.assertIn("made", read["content"][0]["text"])
        outside = self.server.tool("read_file", {"path": "/etc/passwd"})
        self.assertTrue(outside["isError"])
        # Both ends see one owner: what the file tools write belongs to the container's user.
        r = self.server.sh("python3 -c \"import os; print(os.stat('notes/a.txt').st_uid)\"; "
                           "echo more >> notes/a.txt && echo ok")
        self.assertEqual(r["stdout"], f"{SANDBOX_UID}\nok\n")

    def test_the_command_runner_speaks_over_its_own_connection(self):
        if RUNTIME == "runsc":
            self.skipTest("gVisor's processes are not seen from the host")
        root = tempfile.mkdtemp(prefix="byd-runner-")
        self.addCleanup(subprocess.run, ["rm", "-rf", root])
        os.chown(root, SANDBOX_UID, SANDBOX_UID)
        server = Stdio("--root", root)  # its own: its container runs this test's runner alone
        try:
            self.assertEqual(server.sh("echo hi")["stdout"], "hi\n")
            runners = []
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        argv = f.read().split(b"\0")
                except OSError:
                    continue
                if argv[:2] == [b"/opt/backyard/byd-enter", b"--runner"]:
                    with open(f"/proc/{pid}/mountinfo", "rb") as f:
                        if root.encode() in f.read():
                            runners.append(pid)
            self.assertEqual(len(runners), 1, "one command runner in its container")
            # Its frames pass between it and the server over a unix socket, not the engine's
            # exec stream (pipes).
            fds = f"/proc/{runners[0]}/fd"
            links = [os.readlink(f"{fds}/{fd}") for fd in os.listdir(fds)]
            self.assertEqual(len({x for x in links if x.startswith("socket:")}), 1, links)
        finally:
            self.assertEqual(server.close(), 0)

    def test_a_link_made_in_the_container_reads_as_it_does_there(self):
        r = self.server.sh("mkdir -p links && echo linked > links/t.txt && "
                           "ln -sf /workspace/links/t.txt links/abs && "
                           "ln -sf /etc/hostname links/out && cat links/abs")
        self.assertEqual(r["stdout"], "linked\n", r)
        read = self.server.tool("read_file", {"path": "links/abs"})
        self.assertFalse(read["isError"], read)
        self.assertIn("linked", read["content"][0]["text"])
        # A link to the container's own files stays out of the file tools' reach.
        out = self.server.tool("read_file", {"path": "links/out"})
        self.assertTrue(out["isError"], out)
        self.assertIn("outside the workspace", out["content"][0]["text"])
        moved = self.server.tool("move", {"source": "links/abs", "destination": "links/moved"})
        self.assertFalse(moved["isError"], moved)
        # (echo *, not ls: the statx of Debian's gVisor fails for every path)
        r = self.server.sh("cat links/moved && cd links && echo *")
        self.assertEqual(r["stdout"], "linked\nmoved out t.txt\n", r)

    def test_exit_codes_stdin_env_and_cwd(self):
        r = self.server.tool("execute", {"command": "cat; echo \"$GREETING\"; pwd; exit 3",
                                         "stdin": "in\n", "env": {"GREETING": "hi"},
                                         "cwd": "."})["structuredContent"]
        self.assertEqual(r["stdout"], "in\nhi\n/workspace\n")
        self.assertEqual(r["exit_code"], 3)

    def test_a_timeout_kills_the_whole_process_tree(self):
        r = self.server.sh("sleep 300 & sleep 301; echo never", timeout_s=2)
        self.assertTrue(r["timed_out"])
        self.assertNotIn("never", r["stdout"])
        left = self.server.sh("ps -eo args | grep -c '^slee[p] 30' || true")
        self.assertEqual(left["stdout"].strip(), "0")

    def test_python_keeps_its_state(self):
        # Afresh: an earlier test's memory bomb may have ended the container (under gVisor the
        # whole sandbox is what the memory limit kills) and the session with it.
        first = self.server.tool("run_python", {"code": "x = 41\nimport os\nos.getcwd()",
                                                "reset": True})
        self.assertFalse(first["isError"], first)
        self.assertIn("/workspace", first["content"][0]["text"])
        second = self.server.tool("run_python", {"code": "x + 1"})
        self.assertIn("42", second["content"][0]["text"])
        slow = self.server.tool("run_python", {"code": "import time\ntime.sleep(30)",
                                               "timeout_s": 2})
        self.assertTrue(slow["structuredContent"]["timed_out"], slow)
        after = self.server.tool("run_python", {"code": "x"})
        self.assertIn("41", after["content"][0]["text"])

    def test_hardening_inside_the_container(self):
        status = self.server.sh("grep -E '^(CapEff|NoNewPrivs)' /proc/self/status")["stdout"]
        self.assertIn("CapEff:\t0000000000000000", status)
        if RUNTIME == "runc":  # gVisor's /proc has no NoNewPrivs line; prctl answers for both
            self.assertRegex(status, r"NoNewPrivs:\s+1")
        nnp = self.server.sh("python3 -c 'import ctypes; print(ctypes.CDLL(None).prctl(39, 0, 0, 0, 0))'")
        self.assertEqual(nnp["stdout"], "1\n")
        ro = self.server.sh("touch /usr/x 2>&1; echo $?")["stdout"]
        self.assertNotEqual(ro.strip().splitlines()[-1], "0", ro)
        # A server of this test's on 127.0.0.2 stands for the internet: nothing leaves the
        # machine even if isolation broke. In the container, 127.0.0.2 is its own loopback.
        host = socket.socket()
        host.bind(("127.0.0.2", 0))
        host.listen(4)
        host.setblocking(False)
        net = self.server.tool("run_python", {"code": (
            "import socket\n"
            "s = socket.socket()\n"
            "s.settimeout(3)\n"
            "try:\n"
            f"    s.connect(('127.0.0.2', {host.getsockname()[1]})); r = 'connected'\n"
            "except OSError as e:\n"
            "    r = 'refused ' + type(e).__name__\n"
            "r")})
        self.assertIn("refused ConnectionRefusedError", net["content"][0]["text"])
        with self.assertRaises(BlockingIOError):
            host.accept()  # nobody came
        host.close()
        routes = self.server.sh("tail -n +2 /proc/net/route | wc -l")["stdout"]
        self.assertEqual(routes.strip(), "0")  # no way out
        sock = self.server.sh(
            "python3 -c \"import os; print([p for p in ('/var/run/docker.sock', "
            "'/run/docker.sock') if os.path.exists(p)])\"; "
            "find / -xdev -name '*.sock' 2>/dev/null | grep -c docker || true")
        self.assertEqual(sock["stdout"], "[]\n0\n")
        self.assertEqual(self.server.sh("id -u")["stdout"], f"{SANDBOX_UID}\n")
        # Limits set by the backend (--open-files-limit, --process-limit), not the engine's.
        # The process limit only under Podman, whose default may exceed the host's; elsewhere
        # the per-container pids limit holds, as RLIMIT_NPROC would be shared by containers.
        limits = self.server.sh("python3 -c 'import resource as r; "
                                "print(r.getrlimit(r.RLIMIT_NOFILE), r.getrlimit(r.RLIMIT_NPROC))'")
        self.assertTrue(limits["stdout"].startswith("(1024, 1024) "), limits)
        if "podman" in SOCKET:
            self.assertEqual(limits["stdout"], "(1024, 1024) (256, 256)\n", limits)

    def _under_attack(self, tool, arguments, timeout=120):
        """Runs an attack while pinging; returns its result and the slowest ping in ms."""
        rid = self.server.start("tools/call", {"name": tool, "arguments": arguments})
        slowest = 0.0
        while True:
            with self.server.cv:
                done = rid in self.server.answers
            if done:
                break
            slowest = max(slowest, self.server.ping_ms())
            time.sleep(0.2)
        return self.server.wait(rid, timeout)["result"], slowest

    def test_a_session_cannot_reach_another_sessions_kernel(self):
        # Each kernel has a container of its own: another session's code cannot find it in
        # /proc, open its pipes through /proc/PID/fd, or signal it.
        victim = self.server.tool("run_python", {"code": "tok = 'mine'\nimport os\nos.getpid()",
                                                  "session": "victim"})
        self.assertFalse(victim["isError"], victim)
        code = (
            "import os, signal\n"
            "seen, opened, signalled = [], [], []\n"
            "for name in os.listdir('/proc'):\n"
            "    if not name.isdigit() or int(name) == os.getpid():\n"
            "        continue\n"
            "    try:\n"
            "        cmd = open(f'/proc/{name}/cmdline', 'rb').read()\n"
            "    except OSError:\n"
            "        continue\n"
            "    if b'kernel.py' not in cmd and b'--runner' not in cmd:\n"
            "        continue\n"
            "    seen.append(name)\n"
            "    for fd in range(8):\n"
            "        try:\n"
            "            os.close(os.open(f'/proc/{name}/fd/{fd}', os.O_WRONLY))\n"
            "            opened.append((name, fd))\n"
            "        except OSError:\n"
            "            pass\n"
            "    try:\n"
            "        os.kill(int(name), signal.SIGSTOP)\n"
            "        signalled.append(name)\n"
            "    except OSError:\n"
            "        pass\n"
            "(seen, opened, signalled)")
        r = self.server.tool("run_python", {"code": code, "session": "attacker"})
        self.assertEqual(r["structuredContent"]["result"], "([], [], [])", r)
        r = self.server.tool("run_python", {"code": "tok", "session": "victim"})
        self.assertEqual(r["structuredContent"]["result"], "'mine'", r)

    # Every process of the container's user but the asking command's own (its python and the
    # shell that started it), by command line.
    LEFT = ("python3 -c \"import os; skip = {os.getpid(), os.getppid()}; print(sorted("
            "open(f'/proc/{p}/cmdline', 'rb').read().replace(bytes(1), b' ').decode().strip() "
            "for p in os.listdir('/proc') if p.isdigit() and int(p) not in skip and "
            f"os.stat(f'/proc/{{p}}').st_uid == {SANDBOX_UID}))\"")

    def test_a_command_cannot_outlive_its_call_or_forge_later_output(self):
        # The runner is root's: the command's kill of its parent is refused, and the spinner
        # that follows ends at the call's timeout.
        r = self.server.sh("kill -9 $PPID; echo parent:$?; "
                           "exec python3 -c 'while True: pass'", timeout_s=2)
        self.assertTrue(r["timed_out"], r)
        self.assertEqual(r["stdout"], "parent:1\n")
        self.assertEqual(self.server.sh(self.LEFT)["stdout"], "[]\n")
        # An escapee (its own session, its parent gone) that writes into every stdout it can
        # open through /proc ends with the call that started it: later calls print their own.
        r = self.server.sh(
            "(setsid sh -c 'while :; do for f in /proc/[0-9]*/fd/1; do "
            "echo FORGED-BY-ESCAPEE > $f; done 2>/dev/null; sleep 0.05; done' &); echo started")
        self.assertEqual((r["stdout"], r["exit_code"]), ("started\n", 0), r)
        for _ in range(3):
            r = self.server.sh("sleep 0.3; echo real")
            self.assertEqual(r["stdout"], "real\n", r)
        self.assertEqual(self.server.sh(self.LEFT)["stdout"], "[]\n")

    def test_commands_that_run_at_once_cannot_see_each_other(self):
        slow = self.server.start("tools/call", {"name": "execute", "arguments": {
            "command": "echo started > slow.started; sleep 4; echo slow done"}})
        deadline = time.monotonic() + 60
        while self.server.sh("cat slow.started 2>/dev/null")["stdout"] != "started\n":
            self.assertLess(time.monotonic(), deadline, "the slow command never started")
            time.sleep(0.05)
        r = self.server.sh(
            "python3 -c \"import os\nfor p in os.listdir('/proc'):\n"
            " if p.isdigit() and open(f'/proc/{p}/cmdline', 'rb').read() == b'sleep 4 '.replace(b' ', bytes(1)):\n"
            "  print('found', p); os.kill(int(p), 9)\"; echo looked")
        self.assertEqual(r["stdout"], "looked\n", r)
        done = self.server.wait(slow)["result"]["structuredContent"]
        self.assertEqual((done["stdout"], done["exit_code"]), ("slow done\n", 0), done)

    def test_a_killed_kernel_leaves_nothing_running(self):
        # A cell that ignores SIGINT, after starting a daemon (a session of its own) that
        # writes a line a tenth of a second: the timeout's interrupt fails, the kernel is
        # killed, and the daemon with it. The pid the server signals is root's file.
        r = self.server.tool("run_python", {"session": "stubborn", "code": (
            "try:\n"
            "    open('/tmp/.byd-kernel.pid', 'w').write('1')\n"
            "    r = 'written'\n"
            "except OSError as e:\n"
            "    r = type(e).__name__\n"
            "r")})
        self.assertEqual(r["structuredContent"]["result"], "'PermissionError'", r)
        code = (
            "import os, signal, subprocess, time\n"
            "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
            "subprocess.Popen(['sh', '-c', 'while :; do echo x >> /workspace/daemon.log; "
            "sleep 0.1; done'], start_new_session=True)\n"
            "while True:\n"
            "    time.sleep(0.1)\n")
        r = self.server.tool("run_python", {"code": code, "session": "stubborn", "timeout_s": 2})
        self.assertTrue(r["structuredContent"]["state_lost"], r)
        size = self.server.sh("wc -c < daemon.log")["stdout"]
        time.sleep(1)
        self.assertEqual(self.server.sh("wc -c < daemon.log")["stdout"], size,
                         "the daemon still writes")
        r = self.server.tool("run_python", {"code": "'again'", "session": "stubborn"})
        self.assertEqual(r["structuredContent"]["result"], "'again'", r)

    def test_no_setuid_or_setgid_file_reaches_the_host(self):
        # The Local sandbox's attacks, from a container: each is refused by the seccomp
        # filter (the engine's profile, and under gVisor the runner's and kernel's own), and
        # what the container makes belongs to its user, a uid that owns nothing else.
        with tempfile.TemporaryDirectory(prefix="byd-setid-") as root:
            os.chown(root, SANDBOX_UID, SANDBOX_UID)
            evil_tar(os.path.join(root, "evil.tar"))
            os.chown(os.path.join(root, "evil.tar"), SANDBOX_UID, SANDBOX_UID)
            server = Stdio("--root", root)
            try:
                log = []
                for command in COMMAND_ATTACKS:
                    r = server.sh(command)
                    log.append(f"$ {command}\n{r['stdout']}{r['stderr']}")
                for code in PYTHON_ATTACKS:
                    r = server.tool("run_python", {"code": "import os, stat\n" + code})
                    log.append(f">>> {code}\n{json.dumps(r['structuredContent'].get('error'))}")
                log = "\n".join(log)
                self.assertEqual(setid_files(root), [], log)
                self.assertGreaterEqual(log.count("Operation not permitted"),
                                        len(COMMAND_ATTACKS) - 1, log)
                self.assertEqual(server.sh("touch made; id -u")["stdout"], f"{SANDBOX_UID}\n")
                self.assertEqual(os.stat(os.path.join(root, "made")).st_uid, SANDBOX_UID)
            finally:
                self.assertEqual(server.close(), 0)

    def test_a_fork_bomb_meets_the_pids_limit(self):
        # The bomb forks at the limit until the timeout ends the command's group (the command
        # waits in a loop of builtins: at the limit, it could not start a sleep). From a file:
        # spelled out, the ruleset refuses it before the container sees it.
        self.server.tool("write_file", {"path": "bomb.sh", "content":
                                        "bomb() { bomb | bomb & }; bomb; while :; do :; done\n"})
        result, slowest = self._under_attack("execute", {"command": "sh bomb.sh", "timeout_s": 5})
        self.assertLess(slowest, PING_LIMIT_MS, "ping was slow during the fork bomb")
        self.assertFalse(result["isError"], result)
        sc = result["structuredContent"]
        if RUNTIME == "runc":  # the limit held inside, and the container lives on
            self.assertTrue(sc["timed_out"], f"{sc}\n{self.server.log_tail()}")
            self.assertIn("Cannot fork", sc["stderr"])
            self.assertNotIn("container stopped", sc["stderr"])
        else:
            # Under gVisor the limit counts the sandbox's own threads, and the bomb may end
            # the whole sandbox: then the call says so, and the next one gets a new container.
            self.assertTrue(sc["timed_out"] or "container stopped" in sc["stderr"],
                            f"{sc}\n{self.server.log_tail()}")
        self.assertEqual(self.server.sh("echo alive")["stdout"], "alive\n")
        left = self.server.sh("ps -eo args | grep -c '^/bin/s[h]' || true")["stdout"].strip()
        self.assertLessEqual(int(left or 0), 2, "the bomb outlived its command")


class MemoryBomb(unittest.TestCase):
    """Apart, with a server of its own: under gVisor the memory limit may end the whole sandbox,
    and the next call then gets a new container."""

    def setUp(self):
        self.server = Stdio()

    def tearDown(self):
        self.assertEqual(self.server.close(), 0)

    _under_attack = DockerBackend._under_attack

    def test_memory_is_capped(self):
        result, slowest = self._under_attack("execute", {
            "command": "python3 -c \"b = bytearray(16 << 30); print('allocated')\"",
            "timeout_s": 20})
        self.assertLess(slowest, PING_LIMIT_MS)
        self.assertNotIn("allocated", result["structuredContent"]["stdout"])
        self.assertNotEqual(result["structuredContent"]["exit_code"], 0)
        self.assertEqual(self.server.sh("echo alive")["stdout"], "alive\n")


def mcp_request(port, method, path, body=None, sid=None):
    """One HTTP request to a server on `port`: (status, the JSON answer or the last SSE
    event's, the session id)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=180)
    headers = {"Content-Type": "application/json",
               "Accept": "application/json, text/event-stream"}
    if sid:
        headers["Mcp-Session-Id"] = sid
    conn.request(method, path, json.dumps(body) if body is not None else None, headers)
    resp = conn.getresponse()
    data = resp.read().decode()
    sid = resp.getheader("Mcp-Session-Id") or sid
    conn.close()
    if data.startswith("event:") or data.startswith("id:"):
        data = [line[6:] for line in data.splitlines() if line.startswith("data: ")][-1]
    return resp.status, (json.loads(data) if data.strip() else None), sid


def start_http(*args, env=None):
    """backyard-mcp over HTTP on the Docker backend, on a free loopback port: (process, port)."""
    proc = subprocess.Popen(
        [BINARY, "--transport", "http", "--listen", "127.0.0.1:0", "--backend", "docker",
         "--image", IMAGE, "--runtime", RUNTIME, "--ruleset", "permissive", "--log-level", "warn",
         *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    while True:  # the address comes after any warnings
        line = proc.stderr.readline()
        if not line:
            raise AssertionError("the server ended before it listened")
        match = re.search(rb"127\.0\.0\.1:(\d+)/mcp", line)
        if match:
            return proc, int(match.group(1))


class HttpSessions(unittest.TestCase):
    def test_two_sessions_two_containers_and_nothing_left(self):
        baseline = {c["Id"] for c in our_containers()}
        admin = tempfile.NamedTemporaryFile("w", prefix="byd-admin-")
        admin.write("operator-token-for-docker-0123\n")
        admin.flush()
        self.addCleanup(admin.close)
        proc, port = start_http("--ask-fallback", "allow", "--ui", "--admin-token-file",
                                 admin.name)

        def post(body, sid=None):
            return mcp_request(port, "POST", "/mcp", body, sid)[1:]

        def session():
            _, sid = post({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                           "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                      "clientInfo": {"name": "t", "version": "1"}}})
            return sid

        def call(sid, name, args):
            answer, _ = post({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                              "params": {"name": name, "arguments": args}}, sid)
            return answer["result"]

        try:
            a, b = session(), session()
            for sid, word in ((a, "alpha"), (b, "beta")):
                r = call(sid, "execute", {"command": f"echo {word} > {word}.txt"})
                self.assertFalse(r.get("isError"), r)
                self.assertEqual(r["structuredContent"]["exit_code"], 0, r)
            self.assertEqual(len({c["Id"] for c in our_containers()} - baseline), 2)
            listing = call(b, "execute", {"command": "ls; cat /workspace/alpha.txt || echo none"})
            self.assertEqual(listing["structuredContent"]["stdout"], "beta.txt\nnone\n")

            # The operator's page shows each container's memory and CPU against its ceilings.
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            conn.request("GET", "/ui/api/state",
                         headers={"Authorization": "Bearer operator-token-for-docker-0123"})
            state = json.loads(conn.getresponse().read())
            conn.close()
            uses = {s["id"]: s["use"] for s in state["sessions"]}
            self.assertEqual(set(uses), {a, b})
            for use in uses.values():
                self.assertGreater(use["memory_bytes"], 0, use)
                self.assertEqual(use["memory_limit"], 1 << 30, use)
                self.assertEqual(use["cpu_limit"], 1.0, use)
                self.assertGreater(use["cpu_seconds"], 0, use)

            mounts = [m["Source"] for c in our_containers() if c["Id"] not in baseline
                      for m in c["Mounts"] if m["Destination"] == "/workspace"]
            self.assertEqual(len(set(mounts)), 2)
            for sid in (a, b):
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                conn.request("DELETE", "/mcp", headers={"Mcp-Session-Id": sid})
                conn.getresponse().read()
                conn.close()
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and {c["Id"] for c in our_containers()} - baseline:
                time.sleep(0.5)
            self.assertEqual({c["Id"] for c in our_containers()} - baseline, set())
            for source in mounts:
                self.assertFalse(os.path.exists(source), f"workspace {source} left behind")
        finally:
            proc.terminate()
            self.assertEqual(proc.wait(60), 0)


def metric(port, family):
    """The samples of one family of /metrics (a loopback client needs no token), by labels."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", "/metrics")
    resp = conn.getresponse()
    text = resp.read().decode()
    conn.close()
    assert resp.status == 200, text
    return {labels: float(n) for labels, n in
            re.findall("^" + family + r"(\{[^}]*\}|) (\S+)$", text, re.M)}


def container_starts(port):
    """byd_container_starts_total, by how."""
    return {re.search(r'"(\w+)"', k).group(1): v
            for k, v in metric(port, "byd_container_starts_total").items()}


class PersistedContainers(unittest.TestCase):
    """--persist-containers: a named session's container is stopped when the session is reaped,
    started again when it comes back (what the code put in HOME is there), and removed with the
    session's directories by a purge."""

    def setUp(self):
        self.spaces = tempfile.mkdtemp(prefix="byd-persist-")
        self.addCleanup(subprocess.run, ["rm", "-rf", self.spaces])
        self.start_server()

    def start_server(self, env=None):
        self.proc, self.port = start_http("--workspace-root", self.spaces, "--persist-containers",
                                          "--session-idle", "1", env=env)

    def tearDown(self):
        self.proc.terminate()
        self.assertEqual(self.proc.wait(60), 0)
        self.proc.stderr.close()
        engine("DELETE", "/containers/" + self.kept() + "?force=true&v=true")

    def kept(self):
        """The kept container's name: the tenant's length and name, the session's, and the
        first 12 hex digits of the SHA-256 of the workspace root (canonical)."""
        digest = hashlib.sha256(os.path.realpath(self.spaces).encode()).hexdigest()[:12]
        return "byd-7-default-work-" + digest

    def request(self, method, path, body=None, sid=None):
        return mcp_request(self.port, method, path, body, sid)

    def session(self):
        status, _, sid = self.request("POST", "/mcp", {
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"},
                       "_meta": {"io.backyard/session": "work"}}})
        self.assertEqual(status, 200)
        return sid

    def sh(self, sid, command):
        _, answer, _ = self.request("POST", "/mcp", {
            "jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "execute", "arguments": {"command": command}}}, sid)
        result = answer["result"]
        self.assertFalse(result.get("isError"), result)
        return result["structuredContent"]["stdout"]

    def state(self):
        found = engine("GET", "/containers/" + self.kept() + "/json") or {}
        return found.get("Id"), found.get("State", {}).get("Status")

    def container_starts(self):
        return container_starts(self.port)

    def test_a_named_sessions_container_is_stopped_and_comes_back(self):
        sid = self.session()
        self.assertEqual(self.sh(sid, "echo $HOME; mkdir -p ~/.local/bin && "
                                      "printf '#!/bin/sh\\necho tool ran\\n' > ~/.local/bin/t && "
                                      "chmod +x ~/.local/bin/t && echo ok"),
                         "/home/sandbox\nok\n")
        first, status = self.state()
        self.assertEqual(status, "running")
        self.assertEqual(self.container_starts(), {"created": 1})
        # Ended now, or already reaped after its idle second when the engine answered slowly.
        self.assertIn(self.request("DELETE", "/mcp", sid=sid)[0], (200, 404))
        # Reaped after its idle second: stopped, not removed.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and self.state()[1] not in ("exited", "stopped"):
            time.sleep(0.5)
        kept, status = self.state()
        self.assertEqual(kept, first)
        self.assertIn(status, ("exited", "stopped"))  # Docker's word, Podman's
        again = self.session()
        self.assertEqual(self.sh(again, "~/.local/bin/t"), "tool ran\n")
        self.assertEqual(self.state(), (first, "running"))
        self.assertEqual(self.container_starts(), {"created": 1, "restarted": 1})
        # A purge ends the session and removes its container, workspace and HOME.
        status, _, _ = self.request("DELETE", "/api/sessions/work")
        self.assertEqual(status, 200)
        self.assertEqual(self.state(), (None, None))
        self.assertEqual(os.listdir(self.spaces), [])


    def test_a_restarted_server_finds_the_kept_container(self):
        sid = self.session()
        self.assertEqual(self.sh(sid, "mkdir -p ~/.local/bin && printf '#!/bin/sh\\necho kept\\n' "
                                      "> ~/.local/bin/k && chmod +x ~/.local/bin/k && echo ok"),
                         "ok\n")
        first, status = self.state()
        self.assertEqual(status, "running")
        # The server stops (its sessions with it); the container stays, stopped or not.
        self.proc.terminate()
        self.assertEqual(self.proc.wait(60), 0)
        self.proc.stderr.close()
        self.assertEqual(self.state()[0], first)
        self.start_server()
        again = self.session()
        self.assertEqual(self.sh(again, "~/.local/bin/k"), "kept\n")
        self.assertEqual(self.state(), (first, "running"))
        # A server whose directories differ (here, where forked sessions meet it) cannot use
        # that container: it makes it again, and HOME and the files are as they were.
        self.assertIn(self.request("DELETE", "/mcp", sid=again)[0], (200, 404))
        self.proc.terminate()
        self.assertEqual(self.proc.wait(60), 0)
        self.proc.stderr.close()
        runtime_dir = tempfile.mkdtemp(prefix="byd-run-")
        self.addCleanup(subprocess.run, ["rm", "-rf", runtime_dir])
        self.start_server(env={**os.environ, "XDG_RUNTIME_DIR": runtime_dir})
        third = self.session()
        self.assertEqual(self.sh(third, "~/.local/bin/k"), "kept\n")
        remade, status = self.state()
        self.assertNotEqual(remade, first)
        self.assertEqual(status, "running")
        mounts = engine("GET", "/containers/" + remade + "/json")["Mounts"]
        self.assertIn(runtime_dir, json.dumps(mounts))


class SessionPool(unittest.TestCase):
    """--session-pool: a container made ahead (with its command runner and a spare kernel) is
    taken by the next session, the pool is made whole again, and what no session took is
    removed at the end with its directory."""

    def test_a_session_takes_the_container_made_ahead(self):
        spaces = tempfile.mkdtemp(prefix="byd-pool-")
        self.addCleanup(subprocess.run, ["rm", "-rf", spaces])
        baseline = {c["Id"] for c in our_containers()}
        proc, port = start_http("--workspace-root", spaces, "--session-pool", "1")
        threading.Thread(target=proc.stderr.read, daemon=True).start()

        def ready(want):
            deadline = time.monotonic() + 180
            while metric(port, "byd_session_pool_ready") != want and time.monotonic() < deadline:
                time.sleep(0.2)
            return metric(port, "byd_session_pool_ready")

        def call(sid, name, args):
            _, answer, _ = mcp_request(port, "POST", "/mcp", {
                "jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": name, "arguments": args}}, sid)
            self.assertFalse(answer["result"].get("isError"), answer)
            return answer["result"]["structuredContent"]

        try:
            want = {'{tenant="default"}': 1}
            self.assertEqual(ready(want), want)
            # Its commands' container and its spare kernel's, both running.
            deadline = time.monotonic() + 60
            while True:
                ours = [c for c in our_containers() if c["Id"] not in baseline]
                if [c["State"] for c in ours] == ["running"] * 2 or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            self.assertEqual([c["State"] for c in ours], ["running"] * 2)
            ahead = {m["Source"] for c in ours for m in c["Mounts"]
                     if m["Destination"] == "/workspace"}
            self.assertEqual(len(ahead), 1)
            ahead = ahead.pop()
            self.assertEqual(container_starts(port), {"created": 2})

            status, _, sid = mcp_request(port, "POST", "/mcp", {
                "jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "t", "version": "1"}}})
            self.assertEqual(status, 200)
            self.assertEqual(call(sid, "execute", {"command": "echo hi > f.txt; cat f.txt"})
                             ["stdout"], "hi\n")
            with open(os.path.join(ahead, "f.txt")) as f:  # in the container made ahead
                self.assertEqual(f.read(), "hi\n")
            self.assertEqual(call(sid, "run_python", {"code": "6 * 7"})["result"], "42")
            # Made whole again: two containers more, for the pool (its spare kernel's starts
            # once the rest is ready); the session made none.
            self.assertEqual(ready(want), want)
            deadline = time.monotonic() + 60
            while container_starts(port) != {"created": 4} and time.monotonic() < deadline:
                time.sleep(0.2)
            time.sleep(1)
            self.assertEqual(container_starts(port), {"created": 4})
            self.assertEqual(len({c["Id"] for c in our_containers()} - baseline), 4)
        finally:
            proc.terminate()
            self.assertEqual(proc.wait(60), 0)
        # The containers are gone; the session's directory stays, the unused one does not.
        self.assertEqual({c["Id"] for c in our_containers()} - baseline, set())
        self.assertEqual(os.listdir(spaces), [os.path.basename(ahead)])


class NamedContainer(unittest.TestCase):
    def test_survives_a_restart_of_the_server(self):
        name = f"byd-test-{os.getpid()}-{RUNTIME}"
        with tempfile.TemporaryDirectory(prefix="byd-named-") as root:
            os.chown(root, SANDBOX_UID, SANDBOX_UID)
            try:
                first = Stdio("--container-name", name, "--root", root)
                first.sh("echo kept > /tmp/marker; echo file > here.txt")
                self.assertEqual(first.close(), 0)
                self.assertEqual(engine("GET", f"/containers/{name}/json")["Name"], "/" + name)
                second = Stdio("--container-name", name, "--root", root)
                r = second.sh("cat /tmp/marker here.txt")
                self.assertEqual(r["stdout"], "kept\nfile\n")
                self.assertEqual(second.close(), 0)
            finally:
                engine("DELETE", f"/containers/{name}?force=true&v=true")


class LeftBehind(unittest.TestCase):
    """Containers whose server ended without removing them (killed, crashed) are removed by the
    next server; those of a server still running stay."""

    def owner(self, pid, started):
        with open("/etc/machine-id") as f:
            machine = f.read().strip()
        return f"{machine} {os.readlink('/proc/self/ns/pid')} {pid} {started}"

    def make(self, owner):
        made = engine("POST", "/containers/create", {
            "Image": IMAGE, "Cmd": ["sleep", "infinity"],
            "Labels": {"io.backyard-mcp": "session", "io.backyard-mcp.owner": owner}})
        self.addCleanup(engine, "DELETE", f"/containers/{made['Id']}?force=true")
        return made["Id"]

    def test_a_new_server_removes_what_an_ended_one_left(self):
        ended = subprocess.Popen(["true"])
        ended.wait()
        with open("/proc/self/stat") as f:
            my_start = f.read().rsplit(")", 1)[1].split()[19]
        orphan = self.make(self.owner(ended.pid, "1"))
        alive = self.make(self.owner(os.getpid(), my_start))
        server = Stdio()
        try:
            self.assertEqual(server.sh("echo hi")["stdout"], "hi\n")
            ids = {c["Id"] for c in our_containers()}
            self.assertNotIn(orphan, ids, server.log_tail())
            self.assertIn(alive, ids)
            self.assertTrue(any("left by a server that ended" in line
                                for line in server.stderr_lines), server.log_tail())
        finally:
            self.assertEqual(server.close(), 0)


# A command that prints its parent's command line: the command runner's, or an engine exec's.
PARENT = "tr '\\0' ' ' < /proc/$PPID/cmdline"


def derived_image(name, script):
    """The test image after `script` ran in it as root, committed as backyard-mcp/NAME:PID."""
    image = f"backyard-mcp/{name}:{os.getpid()}"
    # (limits set, as the backend sets them: Podman's defaults exceed this host's)
    made = engine("POST", "/containers/create", {
        "Image": IMAGE, "User": "0", "Cmd": ["sh", "-c", script],
        "HostConfig": {"Ulimits": [{"Name": "nofile", "Soft": 1024, "Hard": 1024},
                                   {"Name": "nproc", "Soft": 256, "Hard": 256}]}})
    try:
        engine("POST", f"/containers/{made['Id']}/start")
        engine("POST", f"/containers/{made['Id']}/wait")
        repo, tag = image.split(":")
        engine("POST", f"/commit?container={made['Id']}&repo={repo}&tag={tag}", {})
    finally:
        engine("DELETE", f"/containers/{made['Id']}?force=true")
    return image


class OnDerivedImage(unittest.TestCase):
    """Tests on the test image after the class's SCRIPT ran in it (derived_image), made once for
    the class and removed after it."""
    NAME = SCRIPT = None

    @classmethod
    def setUpClass(cls):
        cls.image = derived_image(cls.NAME, cls.SCRIPT)

    @classmethod
    def tearDownClass(cls):
        engine("DELETE", f"/images/{cls.image}?force=true")


class ImageWithoutPython(OnDerivedImage):
    """An image with no Python: commands still go through the command runner (byd-enter, copied
    in), with the same results, and run_python says why it cannot run."""
    NAME, SCRIPT = "nopython", "rm -f /usr/bin/python3*"

    def test_commands_run_through_the_runner(self):
        server = Stdio(image=self.image)
        try:
            r = server.tool("execute", {"command": "cat; echo $((6 * 7)); exit 4",
                                        "stdin": "in\n"})["structuredContent"]
            self.assertEqual((r["stdout"], r["exit_code"]), ("in\n42\n", 4), r)
            self.assertIn("byd-enter --runner", server.sh(PARENT)["stdout"])
            r = server.sh("sleep 300 & sleep 301; echo never", timeout_s=2)
            self.assertTrue(r["timed_out"], r)
            self.assertEqual(server.sh("ps -eo args | grep -c '^slee[p] 30' || true")["stdout"],
                             "0\n")
            self.assertFalse(any("exec of its own" in line for line in server.stderr_lines),
                             server.log_tail())
            py = server.tool("run_python", {"code": "1"})
            self.assertTrue(py["isError"], py)
            self.assertIn("needs python3 in the image", py["content"][0]["text"])
        finally:
            self.assertEqual(server.close(), 0)


class EngineProxy:
    """A unix socket that forwards to the engine's, which the test can take down and bring back:
    to the server, the engine goes away and returns; the containers stay."""

    def __init__(self, path):
        self.path, self.listener, self.conns, self.lock = path, None, [], threading.Lock()

    def up(self):
        self.listener = socket.socket(socket.AF_UNIX)
        self.listener.bind(self.path)
        self.listener.listen(64)
        threading.Thread(target=self._accept, args=(self.listener,), daemon=True).start()

    def down(self):
        self.listener.close()
        os.unlink(self.path)
        with self.lock:
            for c in self.conns:
                try:
                    c.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                c.close()
            self.conns.clear()

    def _accept(self, listener):
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            engine_side = socket.socket(socket.AF_UNIX)
            engine_side.connect(SOCKET)
            with self.lock:
                self.conns += [client, engine_side]
            for a, b in ((client, engine_side), (engine_side, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src, dst):
        try:
            while data := src.recv(65536):
                dst.sendall(data)
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


class EngineRestart(unittest.TestCase):
    def test_the_next_call_after_the_engine_returns_recovers(self):
        with tempfile.TemporaryDirectory(prefix="byd-restart-") as tmp:
            root = os.path.join(tmp, "ws")
            os.mkdir(root)
            os.chown(root, SANDBOX_UID, SANDBOX_UID)
            proxy = EngineProxy(os.path.join(tmp, "engine.sock"))
            proxy.up()
            server = Stdio("--docker-host", "unix://" + proxy.path, "--root", root)
            try:
                self.assertEqual(server.sh("echo one")["stdout"], "one\n")
                self.assertIn("2", server.tool("run_python", {"code": "1 + 1"})["content"][0]["text"])
                proxy.down()
                # The container runs on: its command runner, which speaks with the server
                # directly, still runs commands, and the file tools work.
                self.assertEqual(server.sh("echo two")["stdout"], "two\n")
                w = server.tool("write_file", {"path": "during.txt", "content": "files work\n"})
                self.assertFalse(w["isError"], w)
                # What needs the engine (a new Python session's kernel) says it cannot reach it.
                r = server.tool("run_python", {"code": "2 + 2", "session": "new"})
                self.assertTrue(r["isError"], r)
                self.assertIn("not reachable", r["content"][0]["text"])
                proxy.up()
                self.assertEqual(server.sh("cat during.txt")["stdout"], "files work\n")
                self.assertIn("2", server.tool("run_python", {"code": "1 + 1"})["content"][0]["text"])
                r = server.tool("run_python", {"code": "2 + 2", "session": "new"})
                self.assertIn("4", r["content"][0]["text"], r)
            finally:
                code = server.close()
                if os.environ.get("BYD_DEBUG"):
                    print("".join(server.stderr_lines), file=sys.stderr)
                self.assertEqual(code, 0)
                proxy.down()


class EngineDown(unittest.TestCase):
    def test_file_tools_work_and_commands_say_why_not(self):
        with tempfile.TemporaryDirectory(prefix="byd-down-") as root:
            os.chown(root, SANDBOX_UID, SANDBOX_UID)
            server = Stdio("--docker-host", "unix:///nonexistent/docker.sock", "--root", root)
            try:
                w = server.tool("write_file", {"path": "a.txt", "content": "x"})
                self.assertFalse(w["isError"], w)
                r = server.tool("execute", {"command": "true"})
                self.assertTrue(r["isError"])
                self.assertIn("not reachable", r["content"][0]["text"])
                self.assertIn("x", server.tool("read_file", {"path": "a.txt"})["content"][0]["text"])
            finally:
                self.assertEqual(server.close(), 0)


if __name__ == "__main__":
    BINARY = os.path.abspath(sys.argv[1])
    args = sys.argv[2:]
    podman = args[:1] == ["--podman"]
    if podman:
        args = args[1:]
        if os.environ.get("BYD_PODMAN_TESTS") != "1":
            print("skipped: BYD_PODMAN_TESTS=1 is not set (no Podman service set up for tests)")
            sys.exit(77)
        SOCKET = os.environ.get("BYD_PODMAN_SOCKET", "/run/podman/podman.sock")
        os.environ["DOCKER_HOST"] = "unix://" + SOCKET  # for the servers the tests start
    runtimes = []
    while len(args) >= 2 and args[0] == "--runtime":
        runtimes.append(args[1])
        args = args[2:]
    if not podman and os.environ.get("BYD_DOCKER_TESTS") != "1":
        print("skipped: BYD_DOCKER_TESTS=1 is not set (no Docker engine set up for tests)")
        sys.exit(77)
    ok = True
    for RUNTIME in runtimes or ["runc"]:
        print(f"=== runtime {RUNTIME}", flush=True)
        program = unittest.main(argv=[sys.argv[0], *args], exit=False, verbosity=2)
        ok = ok and program.result.wasSuccessful()
    sys.exit(0 if ok else 1)
