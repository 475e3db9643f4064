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
from mcp_client import ServerCase, binary_and_backend, text  # noqa: E402

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


class Isolated(ServerCase):
    BINARY = BINARY
    PREFIX = "byd-iso-"

    @classmethod
    def server_args(cls):
        cls.packages = tempfile.TemporaryDirectory(prefix="byd-iso-pk-")
        return ["--ruleset", "permissive", "--python-packages", cls.packages.name, *EXTRA]

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        cls.packages.cleanup()

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

    def test_a_run_cannot_reach_its_template(self):
        # It writes a request into every descriptor of its template it can open: a run that
        # would leave a file behind. The template serves none of them (it cannot be opened,
        # or the template retires), and the next run is as good as ever.
        inject = ("import json, os, struct\nppid = os.getppid()\n"
                  "body = json.dumps({'type': 'isolated', 'id': 999, 'sweep': False,"
                  " 'code': 'open(\"injected\", \"w\").write(\"x\")'}).encode()\n"
                  "opened = []\nfor fd in range(64):\n    try:\n"
                  "        f = os.open(f'/proc/{ppid}/fd/{fd}', os.O_WRONLY | os.O_NONBLOCK)\n"
                  "    except OSError:\n        continue\n    opened.append(fd)\n    try:\n"
                  "        os.write(f, struct.pack('>I', len(body)) + body)\n"
                  "    except OSError:\n        pass\n    os.close(f)\nopened")
        self.iso(inject)  # its own result may be spoiled by what it wrote: its own doing
        r, sc = self.iso("6 * 7")
        self.assertEqual(sc["result"], "42", text(r))
        r, sc = self.iso("import os\nos.path.exists('injected')")
        self.assertEqual(sc["result"], "False", text(r))
        self.assertFalse(os.path.exists(os.path.join(self.tmp.name, "injected")))

    def test_closed_directories_and_ipc_objects_do_not_outlive_a_run(self):
        r, sc = self.iso("import os, ctypes\nos.makedirs('/tmp/d/e')\n"
                         "open('/tmp/d/e/kept', 'w').write('x')\nos.chmod('/tmp/d/e', 0o500)\n"
                         "os.chmod('/tmp/d', 0o500)\n"
                         "ctypes.CDLL(None).shmget(0, 4096, 0o1600)")
        self.assertIsNone(sc["error"], text(r))
        self.assertNotEqual(sc["result"], "-1", text(r))
        # gVisor shows no /proc/sysvipc (nor removes what it cannot list): there, only the
        # directory is checked.
        r, sc = self.iso("import os\nrows = open('/proc/sysvipc/shm').read().splitlines() "
                         "if os.path.exists('/proc/sysvipc/shm') else []\n"
                         "mine = [l for l in rows[1:] if l.split()[7] == str(os.getuid())]\n"
                         "(os.path.exists('/tmp/d'), mine)")
        self.assertEqual(sc["result"], "(False, [])", text(r))

    def test_isolated_with_a_session_is_refused(self):
        r = self.client.call("run_python", code="1", isolated=True, session="a")
        self.assertTrue(r.get("isError"))
        self.assertIn("an isolated run has no session", text(r))


if __name__ == "__main__":
    unittest.main()
