"""End to end: run_python's fork_from. A fork starts with a copy of its parent's state; both
branches diverge and neither sees the other's later changes; a fork lives on when its parent
is reset; a fork of a busy session waits for its cell; the refusals name what is wrong.

Usage: fork_test.py BINARY [--backend docker --runtime runc|runsc]
"""

import os
import sys
import json
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mcp_client import ServerCase, binary_and_backend, text  # noqa: E402

BINARY, EXTRA = binary_and_backend(sys.argv)


class Fork(ServerCase):
    BINARY = BINARY
    PREFIX = "byd-fork-"

    @classmethod
    def server_args(cls):
        return ["--ruleset", "permissive", "--python-sessions", "32", *EXTRA]

    @classmethod
    def prepare(cls, workspace):
        with open(os.path.join(workspace, ".env"), "w") as f:
            f.write("TOKEN=hidden\n")
        with open(os.path.join(workspace, "notes.txt"), "w") as f:
            f.write("open\n")

    def py(self, code, **args):
        r = self.client.call("run_python", code=code, **args)
        return r, r.get("structuredContent", {})

    def ok(self, code, **args):
        r, sc = self.py(code, **args)
        self.assertFalse(r.get("isError"), text(r))
        return sc

    def test_both_branches_diverge_and_the_parent_is_unchanged(self):
        self.ok("import os\nrows = list(range(3))\nos.chdir('/tmp')\n"
                "open('/tmp/f-parent', 'w').write('p')", session="f-base")
        sc = self.ok("rows.append('a'); (rows, os.getcwd())", session="f-a", fork_from="f-base")
        self.assertEqual(sc["result"], "([0, 1, 2, 'a'], '/tmp')")
        self.assertEqual((sc["new_session"], sc["forked_from"]), (True, "f-base"))
        sc = self.ok("rows.append('b'); rows", session="f-b", fork_from="f-base")
        self.assertEqual(sc["result"], "[0, 1, 2, 'b']")
        self.assertEqual(self.ok("rows", session="f-base")["result"], "[0, 1, 2]")
        self.assertEqual(self.ok("rows", session="f-a")["result"], "[0, 1, 2, 'a']")
        sc = self.ok("rows.append('later'); rows", session="f-base")
        self.assertEqual(self.ok("rows", session="f-b")["result"], "[0, 1, 2, 'b']")
        # A later call in the fork is an ordinary call of its session.
        sc = self.ok("len(rows)", session="f-a")
        self.assertEqual((sc["result"], sc["new_session"], sc["forked_from"]), ("4", False, None))

    def test_a_fork_outlives_its_parent_reset(self):
        self.ok("import os\nbig = bytearray(50 << 20)\nkept = 'state'", session="f-old")
        self.ok("pid = os.getpid()", session="f-young", fork_from="f-old")
        r, sc = self.py("kept", session="f-old", reset=True)  # the parent starts afresh
        self.assertEqual(sc["error"]["type"], "NameError", text(r))
        sc = self.ok("(kept, len(big), os.getpid() == pid)", session="f-young")
        self.assertEqual(sc["result"], "('state', 52428800, True)")

    def test_the_fork_is_interrupted_at_its_timeout_alone(self):
        self.ok("n = 1", session="f-int")
        r, sc = self.py("import time\nwhile True: time.sleep(0.01)", session="f-int2",
                        fork_from="f-int", timeout_s=1)
        self.assertTrue(sc["timed_out"], text(r))
        self.assertFalse(sc["state_lost"], text(r))
        self.assertEqual(self.ok("n + 1", session="f-int2")["result"], "2")
        self.assertEqual(self.ok("n", session="f-int")["result"], "1")

    def test_a_fork_of_a_busy_session_waits_for_its_cell(self):
        self.ok("import time\nstep = 0", session="f-busy")
        # The long cell's request goes out first; its answer is collected after the fork's.
        rid = 10_000
        self.client.send_raw(json.dumps({
            "jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": "run_python",
                       "arguments": {"code": "time.sleep(1.5); step = 1", "session": "f-busy"}},
        }).encode() + b"\n")
        time.sleep(0.4)
        sc = self.ok("step", session="f-after", fork_from="f-busy")
        self.assertEqual(sc["result"], "1")  # the copy was taken after the cell ended
        long = self.client.wait_for(lambda m: m.get("id") == rid)
        self.assertFalse(long["result"].get("isError"), long)

    def test_the_file_rules_hold_in_a_fork(self):
        self.ok("name = '.e' + 'nv'", session="f-rules")
        code = ("def read(p):\n    try:\n        return open(p).read()\n"
                "    except OSError as e:\n        return type(e).__name__\n"
                "(read(name), read('notes.txt'))")
        sc = self.ok(code, session="f-rules2", fork_from="f-rules")
        self.assertEqual(sc["result"], "('PermissionError', 'open\\n')")

    def test_new_sessions_have_sandboxes_of_their_own_by_default(self):
        probe = ("import os\n"
                 "(os.getpid(), sorted(p for p in os.listdir('/proc') if p.isdigit()), "
                 "sorted(os.listdir('/tmp')))")
        self.ok("open('/tmp/only-mine', 'w').write('a')", session="own-a")
        _, _, tmp_a = eval(self.ok(probe, session="own-a")["result"])
        pid_b, procs_b, tmp_b = eval(self.ok(probe, session="own-b")["result"])
        self.assertIn("only-mine", tmp_a)
        self.assertNotIn("only-mine", tmp_b)
        if "docker" not in EXTRA:
            # Nothing of a's in b's pid namespace: its init and b's kernel alone.
            self.assertEqual(procs_b, ["1", str(pid_b)])

    def test_refusals_name_what_is_wrong(self):
        r, _ = self.py("1", session="f-x", fork_from="no-such-session")
        self.assertTrue(r.get("isError"))
        self.assertIn("no Python session 'no-such-session'", text(r))
        r, _ = self.py("1", session="f-self", fork_from="f-self")
        self.assertTrue(r.get("isError"))
        self.assertIn("names the session itself", text(r))
        r, _ = self.py("1", isolated=True, fork_from="f-base")
        self.assertTrue(r.get("isError"))
        self.assertIn("not with `isolated`", text(r))

    def test_a_fork_of_a_fork_and_a_replaced_name(self):
        self.ok("v = ['root']", session="f-r")
        self.ok("v.append('child')", session="f-c", fork_from="f-r")
        sc = self.ok("v.append('grandchild'); v", session="f-g", fork_from="f-c")
        self.assertEqual(sc["result"], "['root', 'child', 'grandchild']")
        # Forking onto an existing name replaces that session.
        sc = self.ok("v", session="f-g", fork_from="f-r")
        self.assertEqual(sc["result"], "['root']")


class ForkedNewSessions(ServerCase):
    """--python-new-sessions fork: each new session is a fork of one template kernel."""

    BINARY = BINARY
    PREFIX = "byd-fork-new-"

    @classmethod
    def server_args(cls):
        return ["--ruleset", "permissive", "--python-new-sessions", "fork", *EXTRA]

    def ok(self, code, **args):
        r = self.client.call("run_python", code=code, **args)
        self.assertFalse(r.get("isError"), text(r))
        return r["structuredContent"]

    def test_new_sessions_are_forks_of_one_template_and_start_clean(self):
        probe = "(os.getpid(), os.getppid(), sorted(k for k in globals() if k[0] != '_'))"
        self.ok("import os\nmarker = 1", session="n-one")
        pid_one, ppid_one, names_one = eval(self.ok(probe, session="n-one")["result"])
        pid_two, ppid_two, names_two = eval(self.ok("import os\n" + probe,
                                                    session="n-two")["result"])
        # Both forked from the same kernel, in its namespace or container (a kernel of its own
        # would be the child of its namespace's init, process 1, or of no process there, 0).
        self.assertEqual(ppid_one, ppid_two)
        self.assertNotIn(ppid_one, (0, 1))
        self.assertNotEqual(pid_one, pid_two)
        self.assertEqual(names_one, ["marker", "os"])
        self.assertEqual(names_two, ["os"])  # nothing of the other session
        # A reset session is a new fork, with nothing of its past.
        r = self.client.call("run_python", code="marker", session="n-one", reset=True)
        self.assertEqual(r["structuredContent"]["error"]["type"], "NameError", text(r))

    def test_on_docker_each_process_is_held_to_a_sessions_memory(self):
        if "docker" not in EXTRA:
            self.skipTest("the Local sandbox holds each process to --memory-limit anyway")
        sc = self.ok("import resource\nresource.getrlimit(resource.RLIMIT_AS)", session="t-as")
        self.assertEqual(sc["result"], str((1 << 30, 1 << 30)))

    def test_they_share_the_templates_tmp(self):
        self.ok("open('/tmp/from-one', 'w').write('1')", session="t-one")
        self.assertEqual(self.ok("open('/tmp/from-one').read()", session="t-two")["result"],
                         "'1'")

    def test_each_has_its_own_limits_and_dies_alone(self):
        self.ok("x = 'kept'", session="n-calm")
        r = self.client.call("run_python", session="n-hog",
                             code="b = bytearray(3 << 30)\nb[::4096] = b'x' * len(b[::4096])")
        sc = r["structuredContent"]
        self.assertTrue(sc["error"] is not None or sc["state_lost"], text(r))
        self.assertEqual(self.ok("x", session="n-calm")["result"], "'kept'")
        self.assertEqual(self.ok("'again'", session="n-hog")["result"], "'again'")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
