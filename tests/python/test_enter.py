"""Tests of byd-enter (backends/docker/enter.cpp), the Docker backend's way for code into a
container, here on the host: run as root, it must leave no way back to root.

Run from the repository root (as root): /usr/bin/python3 -m unittest tests/python/test_enter.py
"""

import os
import struct
import subprocess
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENTER = os.environ.get("BYD_ENTER", os.path.join(ROOT, "build", "backends", "byd-enter"))
UID = 62000 + os.getpid() % 1000  # no one else's
IDS = f"{UID}:{UID + 1}"
# struct sock_filter {u16 code; u8 jt, jf; u32 k}: BPF_RET|BPF_K of SECCOMP_RET_ALLOW.
ALLOW_ALL = struct.pack("=HBBI", 0x06, 0, 0, 0x7FFF0000)


def enter(*args, **kw):
    return subprocess.run([ENTER, *args], capture_output=True, text=True, timeout=30, **kw)


@unittest.skipUnless(os.geteuid() == 0, "byd-enter changes ids only when started as root")
class EnterTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(ENTER, os.X_OK):
            raise AssertionError(f"no byd-enter at {ENTER}: build it, or set BYD_ENTER")

    def test_becomes_the_user_for_good_without_groups_or_capabilities(self):
        r = enter(IDS, "/", "sh", "-c",
                  "id -u; id -g; id -G; grep -E '^(Uid|Gid|CapEff|CapPrm):' /proc/self/status")
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.split("\n")
        self.assertEqual(lines[:3], [str(UID), str(UID + 1), str(UID + 1)])
        self.assertEqual(lines[3].split()[1:], [str(UID)] * 4)  # real, effective, saved, fs
        self.assertEqual(lines[4].split()[1:], [str(UID + 1)] * 4)
        self.assertEqual(lines[5:7], ["CapPrm:\t0000000000000000", "CapEff:\t0000000000000000"])
        # No way back: setuid(0) is refused.
        r = enter(IDS, "/", "/usr/bin/python3", "-c", "import os; os.setuid(0)")
        self.assertIn("PermissionError", r.stderr)

    def test_enters_the_directory_as_the_user(self):
        with tempfile.TemporaryDirectory() as tmp:
            os.chmod(tmp, 0o755)
            mine, roots = os.path.join(tmp, "mine"), os.path.join(tmp, "roots")
            os.mkdir(mine, 0o700)
            os.chown(mine, UID, UID + 1)
            os.mkdir(roots, 0o700)
            self.assertEqual(enter(IDS, mine, "pwd").stdout, mine + "\n")
            r = enter(IDS, roots, "pwd")
            self.assertEqual((r.returncode, r.stdout), (126, ""))
            self.assertEqual(r.stderr, f"byd-enter: cannot enter {roots}: Permission denied\n")

    def test_the_pid_file_is_roots_and_holds_the_programs_pid(self):
        with tempfile.TemporaryDirectory() as tmp:
            pid_file = os.path.join(tmp, "pid")
            r = enter("--pid-file", pid_file, IDS, "/", "sh", "-c", "echo $$")
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(pid_file) as f:
                self.assertEqual(f.read(), r.stdout)
            self.assertEqual(os.stat(pid_file).st_uid, 0)

    def test_the_filter_is_installed(self):
        with tempfile.NamedTemporaryFile(suffix=".bpf") as bpf:
            bpf.write(ALLOW_ALL)
            bpf.flush()
            r = enter("--filter", bpf.name, IDS, "/", "grep", "-E", "^(Seccomp|NoNewPrivs):",
                      "/proc/self/status")
            self.assertEqual(r.stdout, "NoNewPrivs:\t1\nSeccomp:\t2\n", r.stderr)
            bpf.write(b"xyz")  # no longer a whole number of instructions
            bpf.flush()
            r = enter("--filter", bpf.name, IDS, "/", "true")
            self.assertEqual(r.returncode, 126)
            self.assertIn(f"not a BPF program: {bpf.name}", r.stderr)

    def test_bad_arguments_are_named(self):
        for ids in ("0:0", "0:5", "x:1", "1", "1:", "99999999999:1"):
            r = enter(ids, "/", "true")
            self.assertEqual(r.returncode, 126, ids)
            self.assertIn(f"UID:GID must be two numbers and not root, got '{ids}'", r.stderr)
        r = enter("--bogus", "x", IDS, "/", "true")
        self.assertEqual(r.returncode, 126)
        self.assertIn("usage: byd-enter", r.stderr)
        r = enter(IDS, "/", "/no/such/program")
        self.assertEqual(r.returncode, 127)
        self.assertIn("cannot execute /no/such/program: No such file or directory", r.stderr)


if __name__ == "__main__":
    unittest.main()
