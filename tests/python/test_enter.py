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


def in_namespace(script, **kw):
    """Runs `script` (sh) in a mount namespace of its own, with a fresh /run: byd-enter mounts
    its masks there, and none of them reaches this machine's namespace."""
    prelude = ("mount -t tmpfs tmpfs /run && mkdir -m 0700 /run/backyard && "
               "mount -t tmpfs -o mode=0700 tmpfs /run/backyard && ")
    return subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                           prelude + script], capture_output=True, text=True, timeout=60, **kw)


@unittest.skipUnless(os.geteuid() == 0, "masks are mounted by root")
class MasksTest(unittest.TestCase):
    """--masks-root and --mask: the file rules' masks, mounted before the program starts and
    changed from what the last call left."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        os.chmod(self.tmp.name, 0o755)
        self.ws = os.path.join(self.tmp.name, "ws")
        os.makedirs(os.path.join(self.ws, "ro", "out"))
        os.makedirs(os.path.join(self.ws, "secrets"))
        for name, body in ((".env", "TOKEN=s3cret\n"), ("ro/a.txt", "a\n"),
                           ("secrets/k", "key\n"), ("config", "cfg\n")):
            with open(os.path.join(self.ws, name), "w") as f:
                f.write(body)
        os.symlink("ro", os.path.join(self.ws, "link"))
        for d, dirs, files in os.walk(self.ws):
            for n in [d] + [os.path.join(d, x) for x in dirs + files]:
                os.lchown(n, UID, UID + 1)

    def tearDown(self):
        self.tmp.cleanup()

    def masked(self, *masks):
        args = [ENTER, "--masks-root", self.ws]
        for m in masks:
            args += ["--mask", m[0] + os.path.join(self.ws, m[1:]).rstrip("/")]
        return " ".join(f"'{a}'" for a in args)

    def test_hidden_read_only_and_writable_paths(self):
        probe = ("cat .env 2>&1; cat secrets/k 2>&1; echo x >> ro/a.txt 2>&1; "
                 "echo y > ro/out/made && echo made; echo z >> config 2>&1; mv config c2 2>&1; "
                 "cat ro/a.txt config")
        r = in_namespace(f"{self.masked('f.env', 'dsecrets', 'rro', 'wro/out', 'rconfig')} "
                         f"{IDS} {self.ws} sh -c '{probe}'")
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout + r.stderr  # (the shell says what its redirections met on stderr)
        self.assertNotIn("s3cret", out)
        self.assertNotIn("key", out)
        self.assertIn("cat: .env: Permission denied", out)
        self.assertIn("cat: secrets/k: Permission denied", out)
        self.assertIn("ro/a.txt: Read-only file system", out)
        self.assertIn("made", out)
        self.assertIn("config: Read-only file system", out)
        self.assertIn("Device or resource busy", out)  # a mount point cannot be renamed
        self.assertIn("a\ncfg\n", out)
        # The host's files are as they were, the writable one written.
        with open(os.path.join(self.ws, ".env")) as f:
            self.assertEqual(f.read(), "TOKEN=s3cret\n")
        with open(os.path.join(self.ws, "ro", "out", "made")) as f:
            self.assertEqual(f.read(), "y\n")

    def test_each_call_changes_what_the_last_left(self):
        first = f"{self.masked('f.env', 'rro')} {IDS} {self.ws} sh -c 'cat .env 2>&1; true'"
        second = f"{self.masked('f.env')} {IDS} {self.ws} sh -c 'echo w > ro/new && echo wrote'"
        third = f"{self.masked()} {IDS} {self.ws} cat .env"
        r = in_namespace(f"{first}; {second}; {third}; grep -c ' {self.ws}' /proc/self/mountinfo")
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.split("\n")
        self.assertIn("Permission denied", lines[0])
        self.assertEqual(lines[1], "wrote")  # the read-only mask was undone
        self.assertEqual(lines[2], "TOKEN=s3cret")  # no mask left
        self.assertEqual(lines[3], "1")  # only the view the masks are made from

    def test_a_mask_below_one_that_goes_or_comes_is_made_again(self):
        probe = "sh -c 'cat ro/a.txt 2>&1; touch ro/t 2>&1 && echo touched; true'"
        calls = [self.masked("rro", "fro/a.txt"),  # read-only, with a.txt hidden in it
                 self.masked("fro/a.txt"),  # ro's mask goes: a.txt's went with it, and is back
                 self.masked("rro", "fro/a.txt"),  # and comes back over a.txt's
                 self.masked("dsecrets", "rro", "fro/a.txt")]  # another beside: both kept
        r = in_namespace("; ".join(f"{c} {IDS} {self.ws} {probe}; echo --" for c in calls))
        self.assertEqual(r.returncode, 0, r.stderr)
        out = (r.stdout + r.stderr).split("--\n")
        self.assertEqual(len(out), 5, out)
        for i, part in enumerate(out[:4]):
            self.assertIn("cat: ro/a.txt: Permission denied", part, i)
            self.assertNotIn("a\n", part.replace("a.txt", ""), i)
        self.assertIn("Read-only file system", out[0])
        self.assertIn("touched", out[1])
        self.assertIn("Read-only file system", out[2])
        self.assertIn("Read-only file system", out[3])

    def test_a_path_reached_through_a_symlink_is_not_masked_there(self):
        r = in_namespace(f"{self.masked('rlink/a.txt')} {IDS} {self.ws} sh -c "
                         "'echo b >> ro/a.txt && cat ro/a.txt'")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "a\nb\n")

    def test_bad_masks_are_named_and_nothing_runs(self):
        r = in_namespace(f"{ENTER} --masks-root {self.ws} --mask f/etc/passwd {IDS} / "
                         "echo ran")
        self.assertEqual(r.returncode, 126)
        self.assertNotIn("ran", r.stdout)
        self.assertIn("cannot mask a path outside the workspace: /etc/passwd", r.stderr)
        for bad in ("x/a", "f", "frelative"):
            r = enter("--masks-root", self.ws, "--mask", bad, IDS, "/", "true")
            self.assertEqual(r.returncode, 126, bad)
            self.assertIn("usage: byd-enter", r.stderr)
        r = enter("--mask", "f" + self.ws, IDS, "/", "true")  # masks without their root
        self.assertIn("usage: byd-enter", r.stderr)

    def test_update_masks_stops_the_users_processes_meanwhile(self):
        loop = ("i=0; while [ $i -lt 40 ]; do cat .env >/dev/null 2>&1 && echo r || echo d; "
                "i=$((i+1)); sleep 0.05; done")
        update = f"{ENTER} --update-masks {UID} --masks-root {self.ws}"
        r = in_namespace(f"{ENTER} {IDS} {self.ws} sh -c '{loop}' > {self.tmp.name}/log & "
                         f"sleep 0.5; {update} --mask f{self.ws}/.env && echo updated; wait; "
                         f"{update} && echo cleared")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "updated\ncleared\n")
        with open(os.path.join(self.tmp.name, "log")) as f:
            seen = f.read().split()
        # Readable at first, denied once the mask is in, and the loop ran to its end.
        self.assertEqual(len(seen), 40)
        self.assertEqual(seen[0], "r")
        self.assertEqual(seen[-1], "d")
        self.assertEqual(seen, sorted(seen, key=lambda x: x == "d"))


if __name__ == "__main__":
    unittest.main()
