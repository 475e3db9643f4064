"""End to end: run_python's isolated runs. Each sees nothing of another run or of any session
(a variable, a file in /tmp, a background process, a changed module attribute) and leaves
nothing behind; an infinite loop, a memory hog and a fork bomb fail their own run only, and
the next run (and the server) goes on.

Usage: isolated_test.py BINARY [--backend docker --runtime runc|runsc]
"""

import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mcp_client import Client, binary_and_backend, text  # noqa: E402

BINARY, EXTRA = binary_and_backend(sys.argv)

LEAVE_TRACES = """
import json, os, subprocess
x = 41
json.dumps = None
open('/tmp/left-behind', 'w').write('x')
subprocess.Popen(['sleep', '300'], start_new_session=True)
os.getpid()
"""

LOOK_FOR_TRACES = """
import json, os
procs = [p for p in os.listdir('/proc') if p.isdigit() and os.stat(f'/proc/{p}').st_uid ==
         os.getuid() and open(f'/proc/{p}/cmdline', 'rb').read().startswith(b'sleep')]
(globals().get('x'), json.dumps is None, os.path.exists('/tmp/left-behind'), procs)
"""


class Isolated(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="byd-iso-")
        os.chmod(cls.tmp.name, 0o777)
        cls.client = Client(BINARY, "--root", cls.tmp.name, "--ruleset", "permissive",
                            "--python-packages", os.path.join(cls.tmp.name, ".packages"),
                            *EXTRA)

    @classmethod
    def tearDownClass(cls):
        code = cls.client.close()
        cls.tmp.cleanup()
        assert code == 0, f"server exit code {code}"

    def tearDown(self):
        self.assertTrue(self.client.ping())

    def iso(self, code, **args):
        r = self.client.call("run_python", code=code, isolated=True, **args)
        return r, r.get("structuredContent", {})

    def test_a_run_sees_nothing_of_another_and_leaves_nothing(self):
        r, sc = self.iso(LEAVE_TRACES)
        self.assertIsNone(sc["error"], text(r))
        r, sc = self.iso(LOOK_FOR_TRACES)
        self.assertEqual(sc["result"], "(None, False, False, [])", text(r))
        self.assertEqual((sc["session"], sc["new_session"]), ("", False))

    def test_sessions_and_isolated_runs_do_not_meet(self):
        r = self.client.call("run_python", code="shared = 'session'", session="iso-s")
        self.assertFalse(r.get("isError"), text(r))
        r, sc = self.iso("globals().get('shared')")
        self.assertIsNone(sc["result"], text(r))
        self.iso("shared = 'isolated'")
        r = self.client.call("run_python", code="shared", session="iso-s")
        self.assertEqual(r["structuredContent"]["result"], "'session'", text(r))

    def test_an_infinite_loop_fails_its_run_only(self):
        r, sc = self.iso("while True: pass", timeout_s=2)
        self.assertTrue(r.get("isError"))
        self.assertTrue(sc["timed_out"], text(r))
        self.assertIn("left nothing behind", text(r))
        r, sc = self.iso("6 * 7")
        self.assertEqual(sc["result"], "42", text(r))

    def test_a_memory_hog_fails_its_run_only(self):
        # Refused at once (MemoryError), ended by the sandbox's memory limit (RunKilled), or,
        # where memory is handed out slowly (gVisor), stopped at its timeout.
        r, sc = self.iso("b = bytearray(8 << 30)\nlen(b)", timeout_s=10)
        self.assertTrue(r.get("isError"), text(r))
        self.assertIn(sc["error"]["type"], ("MemoryError", "RunKilled", "KeyboardInterrupt"),
                      text(r))
        r, sc = self.iso("len(bytearray(16 << 20))")
        self.assertEqual(sc["result"], str(16 << 20), text(r))

    def test_a_fork_bomb_fails_its_run_only(self):
        r, sc = self.iso("import os\nwhile True:\n    try:\n        os.fork()\n"
                         "    except OSError:\n        pass", timeout_s=3)
        self.assertTrue(r.get("isError"), text(r))
        r, sc = self.iso(LOOK_FOR_TRACES)
        self.assertEqual(sc["result"], "(None, False, False, [])", text(r))
        r, sc = self.iso("import os\nlen([p for p in os.listdir('/proc') if p.isdigit()])")
        self.assertLess(int(sc["result"]), 10, text(r))  # init, the template, this run

    def test_isolated_with_a_session_is_refused(self):
        r = self.client.call("run_python", code="1", isolated=True, session="a")
        self.assertTrue(r.get("isError"))
        self.assertIn("an isolated run has no session", text(r))


if __name__ == "__main__":
    unittest.main()
