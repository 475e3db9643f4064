"""Tests of backends/python/kernel.py over its framed-JSON protocol, as the server drives it.

Run from the repository root: /usr/bin/python3 -m unittest tests/python/test_kernel.py -v
"""

import base64
import json
import os
import select
import signal
import struct
import subprocess
import sys
import tempfile
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KERNEL = os.path.join(ROOT, "backends", "python", "kernel.py")
PYTHON = "/usr/bin/python3"
TIMEOUT = 30  # seconds to wait for any one frame; a hang fails the test instead of blocking


class KernelProcess(unittest.TestCase):
    """A kernel started as the server starts it, and the protocol's client side."""

    def setUp(self):
        # The command line the server uses.
        self.proc = subprocess.Popen([PYTHON, "-I", "-S", "-u", KERNEL], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
        self.pending = b""
        self.ready = self.recv()

    def tearDown(self):
        try:  # the kernel leads a group of its own: whatever a failed test left goes with it
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            f.close()

    # -- the protocol, client side --

    def send_raw(self, body):
        self.proc.stdin.write(struct.pack(">I", len(body)) + body)

    def send(self, msg):
        self.send_raw(json.dumps(msg).encode())

    def _read(self, n):
        deadline = time.monotonic() + TIMEOUT
        while len(self.pending) < n:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.proc.stdout], [], [], left)[0]:
                self.fail(f"no frame from the kernel within {TIMEOUT} s")
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
            if not chunk:
                self.fail("kernel closed stdout; stderr: " + self.proc.stderr.read().decode())
            self.pending += chunk
        data, self.pending = self.pending[:n], self.pending[n:]
        return data

    def recv(self):
        (size,) = struct.unpack(">I", self._read(4))
        return json.loads(self._read(size).decode("utf-8"))

    def run_cell(self, code, **extra):
        self.send({"type": "exec", "id": 1, "code": code, **extra})
        reply = self.recv()
        self.assertEqual(reply["type"], "result")
        self.assertEqual(reply["id"], 1)
        return reply

    def ok(self, code, **extra):
        reply = self.run_cell(code, **extra)
        self.assertIsNone(reply["error"], reply["error"] and reply["error"]["traceback"])
        return reply

    def assert_alive(self):
        self.send({"type": "ping", "id": "alive?"})
        self.assertEqual(self.recv(), {"type": "pong", "id": "alive?"})


class KernelTest(KernelProcess):
    def test_ready(self):
        self.assertEqual(self.ready["type"], "ready")
        self.assertEqual(self.ready["python"], "%d.%d.%d" % sys.version_info[:3])
        self.assertEqual(self.ready["pid"], self.proc.pid)

    def test_reply_shape(self):
        reply = self.ok("1")
        self.assertEqual(set(reply), {"type", "id", "stdout", "stderr", "result", "error",
                                      "duration_ms", "images", "truncated"})
        self.assertIsInstance(reply["duration_ms"], float)
        self.assertGreaterEqual(reply["duration_ms"], 0)
        self.assertEqual(reply["images"], [])
        self.assertIs(reply["truncated"], False)

    def test_state_persists(self):
        self.ok("x = 41\ndef inc(v):\n    return v + 1")
        self.assertEqual(self.ok("inc(x)")["result"], "42")
        self.assertEqual(self.ok("__name__")["result"], "'__main__'")
        self.ok("import math")
        self.assertEqual(self.ok("math.floor(2.5)")["result"], "2")

    def test_trailing_expression(self):
        self.assertEqual(self.ok("1 + 1")["result"], "2")
        self.assertEqual(self.ok("y = 2; y * 3")["result"], "6")
        self.assertEqual(self.ok("'s'")["result"], "'s'")
        self.assertEqual(self.ok("for i in range(3):\n    pass\n[i] * 2")["result"], "[2, 2]")
        self.assertIsNone(self.ok("None")["result"])
        self.assertIsNone(self.ok("z = 5")["result"])  # an assignment is not an expression
        self.assertIsNone(self.ok("print('p')")["result"])  # print returns None
        self.assertIsNone(self.ok("")["result"])
        self.assertIsNone(self.ok("# only a comment")["result"])
        # Only the last statement is evaluated separately, and only once.
        self.assertEqual(self.ok("n = []\nn.append(1)\nn.append(2) or len(n)")["result"], "2")

    def test_print_capture(self):
        reply = self.ok("print('hello')\nprint('a', 'b', sep='-')\nprint('é')")
        self.assertEqual(reply["stdout"], "hello\na-b\né\n")
        self.assertEqual(reply["stderr"], "")
        self.assertEqual(self.ok("1")["stdout"], "")  # nothing carried over
        reply = self.ok("import sys\nsys.stdout.buffer.write(b'raw\\n')\nsys.stdout.flush()")
        self.assertEqual(reply["stdout"], "raw\n")

    def test_stderr_capture(self):
        reply = self.ok("import sys\nprint('oops', file=sys.stderr)\nsys.stderr.write('more\\n')"
                        "\nprint('out')")
        self.assertEqual(reply["stderr"], "oops\nmore\n")
        self.assertEqual(reply["stdout"], "out\n")
        reply = self.ok("import warnings\nwarnings.warn('careful')")
        self.assertIn("UserWarning: careful", reply["stderr"])

    def test_exception_traceback(self):
        reply = self.run_cell("def f(a):\n    return a / 0\n\nf(1)\n")
        error = reply["error"]
        self.assertEqual(error["type"], "ZeroDivisionError")
        self.assertEqual(error["message"], "division by zero")
        tb = error["traceback"]
        self.assertTrue(tb.startswith("Traceback (most recent call last):\n"), tb)
        self.assertTrue(tb.endswith("ZeroDivisionError: division by zero\n"), tb)
        frames = [line for line in tb.splitlines() if line.startswith("  File ")]
        self.assertEqual(len(frames), 2, tb)
        self.assertRegex(frames[0], r'^  File "<cell( \d+)?>", line 4, in <module>$')
        self.assertRegex(frames[1], r'^  File "<cell( \d+)?>", line 2, in f$')
        self.assertIn("    return a / 0\n", tb)  # the source line is shown
        self.assertNotIn("kernel.py", tb)
        self.assertIsNone(reply["result"])

    def test_exception_in_function_from_earlier_cell(self):
        self.ok("x = 1\n\ndef g():\n    raise ValueError('bad ' + str(x))")
        tb = self.run_cell("y = 2\ng()")["error"]["traceback"]
        self.assertRegex(tb, r'File "<cell( \d+)?>", line 2, in <module>\n    g\(\)\n')
        self.assertRegex(tb, r"File \"<cell( \d+)?>\", line 4, in g\n"
                             r"    raise ValueError\('bad ' \+ str\(x\)\)\n")
        self.assertTrue(tb.endswith("ValueError: bad 1\n"), tb)

    def test_chained_exception_hides_kernel(self):
        tb = self.run_cell("try:\n    {}['k']\nexcept KeyError as e:\n    raise RuntimeError('w') from e"
                           )["error"]["traceback"]
        self.assertIn("KeyError: 'k'", tb)
        self.assertIn("direct cause", tb)
        self.assertNotIn("kernel.py", tb)

    def test_output_before_error_is_kept(self):
        reply = self.run_cell("print('before')\nraise KeyError('k')")
        self.assertEqual(reply["stdout"], "before\n")
        self.assertEqual(reply["error"]["type"], "KeyError")

    def test_syntax_error(self):
        error = self.run_cell("a = 1\nb = = 2\n")["error"]
        self.assertEqual(error["type"], "SyntaxError")
        self.assertIn("line 2", error["message"])
        self.assertIn("b = = 2", error["traceback"])
        self.assertNotIn("kernel.py", error["traceback"])
        error = self.run_cell("x = (")["error"]
        self.assertEqual(error["type"], "SyntaxError")
        self.assertIn("never closed", error["message"])
        self.assertEqual(self.run_cell("if True:\nx = 1")["error"]["type"], "IndentationError")
        # Nothing of a cell that does not compile runs.
        self.ok("a = 0")
        self.run_cell("a = 1\n)")
        self.assertEqual(self.ok("a")["result"], "0")

    def test_system_exit(self):
        error = self.run_cell("import sys\nkept = True\nsys.exit(3)")["error"]
        self.assertEqual(error["type"], "SystemExit")
        self.assertEqual(error["message"], "3")
        self.assertEqual(self.run_cell("raise SystemExit")["error"]["type"], "SystemExit")
        self.assertEqual(self.ok("kept")["result"], "True")
        self.assertIsNone(self.proc.poll())

    def test_output_cap(self):
        reply = self.ok("print('x' * 5000)\nprint('more')\nafter = 'ran'", max_output=1000)
        self.assertEqual(reply["stdout"], "x" * 1000)
        self.assertIs(reply["truncated"], True)
        self.assertEqual(self.ok("after")["result"], "'ran'")  # execution went on
        # Cut on a character boundary: 'é' is 2 bytes in UTF-8.
        reply = self.ok("print('é' * 1000)", max_output=1001)
        self.assertEqual(reply["stdout"], "é" * 500)
        self.assertIs(reply["truncated"], True)
        # Each stream has its own cap.
        reply = self.ok("import sys\nprint('o' * 20)\nprint('e' * 20, file=sys.stderr)", max_output=10)
        self.assertEqual((reply["stdout"], reply["stderr"]), ("o" * 10, "e" * 10))
        # The default (100 KiB) leaves ordinary output alone.
        reply = self.ok("print('y' * 50000)")
        self.assertEqual(len(reply["stdout"]), 50001)
        self.assertIs(reply["truncated"], False)
        # Under the default cap a long loop of prints completes and is cut.
        reply = self.ok("for i in range(100000):\n    print(i)\ni")
        self.assertEqual(len(reply["stdout"].encode()), 102400)
        self.assertEqual(reply["result"], "99999")
        self.assertIs(reply["truncated"], True)

    def test_result_cap(self):
        reply = self.ok("'z' * 5000", max_output=100)
        self.assertEqual(reply["result"], "'" + "z" * 99)
        self.assertIs(reply["truncated"], True)

    def interrupted(self, before, after):
        """Runs a cell of `before`, a line that says it got there, and `after`; interrupts it
        once it has (so the signal cannot come before the cell runs) and returns the reply."""
        with tempfile.TemporaryDirectory() as tmp:
            started = os.path.join(tmp, "started")
            self.send({"type": "exec", "id": 1,
                       "code": before + f"open({started!r}, 'w').close()\n" + after})
            deadline = time.monotonic() + TIMEOUT
            while not os.path.exists(started):
                self.assertLess(time.monotonic(), deadline, "the cell never started")
                time.sleep(0.01)
            time.sleep(0.05)
            self.proc.send_signal(signal.SIGINT)
            return self.recv()

    def test_sigint_interrupts_cell(self):
        self.ok("kept = 'yes'")
        reply = self.interrupted("n = 0\n", "while True:\n    n += 1\n")
        error = reply["error"]
        self.assertEqual(error["type"], "KeyboardInterrupt")
        self.assertEqual(error["message"], "interrupted (timeout)")
        self.assertRegex(error["traceback"], r'File "<cell( \d+)?>", line [34], in <module>')
        self.assertNotIn("kernel.py", error["traceback"])
        self.assertEqual(self.ok("(kept, n > 0)")["result"], "('yes', True)")

    def test_an_interrupted_cell_says_which_threads_run_on(self):
        # A thread cannot be interrupted: the reply says it goes on, rather than that the
        # cell simply ended.
        error = self.interrupted("import threading, time\n"
                                 "def spin():\n"
                                 "    while True:\n"
                                 "        pass\n"
                                 "threading.Thread(target=spin, daemon=True).start()\n",
                                 "time.sleep(60)\n")["error"]
        self.assertEqual(error["type"], "KeyboardInterrupt")
        self.assertEqual(error["message"], "interrupted (timeout); 1 thread(s) the cell started "
                                           "are still running (threads cannot be interrupted): "
                                           "reset the session to stop them")
        self.assertEqual(error["threads_running"], 1)

    def test_sigint_interrupts_sleep(self):
        self.send({"type": "exec", "id": 1, "code": "import time\ntime.sleep(60)"})
        time.sleep(0.5)
        self.proc.send_signal(signal.SIGINT)
        self.assertEqual(self.recv()["error"]["type"], "KeyboardInterrupt")

    def test_interrupt_ends_what_the_cell_started(self):
        self.ok("import os, subprocess, time\nolder = subprocess.Popen(['sleep', '60'])")
        time.sleep(0.05)  # a clock tick (the resolution of /proc's start times) and more
        with tempfile.TemporaryDirectory() as tmp:
            started = os.path.join(tmp, "started")
            # Forks that spin, a fork of a fork, and a subprocess: all begun by this cell.
            self.send({"type": "exec", "id": 1, "code":
                       "kids = [subprocess.Popen(['sleep', '60']).pid]\n"
                       "for _ in range(4):\n"
                       "    pid = os.fork()\n"
                       "    if pid == 0:\n"
                       "        os.fork()\n"
                       "        while True:\n"
                       "            pass\n"
                       "    kids.append(pid)\n"
                       f"open({started!r}, 'w').close()\n"
                       "time.sleep(60)\n"})
            deadline = time.monotonic() + TIMEOUT
            # The older sleep, this cell's sleep, 4 forks and a fork of each.
            while not os.path.exists(started) or len(self.group_members()) < 1 + 1 + 8:
                self.assertLess(time.monotonic(), deadline, f"the cell never started them all: "
                                f"{self.group_members()}")
                time.sleep(0.01)
            self.proc.send_signal(signal.SIGINT)
            reply = self.recv()
        self.assertEqual(reply["error"]["type"], "KeyboardInterrupt")
        # The earlier cell's process is left alone; everything this cell began is gone.
        self.assertEqual(self.ok("older.poll()")["result"], None)
        older = int(self.ok("older.pid")["result"])
        self.assertEqual(self.group_members(), [older])
        with open(f"/proc/{older}/stat") as f:  # halted by the interrupt, then resumed
            self.assertNotIn(f.read().rsplit(")", 1)[1].split()[0], ("T", "t"))
        self.ok("older.kill(); older.wait()")

    def group_members(self):
        """Live processes (not zombies) of the kernel's process group, the kernel excluded."""
        members = []
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) == self.proc.pid:
                continue
            try:
                with open(f"/proc/{name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except (FileNotFoundError, ProcessLookupError):
                continue
            if int(fields[2]) == self.proc.pid and fields[0] != "Z":
                members.append(int(name))
        return sorted(members)

    def test_sigint_while_idle_is_ignored(self):
        self.ok("v = 1")
        self.proc.send_signal(signal.SIGINT)  # a timeout that lost the race with the reply
        time.sleep(0.2)
        self.assertEqual(self.ok("v")["result"], "1")

    def test_sigint_handler_restored_after_user_replaces_it(self):
        self.ok("import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)")
        self.send({"type": "exec", "id": 1, "code": "import time\ntime.sleep(60)"})
        time.sleep(0.5)
        self.proc.send_signal(signal.SIGINT)
        self.assertEqual(self.recv()["error"]["type"], "KeyboardInterrupt")

    def test_user_keyboard_interrupt_keeps_its_message(self):
        error = self.run_cell("raise KeyboardInterrupt('mine')")["error"]
        self.assertEqual((error["type"], error["message"]), ("KeyboardInterrupt", "mine"))

    def test_memory_error(self):
        # 2**60 bytes exceed any 64-bit address space, so this fails before allocating anything
        # (10**13 might be granted under memory overcommit, and then zero-filled).
        error = self.run_cell("kept = 1\nbuf = bytearray(1 << 60)")["error"]
        self.assertIn(error["type"], ("MemoryError", "OverflowError"))
        self.assertEqual(self.ok("kept")["result"], "1")

    def test_ping(self):
        self.send({"type": "ping", "id": 42})
        self.assertEqual(self.recv(), {"type": "pong", "id": 42})

    def test_malformed_requests(self):
        cases = [
            (b"not json", None),
            (b"\xff\xfe", None),  # not UTF-8
            (b"[1, 2]", None),
            (json.dumps({"type": "bogus", "id": 7}).encode(), 7),
            (json.dumps({"id": 8}).encode(), 8),
            (json.dumps({"type": "exec", "id": 9}).encode(), 9),  # no code
            (json.dumps({"type": "exec", "id": 10, "code": 5}).encode(), 10),
            (json.dumps({"type": "exec", "id": 11, "code": "1", "max_output": "x"}).encode(), 11),
            (b"", None),
        ]
        for body, req_id in cases:
            with self.subTest(body=body):
                self.send_raw(body)
                reply = self.recv()
                self.assertEqual(reply["type"], "error")
                self.assertEqual(reply["id"], req_id)
                self.assertIsInstance(reply["message"], str)
                self.assertTrue(reply["message"])
        self.assert_alive()
        self.assertEqual(self.ok("1 + 2")["result"], "3")

    def test_shutdown(self):
        self.ok("x = 1")
        self.send({"type": "shutdown"})
        self.assertEqual(self.proc.wait(TIMEOUT), 0)
        self.assertEqual(self.proc.stdout.read(), b"")  # no reply, nothing after

    def test_eof_exits(self):
        self.proc.stdin.close()
        self.assertEqual(self.proc.wait(TIMEOUT), 0)

    def test_protocol_stream_is_protected(self):
        # Writes to the real fd 1 land on stderr; stdin reads see EOF instead of the requests.
        reply = self.ok("import os, sys, subprocess\nos.write(1, b'junk')\n"
                        "sys.__stdout__.write('more junk')\n"
                        "subprocess.run(['/bin/echo', 'child'])\n"
                        "try:\n    input()\nexcept EOFError:\n    got = 'eof'\ngot")
        self.assertEqual(reply["result"], "'eof'")
        self.assert_alive()

    def test_a_cell_waits_for_its_own_fork(self):
        # The child has long exited (its SIGCHLD has come) when the cell waits for it: the
        # kernel's reaping of forks must not have taken it from the cell.
        reply = self.ok("import os, time\npid = os.fork()\nif pid == 0:\n    os._exit(3)\n"
                        "time.sleep(0.3)\nos.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])")
        self.assertEqual(reply["result"], "3")
        self.assert_alive()

    def test_fork_child_never_replies(self):
        reply = self.ok("import os\npid = os.fork()\nif pid == 0:\n    print('child')\n"
                        "else:\n    os.waitpid(pid, 0)\n'parent'")
        self.assertEqual(reply["result"], "'parent'")
        self.assertEqual(reply["stdout"], "")
        self.assert_alive()  # the next frame is the pong, not a stray reply from the child

    def zombies(self):
        """This kernel's children that have exited but were not waited for."""
        with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children") as f:
            children = f.read().split()
        states = []
        for pid in children:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    states.append(f.read().rsplit(")", 1)[1].split()[0])
            except FileNotFoundError:
                pass
        return states.count("Z")

    def test_forked_children_are_reaped(self):
        reply = self.ok("import os, time\nfor _ in range(20):\n    os.fork()\n    break\n"
                        "kids = [os.fork() for _ in range(5)]\ntime.sleep(0.2)\n'done'")
        self.assertEqual(reply["result"], "'done'")
        time.sleep(0.5)
        self.ok("import time\ntime.sleep(0.1)")  # reaps what ended during the pause
        self.assertEqual(self.zombies(), 0)
        self.assert_alive()

    def test_surrogates_do_not_break_the_stream(self):
        reply = self.ok("print('\\ud800')\n'ok'")
        self.assertEqual(reply["result"], "'ok'")
        self.assertEqual(reply["stdout"], "?\n")

    def test_matplotlib_not_imported_by_kernel(self):
        self.assertEqual(self.ok("import sys\n'matplotlib' in sys.modules")["result"], "False")

    def test_matplotlib_figure(self):
        reply = self.ok("import matplotlib\nimport matplotlib.pyplot as plt\n"
                        "plt.plot([1, 2, 3], [1, 4, 9])\nmatplotlib.get_backend()")
        self.assertEqual(reply["result"], "'agg'")
        self.assertEqual(len(reply["images"]), 1)
        image = reply["images"][0]
        self.assertEqual(image["mime"], "image/png")
        self.assertTrue(base64.b64decode(image["data"]).startswith(b"\x89PNG\r\n\x1a\n"))
        # Figures are closed once sent.
        self.assertEqual(self.ok("len(plt.get_fignums())")["images"], [])
        self.assertEqual(self.ok("len(plt.get_fignums())")["result"], "0")
        # Two figures, two images; a failed cell's figure is dropped, not sent later.
        self.assertEqual(len(self.ok("plt.figure(); plt.plot([1]); plt.figure(); plt.plot([2])"
                                     )["images"]), 2)
        self.assertEqual(self.run_cell("plt.plot([1])\n1/0")["images"], [])
        self.assertEqual(self.ok("1")["images"], [])


if __name__ == "__main__":
    unittest.main()


class SharedModulesTest(KernelProcess):
    def test_a_cell_that_breaks_json_or_os_write_does_not_break_the_session(self):
        self.ok("import json, os\njson.dumps = json.loads = os.write = None")
        self.assertEqual(self.ok("6 * 7")["result"], "42")


class IsolatedRunTest(KernelProcess):
    """The template mode: each isolated run is a fork that sees nothing of any other. Without
    "sweep" (this kernel shares the host's pid namespace and /tmp), only the run's own process
    group is ended; the server's kernels sweep their namespace too (tested end to end)."""

    def iso(self, code, **extra):
        self.send({"type": "isolated", "id": 7, "code": code, **extra})
        reply = self.recv()
        self.assertEqual((reply["type"], reply["id"]), ("result", 7), reply)
        return reply

    def test_runs_see_nothing_of_each_other_or_of_the_template(self):
        self.assertIsNone(self.iso("x = 41\nimport json\njson.marker = 1")["error"])
        r = self.iso("import json\n(globals().get('x'), hasattr(json, 'marker'), __name__)")
        self.assertEqual(r["result"], "(None, False, '__main__')", r)
        self.assertEqual(self.iso("import os\nos.getpid() != " + str(self.ready["pid"]))
                         ["result"], "True")
        # A template runs no cell itself.
        self.send({"type": "exec", "id": 9, "code": "globals().get('x')"})
        refused = self.recv()
        self.assertEqual(refused["type"], "error")
        self.assertIn("template", refused["message"])

    def test_a_fork_that_outlives_the_run_does_not_hold_its_result(self):
        start = time.monotonic()
        r = self.iso("import os, time\nif os.fork() == 0:\n    time.sleep(30)\n'done'",
                     timeout_ms=20000)
        self.assertEqual(r["result"], "'done'", r)
        self.assertFalse(r["timed_out"])
        self.assertLess(time.monotonic() - start, 10)

    def test_stdin_output_errors_and_the_result_shape(self):
        r = self.iso("import sys\nprint(sys.stdin.read().upper())\n1/0", stdin="abc\n")
        self.assertEqual(r["stdout"], "ABC\n\n")
        self.assertEqual(r["error"]["type"], "ZeroDivisionError")
        self.assertFalse(r["timed_out"])

    def test_a_run_is_killed_at_its_timeout_and_the_template_goes_on(self):
        start = time.monotonic()
        r = self.iso("while True: pass", timeout_ms=300)
        self.assertLess(time.monotonic() - start, 5)
        self.assertTrue(r["timed_out"])
        self.assertEqual(r["error"]["message"], "interrupted (timeout)")
        self.assertEqual(self.iso("6*7")["result"], "42")

    def test_what_a_run_started_ends_with_it(self):
        r = self.iso("import subprocess\np = subprocess.Popen(['sleep', '60'])\np.pid")
        pid = int(r["result"])
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    if f.read().split(") ")[1].startswith(("Z", "X")):
                        break
            except FileNotFoundError:
                break
            time.sleep(0.02)
        else:
            self.fail(f"the run's background process {pid} outlived it")

    def test_a_memory_limit_holds_for_its_run_only(self):
        r = self.iso("b = bytearray(512 << 20)", memory=256 << 20)
        self.assertEqual(r["error"]["type"], "MemoryError", r)
        self.assertIsNone(self.iso("b = bytearray(64 << 20)\nlen(b)")["error"])

    def test_a_run_that_dies_is_reported(self):
        r = self.iso("import os\nos._exit(3)")
        self.assertEqual(r["error"]["type"], "RunEnded", r)
        r = self.iso("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)")
        self.assertEqual(r["error"]["type"], "RunKilled", r)
        self.assertEqual(self.iso("1+1")["result"], "2")

    def test_preload_imports_into_the_template_and_reports_failures(self):
        self.send({"type": "preload", "id": 3, "modules": ["json", "no_such_module_x"]})
        r = self.recv()
        self.assertEqual(r["type"], "preloaded")
        self.assertEqual(len(r["failed"]), 1)
        self.assertIn("no_such_module_x", r["failed"][0])
        self.assertEqual(self.iso("import sys\n'json' in sys.modules")["result"], "True")

    def test_a_run_that_breaks_shared_modules_still_gets_its_reply(self):
        r = self.iso("import json, os\njson.dumps = json.loads = os.write = None\n'still'")
        self.assertEqual(r["result"], "'still'", r)

    def test_malformed_isolated_requests_are_refused(self):
        self.send({"type": "isolated", "id": 4, "code": 1})
        self.assertEqual(self.recv()["type"], "error")
        self.send({"type": "isolated", "id": 5, "code": "1", "memory": -1})
        self.assertEqual(self.recv()["type"], "error")
        self.assertEqual(self.iso("1")["result"], "1")


class ForkTest(KernelProcess):
    """fork: the kernel forks a new session that serves on a unix socket the server listens on."""

    def fork(self):
        """A fork of the kernel, and a function that sends one exec to it and returns the reply."""
        import socket
        path = os.path.join(tempfile.mkdtemp(), "fork.sock")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        listener.listen(1)
        self.addCleanup(listener.close)
        self.send({"type": "fork", "id": 7, "path": path})
        reply = self.recv()
        self.assertEqual(reply.get("type"), "result", reply)
        self.assertIsInstance(reply.get("forked"), int)
        listener.settimeout(TIMEOUT)
        conn, _ = listener.accept()
        self.addCleanup(conn.close)
        conn.settimeout(TIMEOUT)
        stream = conn.makefile("rwb", buffering=0)

        def frame():
            return json.loads(self._read_frame(conn))

        self._child_stream, self._child_frame = stream, frame

        ready = frame()
        self.assertEqual(ready["type"], "ready")
        self.assertEqual(ready["pid"], reply["forked"])

        def run(code):
            body = json.dumps({"type": "exec", "id": 1, "code": code}).encode()
            stream.write(struct.pack(">I", len(body)) + body)
            return frame()

        return run, reply["forked"]

    def test_both_branches_diverge_and_the_parent_is_unchanged(self):
        self.ok("data = list(range(5)); import os; os.chdir('/tmp')")
        run, pid = self.fork()
        child = run("data.append('child'); (data, os.getcwd())")
        self.assertIsNone(child["error"])
        self.assertEqual(child["result"], "([0, 1, 2, 3, 4, 'child'], '/tmp')")
        self.assertEqual(self.ok("data.append('parent'); data")["result"],
                         "[0, 1, 2, 3, 4, 'parent']")
        self.assertEqual(run("data")["result"], "[0, 1, 2, 3, 4, 'child']")
        # Its own process group: an interrupt of the fork halts nothing of its parent's.
        self.assertEqual(run("os.getpgid(0) == os.getpid()")["result"], "True")
        self.assertNotEqual(pid, self.proc.pid)

    def test_the_fork_is_interrupted_alone(self):
        run, pid = self.fork()
        import threading
        timer = threading.Timer(0.5, os.kill, (pid, signal.SIGINT))
        timer.start()
        reply = run("import time\nwhile True: time.sleep(0.01)")
        timer.join()
        self.assertEqual(reply["error"]["type"], "KeyboardInterrupt")
        self.assertEqual(run("1 + 1")["result"], "2")
        self.assertEqual(self.ok("2 + 2")["result"], "4")

    def test_a_fork_of_a_fork(self):
        self.ok("v = ['root']")
        run, _ = self.fork()
        self.assertIsNone(run("v.append('child')")["error"])
        # The child forks in turn, driven over its own channel.
        import socket
        path = os.path.join(tempfile.mkdtemp(), "grand.sock")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        listener.listen(1)
        self.addCleanup(listener.close)
        # A fork request goes over the child's channel as its exec frames do.
        body = json.dumps({"type": "fork", "id": 9, "path": path}).encode()
        self._child_stream.write(struct.pack(">I", len(body)) + body)
        reply = self._child_frame()
        self.assertEqual(reply.get("forked") and reply["type"], "result", reply)
        listener.settimeout(TIMEOUT)
        conn, _ = listener.accept()
        self.addCleanup(conn.close)
        stream = conn.makefile("rwb", buffering=0)
        self.assertEqual(json.loads(self._read_frame(conn))["type"], "ready")
        body = json.dumps({"type": "exec", "id": 1, "code": "v.append('grand'); v"}).encode()
        stream.write(struct.pack(">I", len(body)) + body)
        reply = json.loads(self._read_frame(conn))
        self.assertEqual(reply["result"], "['root', 'child', 'grand']", reply)
        self.assertEqual(run("v")["result"], "['root', 'child']")

    @staticmethod
    def _read_frame(conn):
        data = b""
        while len(data) < 4:
            data += conn.recv(4 - len(data))
        (size,) = struct.unpack(">I", data)
        body = b""
        while len(body) < size:
            body += conn.recv(size - len(body))
        return body

    def children(self):
        pids = set()
        for name in os.listdir("/proc"):
            try:
                with open(f"/proc/{name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[1]) == self.proc.pid and fields[0] != "Z":
                pids.add(int(name))
        return pids

    def test_a_later_fork_copies_the_state_after_a_later_cell(self):
        # A session forked once keeps a fork of itself ready; a cell makes it stale.
        self.ok("v = 1")
        run1, _ = self.fork()
        self.assertEqual(run1("v")["result"], "1")
        self.ok("v = 2")
        run2, _ = self.fork()
        self.assertEqual(run2("v")["result"], "2")
        run3, _ = self.fork()  # straight after another fork: the one made ready meanwhile
        self.assertEqual(run3("v")["result"], "2")

    def test_a_fork_asked_while_a_thread_runs_copies_that_moment(self):
        self.ok("v = 0")
        self.fork()  # from now on a fork waits ready after each reply
        self.ok("import threading, time\n"
                "def bump():\n"
                "    global v\n"
                "    while v < 10**9:\n"
                "        v += 1\n"
                "        time.sleep(0.001)\n"
                "threading.Thread(target=bump, daemon=True).start()")
        time.sleep(0.3)
        run, _ = self.fork()
        # Not the copy made right after the cell (v about 0), but one of this moment.
        self.assertGreater(int(run("v")["result"]), 20)

    def test_the_fork_made_ready_ends_with_its_kernel(self):
        self.ok("v = 1")
        run, pid = self.fork()
        deadline = time.monotonic() + TIMEOUT
        while not (self.children() - {pid}) and time.monotonic() < deadline:
            time.sleep(0.01)
        standby = self.children() - {pid}
        self.assertEqual(len(standby), 1, standby)
        self.proc.stdin.close()
        self.proc.wait(TIMEOUT)
        (spare,) = standby
        while os.path.exists(f"/proc/{spare}") and time.monotonic() < deadline:
            time.sleep(0.01)
        # It exited (reparented and reaped, or a zombie of whoever adopted it).
        try:
            with open(f"/proc/{spare}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            state = "gone"
        self.assertIn(state, ("gone", "Z"))
        self.assertEqual(run("v")["result"], "1")  # the fork itself lives on

    def test_a_template_does_not_fork_and_a_bad_path_is_an_error(self):
        self.send({"type": "fork", "id": 3})
        self.assertEqual(self.recv()["type"], "error")
        self.send({"type": "preload", "id": 4, "modules": []})
        self.recv()
        self.send({"type": "fork", "id": 5, "path": "/nonexistent/x.sock"})
        reply = self.recv()
        self.assertEqual(reply["type"], "error")
        self.assertIn("template", reply["message"])
