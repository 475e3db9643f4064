"""Tests of byd-enter's command runner (byd-enter --runner, backends/docker/enter_runner.h: the
Docker backend's) over its frames, as the server drives it, here on the host instead of in a
container: as root, running each command as another user.

Run from the repository root: /usr/bin/python3 -m unittest tests/python/test_runner.py -v
"""

import json
import os
import select
import signal
import socket
import struct
import subprocess
import tempfile
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# A uid no one else on this machine runs as.
USER_UID = 61000 + os.getpid() % 1000
# byd-enter, as built (the test command says where).
ENTER = os.environ.get("BYD_ENTER", os.path.join(ROOT, "build", "backends", "byd-enter"))
TIMEOUT = 30  # seconds to wait for any one frame
ENV = ["PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"]


def read_text(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except FileNotFoundError:
        return ""


def alive(pid):
    """Whether `pid` exists and has not exited (a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@unittest.skipUnless(os.geteuid() == 0, "the runner starts as root and drops to its user")
class RunnerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(ENTER, os.X_OK):
            raise AssertionError(f"no byd-enter at {ENTER}: build it, or set BYD_ENTER")

    def setUp(self):
        self.start()
        self.pending = b""
        kind, payload = self.frame()
        self.assertEqual(kind, b"R")
        self.assertEqual(json.loads(payload)["pid"], self.proc.pid)

    def tearDown(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            f.close()

    def start(self):
        """The runner, and where its frames are read (`self.reader`) and written."""
        self.proc = subprocess.Popen([ENTER, "--runner", f"{USER_UID}:{USER_UID}"],
                                     stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0,
                                     start_new_session=True)
        self.reader = self.proc.stdout

    def write(self, data):
        self.proc.stdin.write(data)

    def end_input(self):
        self.proc.stdin.close()

    def workdir(self):
        """A directory for a test's files, which the commands may write in."""
        made = tempfile.TemporaryDirectory()
        os.chown(made.name, USER_UID, USER_UID)
        return made

    def send(self, msg):
        body = json.dumps(msg).encode()
        self.write(struct.pack(">I", len(body)) + body)

    def _read(self, n):
        deadline = time.monotonic() + TIMEOUT
        while len(self.pending) < n:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.reader], [], [], left)[0]:
                self.fail(f"no frame from the runner within {TIMEOUT} s")
            chunk = os.read(self.reader.fileno(), 1 << 16)
            if not chunk:
                self.fail("runner closed stdout; stderr: " + self.proc.stderr.read().decode())
            self.pending += chunk
        data, self.pending = self.pending[:n], self.pending[n:]
        return data

    def frame(self):
        kind, size = struct.unpack(">cI", self._read(5))
        return kind, self._read(size)

    def run_command(self, command, on_started=None, **extra):
        """Sends a run request; returns (stdout, stderr, exit frame, latest-line frames)."""
        self.send({"type": "run", "argv": ["/bin/sh", "-c", command], "env": ENV,
                   "cwd": extra.pop("cwd", "/"), **extra})
        out, err, lines = b"", b"", []
        while True:
            kind, payload = self.frame()
            if kind == b"S" and on_started:
                on_started()
            elif kind == b"O":
                out += payload
            elif kind == b"E":
                err += payload
            elif kind == b"L":
                lines.append(payload)
            elif kind == b"X":
                return out, err, json.loads(payload), lines

    def test_output_and_exit_code(self):
        out, err, end, _ = self.run_command("echo hi; echo oops >&2; exit 3")
        self.assertEqual((out, err), (b"hi\n", b"oops\n"))
        self.assertEqual(end["exit_code"], 3)
        self.assertEqual(end["truncated"], [False, False])

    def test_commands_run_one_after_another(self):
        for i in range(5):
            self.assertEqual(self.run_command(f"echo {i}")[0], f"{i}\n".encode())

    def test_env_cwd_and_stdin(self):
        with self.workdir() as tmp:
            out, _, end, _ = self.run_command("pwd; echo $GREETING; cat", cwd=tmp,
                                              env=ENV + ["GREETING=hello"], stdin="line 1\nline 2")
        self.assertEqual(out.decode(), f"{tmp}\nhello\nline 1\nline 2")
        self.assertEqual(end["exit_code"], 0)

    def test_large_stdin_to_a_command_that_stops_reading(self):
        out, _, end, _ = self.run_command("head -c 5", stdin="x" * (4 << 20))
        self.assertEqual(out, b"xxxxx")
        self.assertEqual(end["exit_code"], 0)

    def test_output_is_cut_at_the_cap_and_read_to_the_end(self):
        out, _, end, _ = self.run_command("head -c 1000000 /dev/zero; echo done >&2",
                                          max_output=1000)
        self.assertEqual(len(out), 1000)
        self.assertEqual(end["truncated"], [True, False])
        self.assertEqual(end["exit_code"], 0)

    def test_latest_line_past_the_cap(self):
        _, _, end, lines = self.run_command(
            "i=0; while [ $i -lt 30 ]; do echo line $i; i=$((i+1)); sleep 0.1; done",
            max_output=10)
        self.assertTrue(end["truncated"][0])
        self.assertGreaterEqual(len(lines), 1)
        self.assertRegex(lines[-1].decode(), r"^line \d+$")

    def test_signal_is_reported_as_a_shell_would(self):
        _, _, end, _ = self.run_command("kill -TERM $$")
        self.assertEqual((end["exit_code"], end["signal"]), (128 + 15, 15))

    def test_kill_ends_the_whole_group(self):
        with self.workdir() as tmp:
            pids = os.path.join(tmp, "pids")
            self.send({"type": "run", "argv": ["/bin/sh", "-c",
                                               f"sleep 60 & echo $! > {pids}; sleep 60"],
                       "env": ENV, "cwd": "/"})
            self.assertEqual(self.frame()[0], b"S")
            deadline = time.monotonic() + TIMEOUT
            while not read_text(pids):
                self.assertLess(time.monotonic(), deadline)
                time.sleep(0.01)
            background = int(read_text(pids))
            start = time.monotonic()
            self.send({"type": "kill"})
            kind, payload = self.frame()
        self.assertEqual(kind, b"X")
        end = json.loads(payload)
        self.assertTrue(end["killed"])
        self.assertEqual(end["exit_code"], 128 + 9)
        self.assertLess(time.monotonic() - start, 5)
        self.assertFalse(alive(background))

    def test_a_kill_in_the_same_write_as_its_request(self):
        run = json.dumps({"type": "run", "argv": ["sleep", "60"], "env": ENV, "cwd": "/"}).encode()
        kill = json.dumps({"type": "kill"}).encode()
        start = time.monotonic()
        self.write(struct.pack(">I", len(run)) + run + struct.pack(">I", len(kill)) + kill)
        while (frame := self.frame())[0] != b"X":
            pass
        self.assertTrue(json.loads(frame[1])["killed"])
        self.assertLess(time.monotonic() - start, 5)

    def test_what_a_command_leaves_running_ends_with_it(self):
        start = time.monotonic()
        out, _, end, _ = self.run_command("sleep 60 & echo $!")
        self.assertEqual(end["exit_code"], 0)
        self.assertFalse(alive(int(out)))
        # At once: the runner reaps what it killed in the group (its orphans), rather than
        # killing the group again until a deadline.
        self.assertLess(time.monotonic() - start, 1.8)

    def test_a_daemon_ends_with_the_command(self):
        # The command waits until the daemon leads a session of its own, then ends: the daemon
        # left its group, but not the runner's tree.
        start = time.monotonic()
        out, _, end, _ = self.run_command(
            "setsid sleep 60 & d=$!; "
            "while [ \"$(cut -d' ' -f6 /proc/$d/stat)\" != $d ]; do :; done; echo $d")
        self.assertEqual(end["exit_code"], 0)
        self.assertLess(time.monotonic() - start, 5)
        self.assertFalse(alive(int(out)))
        self.assertEqual(self.run_command("echo next")[0], b"next\n")

    def test_kill_ends_a_daemon_and_an_orphan(self):
        with self.workdir() as tmp:
            pids = os.path.join(tmp, "pids")
            # An orphan (its parent exits at once) and a daemon (a session of its own).
            self.send({"type": "run", "argv": ["/bin/sh", "-c",
                                               f"(sleep 61 & echo $! >> {pids}) ; "
                                               f"setsid sleep 62 & echo $! >> {pids}; sleep 60"],
                       "env": ENV, "cwd": "/"})
            self.assertEqual(self.frame()[0], b"S")
            deadline = time.monotonic() + TIMEOUT
            while len(read_text(pids).split()) < 2:
                self.assertLess(time.monotonic(), deadline)
                time.sleep(0.01)
            left = [int(p) for p in read_text(pids).split()]
            self.send({"type": "kill"})
            kind, _ = self.frame()
        self.assertEqual(kind, b"X")
        self.assertEqual([p for p in left if alive(p)], [])
        self.assertEqual(self.children(), [])  # and every one of them reaped

    def children(self):
        with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children") as f:
            return f.read().split()

    def test_the_runner_ends_with_its_input(self):
        self.end_input()
        self.assertEqual(self.proc.wait(TIMEOUT), 0)

    def test_output_goes_out_while_the_command_runs(self):
        # Output is held only briefly: what a long command printed reaches the server before
        # its end.
        self.send({"type": "run", "argv": ["/bin/sh", "-c", "echo first; sleep 3; echo last"],
                   "env": ENV, "cwd": "/"})
        self.assertEqual(self.frame()[0], b"S")
        start = time.monotonic()
        self.assertEqual(self.frame(), (b"O", b"first\n"))
        self.assertLess(time.monotonic() - start, 2)
        self.assertEqual(self.frame(), (b"O", b"last\n"))
        self.assertEqual(self.frame()[0], b"X")

    def test_malformed_requests_are_refused_and_the_runner_goes_on(self):
        for bad, why in (({"argv": "ls"}, "argv must be a list"),
                         ({"argv": ["true"], "enter": "--filter"}, "malformed enter options")):
            self.send({"type": "run", "env": ENV, "cwd": "/", "nonce": "n", **bad})
            kind, payload = self.frame()
            self.assertEqual(kind, b"X")
            end = json.loads(payload)
            self.assertIn(why, end["error"])
            self.assertEqual(end["nonce"], "n")
        self.send({"type": 7})  # no run: nothing to answer
        self.assertEqual(self.run_command("echo still")[0], b"still\n")

    def test_a_missing_directory_is_an_error_and_the_runner_goes_on(self):
        _, err, end, _ = self.run_command("true", cwd="/no/such/dir")
        self.assertEqual(end["exit_code"], 126)
        self.assertEqual(err, b"byd-enter: cannot enter /no/such/dir: No such file or directory\n")
        self.assertEqual(self.run_command("echo still")[0], b"still\n")

    def test_commands_run_as_the_user_without_groups_or_capabilities(self):
        out, _, end, _ = self.run_command("id -u; id -g; id -G; grep CapEff /proc/self/status")
        self.assertEqual(out.decode().split(), [str(USER_UID)] * 3 + ["CapEff:", "0" * 16])

    def test_a_command_cannot_kill_the_runner(self):
        out, err, end, _ = self.run_command("kill -9 $PPID; echo $?")
        self.assertEqual(out, b"1\n")
        self.assertIn(b"not permitted", err)
        self.assertIsNone(self.proc.poll())
        self.assertEqual(self.run_command("echo next")[0], b"next\n")

    def test_the_exit_frame_carries_the_requests_nonce(self):
        self.assertEqual(self.run_command("true", nonce="n-123")[2]["nonce"], "n-123")
        self.assertEqual(self.run_command("true", cwd="/nonexistent", nonce="n-4")[2]["nonce"],
                         "n-4")

    def test_the_directory_is_entered_as_the_user(self):
        with self.workdir() as tmp:
            mine = os.path.join(tmp, "mine")
            os.mkdir(mine, 0o700)
            os.chown(mine, USER_UID, USER_UID)
            os.chmod(tmp, 0o755)
            out, _, end, _ = self.run_command("pwd", cwd=mine)
            self.assertEqual((out, end["exit_code"]), (mine.encode() + b"\n", 0))
            roots = os.path.join(tmp, "roots")
            os.mkdir(roots, 0o700)
            out, err, end, _ = self.run_command("pwd", cwd=roots)
            self.assertEqual((out, end["exit_code"]), (b"", 126))
            self.assertEqual(err.decode(),
                             f"byd-enter: cannot enter {roots}: Permission denied\n")

    def test_every_process_of_the_user_ends_with_a_command(self):
        # A process of the user outside the runner's tree (as one that escaped it would be).
        stray = subprocess.Popen(["sleep", "60"], user=USER_UID, group=USER_UID, extra_groups=[])
        try:
            self.assertEqual(self.run_command("echo done")[2]["exit_code"], 0)
            self.assertEqual(stray.wait(TIMEOUT), -9)
        finally:
            if stray.poll() is None:
                stray.kill()
                stray.wait()


class ConnectedRunnerTest(RunnerTest):
    """The same, with the runner's frames over its own connection to a unix socket
    (--connect, as the server has it connect to the socket it listens on), not its stdio."""

    def start(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        path = os.path.join(self.dir.name, "runner.sock")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        listener.listen(1)
        self.proc = subprocess.Popen(
            [ENTER, "--runner", f"{USER_UID}:{USER_UID}", "--connect", path],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0,
            start_new_session=True)
        listener.settimeout(TIMEOUT)
        self.conn, _ = listener.accept()
        listener.close()
        self.addCleanup(self.conn.close)
        self.reader = self.conn

    def write(self, data):
        self.conn.sendall(data)

    def end_input(self):
        self.conn.shutdown(socket.SHUT_WR)

    def test_nothing_goes_through_stdio(self):
        self.assertEqual(self.run_command("echo hi; echo oops >&2")[:2], (b"hi\n", b"oops\n"))
        self.conn.close()
        self.assertEqual(self.proc.wait(TIMEOUT), 0)  # its connection ended: so does it
        self.assertEqual(self.proc.stdout.read(), b"")
        self.assertEqual(self.proc.stderr.read(), b"")


@unittest.skipUnless(os.geteuid() == 0, "the runner starts as root and drops to its user")
class UnconnectedRunnerTest(unittest.TestCase):
    def test_a_runner_that_cannot_connect_speaks_through_stdio_and_says_why(self):
        missing = os.path.join(tempfile.gettempdir(), f"byd-no-such-{os.getpid()}.sock")
        proc = subprocess.run(
            [ENTER, "--runner", f"{USER_UID}:{USER_UID}", "--connect", missing],
            input=b"", capture_output=True, timeout=TIMEOUT)
        self.assertEqual(proc.returncode, 0)
        self.assertEqual(proc.stdout[:1], b"R")  # its greeting, on stdout
        self.assertEqual(proc.stderr.decode(),
                         f"cannot connect to {missing} (No such file or directory); "
                         "frames go through the exec\n")

    def test_connect_needs_its_socket(self):
        proc = subprocess.run([ENTER, "--runner", f"{USER_UID}:{USER_UID}", "--connect"],
                              input=b"", capture_output=True, timeout=TIMEOUT)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn(b"usage: byd-enter", proc.stderr)


if __name__ == "__main__":
    unittest.main()
