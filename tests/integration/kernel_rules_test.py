"""End to end: the file rules hold inside the sandbox, where files are opened, whatever the
text of a command or a cell. A workspace holds secrets and protected paths; under `permissive`
(and a client that cannot be asked) every spelling that reaches a secret is tried from execute
and from run_python, and no byte of a secret may come back; protected paths cannot be changed;
everything else works. The host's files are intact afterwards and the server still serves.

Usage: kernel_rules_test.py BINARY [--backend local|docker] [--runtime runc|runsc]
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mcp_client import Client, ElicitingClient, binary_and_backend, text  # noqa: E402

BINARY, EXTRA = binary_and_backend(sys.argv)

SECRET = "s3cr3t-4c1e-rules"
KEY = "k3y-9b2f-material"
# Every way to name .env or config/server.key that a check of the text cannot see.
COMMANDS = [
    "cat .e*",
    "cat .en?",
    'f=.env; cat "$f"',
    'cat "$(printf .e)nv"',
    "cat $(ls -A | grep '^.en')",
    "grep -r TOKEN . ; true",
    "grep -ra k3y config ; true",
    "tar cf - . 2>/dev/null | strings",
    "find . -type f -exec cat {} + 2>/dev/null",
    "find . -name '*.k*' | xargs cat",
    "python3 -c \"print(open('.e'+'nv').read())\"",
    "base64 .e* ; true",
    "head -c 200 config/* ; true",
    "awk 1 .e* ; sed -n p .e* ; true",
    "for f in .[a-z]*; do cat \"$f\" 2>&1; done ; true",
    "dd if=.e\"\"nv 2>/dev/null ; true",
    "cp .e* /tmp/c 2>&1; cat /tmp/c ; true",
    "ln -s .e\"\"nv l && cat l ; true",
    "ln .e\"\"nv h 2>&1; cat h ; true",
    "mv .e\"\"nv moved 2>&1; cat moved ; true",
    "cd config && cat *.k* ; true",
    "exec 3<.e\"\"nv; cat <&3 ; true",
    "zip -r - . 2>/dev/null | strings ; true",
    "git add -A 2>/dev/null; git show :.env 2>&1 ; true",
]
CELLS = [
    "print(open('.e' + 'nv').read())",
    "import os\nfor d, _, fs in os.walk('.'):\n    for f in fs:\n        try:\n"
    "            print(open(os.path.join(d, f), errors='replace').read())\n"
    "        except OSError as e:\n            print('refused', f, e.errno)",
    "import pathlib\nfor p in pathlib.Path('.').rglob('*'):\n    try:\n"
    "        print(p.read_text(errors='replace'))\n    except OSError as e:\n"
    "        print('refused', p, e.errno)",
    "import subprocess\nprint(subprocess.run('cat .e* config/*', shell=True,"
    " capture_output=True, text=True))",
    "import os\nfd = os.open('.e' + 'nv', os.O_RDONLY)\nprint(os.read(fd, 100))",
    "import shutil\nshutil.copy('.e' + 'nv', '/tmp/x')\nprint(open('/tmp/x').read())",
    "import mmap\nf = open('config/server.k' + 'ey', 'rb')\n"
    "print(mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)[:])",
]


def make_workspace(root):
    os.makedirs(os.path.join(root, "config"))
    os.makedirs(os.path.join(root, "src"))
    with open(os.path.join(root, ".env"), "w") as f:
        f.write(f"TOKEN={SECRET}\n")
    with open(os.path.join(root, "config", "server.key"), "w") as f:
        f.write(KEY + "\n")
    with open(os.path.join(root, "src", "main.py"), "w") as f:
        f.write("print('hello')\n")
    os.makedirs(os.path.join(root, ".vscode"))
    with open(os.path.join(root, ".vscode", "settings.json"), "w") as f:
        f.write("{}\n")
    with open(os.path.join(root, ".mcp.json"), "w") as f:
        f.write("{}\n")
    subprocess.run(["git", "init", "-q", root], check=True)
    subprocess.run(["chmod", "-R", "a+rwX", root], check=True)


def snapshot(root, names):
    out = {}
    for name in names:
        with open(os.path.join(root, name), "rb") as f:
            out[name] = f.read()
    return out


PROTECTED = [".git/config", ".vscode/settings.json", ".mcp.json"]


class ServerCase(unittest.TestCase):
    """A server on a fresh workspace for the whole class (set up by each subclass)."""

    @classmethod
    def tearDownClass(cls):
        code = cls.client.close()
        cls.tmp.cleanup()
        assert code == 0, f"server exit code {code}"


class KernelRules(ServerCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="byd-kr-")
        cls.root = os.path.join(cls.tmp.name, "ws")
        make_workspace(cls.root)
        cls.protected = snapshot(cls.root, PROTECTED)
        cls.client = Client(BINARY, "--root", cls.root, "--log-level", "warn",
                            "--ruleset", "permissive", *EXTRA)

    def tearDown(self):
        # The host's secrets and protected files are as they were, and the server serves.
        with open(os.path.join(self.root, ".env")) as f:
            self.assertEqual(f.read(), f"TOKEN={SECRET}\n")
        with open(os.path.join(self.root, "config", "server.key")) as f:
            self.assertEqual(f.read(), KEY + "\n")
        self.assertEqual(snapshot(self.root, PROTECTED), self.protected)
        self.assertTrue(self.client.ping())

    def execute(self, command):
        return self.client.call("execute", command=command, timeout_s=20)

    def python(self, code, session="rules"):
        return self.client.call("run_python", code=code, session=session, timeout_s=20)

    def assertNoSecret(self, result, what):
        body = json.dumps(result)
        self.assertNotIn(SECRET, body, what)
        self.assertNotIn(KEY, body, what)

    def test_no_command_prints_a_secret(self):
        for command in COMMANDS:
            with self.subTest(command=command):
                self.assertNoSecret(self.execute(command), command)
        for leftover in ("moved", "h", "l"):
            path = os.path.join(self.root, leftover)
            if os.path.lexists(path):
                os.remove(path)

    def test_no_cell_prints_a_secret(self):
        for code in CELLS:
            with self.subTest(code=code):
                self.assertNoSecret(self.python(code), code)

    def test_everything_else_works_as_before(self):
        r = self.execute("cat src/main.py && echo new > made.txt && cat made.txt && ls -A")
        body = text(r)
        self.assertFalse(r.get("isError"), body)
        for expected in ("print('hello')", "new", ".env", "config", "made.txt"):
            self.assertIn(expected, body)
        r = self.python("print(open('src/main.py').read()); open('made2.txt','w').write('x')")
        self.assertIn("print('hello')", text(r))
        self.assertTrue(os.path.exists(os.path.join(self.root, "made2.txt")))
        for name in ("made.txt", "made2.txt"):
            os.remove(os.path.join(self.root, name))

    def test_what_a_program_sees_of_a_secret(self):
        # (Python's stat and the shell's glob, not stat and ls: the statx of Debian's gVisor
        # fails for every path)
        r = self.execute("python3 -c \"import os; s = os.stat('.e' + 'nv'); "
                         "print(s.st_size, oct(s.st_mode & 0o777)[2:])\"; cat .e* 2>&1; "
                         "for f in .e*; do test -r $f || echo unreadable; done; echo config/*")
        body = text(r)
        self.assertIn("0 0", body)  # an empty file, mode 000
        self.assertIn("Permission denied", body)
        self.assertIn("unreadable", body)
        self.assertIn("server.key", body)  # its name is there to see
        r = self.python("try:\n    open('.e'+'nv')\nexcept PermissionError as e:\n"
                        "    print('errno', e.errno)")
        self.assertIn("errno 13", text(r))

    def test_a_secret_in_a_directory_only_the_user_may_enter_is_masked(self):
        # A directory the code made for itself alone (mode 0700), and a secret that appears in
        # it, owned as the directory is: whoever masks must still reach it.
        r = self.execute("mkdir -m 700 private && echo plain > private/notes.txt && echo made")
        self.assertIn("made", text(r))
        private = os.path.join(self.root, "private")
        try:
            st = os.stat(private)
            self.assertEqual(st.st_mode & 0o777, 0o700)
            secret = os.path.join(private, ".env")
            with open(secret, "w") as f:
                f.write(f"TOKEN={SECRET}\n")
            os.chown(secret, st.st_uid, st.st_gid)
            r = self.execute("cat private/notes.txt; cat private/.e* 2>&1; true")
            self.assertIn("plain", text(r))
            self.assertNoSecret(r, "a secret in a private directory")
            self.assertNoSecret(self.python("print(open('private/.e'+'nv').read())"),
                                "a secret in a private directory, from a kernel")
        finally:
            shutil.rmtree(private, ignore_errors=True)

    def test_a_secret_that_appears_later_is_masked(self):
        r = self.python("x = 1")  # the session's kernel lives across the cells below
        self.assertFalse(r.get("isError"), text(r))
        late = os.path.join(self.root, "src", "late.pem")
        with open(late, "w") as f:
            f.write(SECRET + "\n")
        try:
            self.assertNoSecret(self.execute("cat src/*.p*"), "a secret made on the host")
            self.assertNoSecret(self.python("print(open('src/late.p'+'em').read())"),
                                "a secret made on the host, from a live kernel")
            # A secret made by a command is masked for the next command.
            r = self.execute("n=made; echo " + SECRET + " > src/$n.k\"\"ey; echo done")
            self.assertIn("done", text(r))
            self.assertNoSecret(self.execute("cat src/made.k*"), "a secret made by a command")
            self.assertNoSecret(self.python("print(open('src/made.k'+'ey').read())"),
                                "a secret made by a command, from a live kernel")
        finally:
            for name in ("late.pem", "made.key"):
                path = os.path.join(self.root, "src", name)
                if os.path.exists(path):
                    os.remove(path)

    def test_protected_paths_cannot_be_changed_from_inside(self):
        attempts = [
            "f=.git/config; echo '[core] hooksPath = /tmp' >> \"$f\"",
            "d=.git/hooks; printf '#!/bin/sh\\nid\\n' > $d/pre-commit; chmod +x $d/pre-commit",
            "g=.git; cp /etc/hostname $g/config",
            "g=.git; mv $g/config /tmp/config",
            "g=.git; rm -f $g/config",
            "v=.vscode; echo '{\"x\":1}' > $v/settings.json",
            "m=.mcp; echo '{}' >> $m.json; rm -f $m.json",
            "v=.vscode; mv $v /tmp/vs; rm -rf $v",
        ]
        for command in attempts:
            with self.subTest(command=command):
                self.execute(command)
                self.assertEqual(snapshot(self.root, PROTECTED), self.protected, command)
                self.assertFalse(os.path.exists(os.path.join(self.root, ".git", "hooks",
                                                             "pre-commit")), command)
        r = self.python("open('.git/hoo' + 'ks/pre-commit', 'w').write('x')")
        self.assertIn("Read-only file system", text(r))
        r = self.python("open('.vs' + 'code/settings.json', 'a').write('x')")
        self.assertIn("Read-only file system", text(r))

    def test_the_file_tools_refuse_protected_paths_and_say_why(self):
        for tool, args in (("write_file", {"path": ".mcp.json", "content": "{}"}),
                           ("write_file", {"path": ".git/hooks/post-checkout", "content": "x"}),
                           ("edit_file", {"path": ".vscode/settings.json", "old_string": "{}",
                                          "new_string": "{\"a\": 1}"})):
            with self.subTest(tool=tool, path=args["path"]):
                r = self.client.call(tool, **args)
                self.assertTrue(r.get("isError"))
                self.assertIn("protected path", text(r))
                self.assertIn("runs outside the sandbox", text(r))

    def test_git_keeps_working(self):
        r = self.execute("git add src && git -c user.email=a@b.c -c user.name=t commit -qm first"
                         " && git log --oneline | wc -l")
        self.assertFalse(r.get("isError"), text(r))
        self.assertIn("1", text(r))
        fresh = "fresh-repo"
        r = self.execute(f"mkdir {fresh} && cd {fresh} && git init -q && echo a > a &&"
                         " git add a && git -c user.email=a@b.c -c user.name=t commit -qm one &&"
                         " git log --oneline | wc -l")
        self.assertFalse(r.get("isError"), text(r))
        shutil.rmtree(os.path.join(self.root, fresh))


class AllowedDirectory(unittest.TestCase):
    """An --allow directory is masked as the workspace is."""

    def test_a_secret_in_an_allowed_directory_is_masked(self):
        if EXTRA:
            self.skipTest("--allow is the Local backend's")
        with tempfile.TemporaryDirectory(prefix="byd-kr-") as tmp:
            root, extra = os.path.join(tmp, "ws"), os.path.join(tmp, "shared")
            os.makedirs(root)
            os.makedirs(os.path.join(extra, "conf"))
            with open(os.path.join(extra, "conf", "id_rsa"), "w") as f:
                f.write(KEY + "\n")
            with open(os.path.join(extra, "notes.txt"), "w") as f:
                f.write("shared notes\n")
            c = Client(BINARY, "--root", root, "--allow", extra, "--log-level", "warn",
                       "--ruleset", "permissive")
            try:
                r = c.call("execute", command=f"cat {extra}/notes.txt; cat {extra}/conf/*; "
                           f"grep -r k3y {extra}; true", timeout_s=20)
                self.assertIn("shared notes", text(r))
                self.assertIn("Permission denied", text(r))
                self.assertNotIn(KEY, json.dumps(r))
            finally:
                c.close()


class WithoutTheMasks(unittest.TestCase):
    """The same spellings with the masks layer left out (a test-only switch): the secret is
    printed, so the tests above can fail."""

    def test_the_secret_is_printed_without_the_masks(self):
        with tempfile.TemporaryDirectory(prefix="byd-kr-") as tmp:
            root = os.path.join(tmp, "ws")
            make_workspace(root)
            env = dict(os.environ, BYD_TEST_SANDBOX_WITHOUT="masks")
            c = Client(BINARY, "--root", root, "--log-level", "warn", "--ruleset", "permissive",
                       *EXTRA, env=env)
            try:
                self.assertIn(SECRET, text(c.call("execute", command="cat .e*")))
                self.assertIn(SECRET, text(c.call("run_python", code="print(open('.e'+'nv').read())")))
                c.call("execute", command="f=.git/config; echo '# changed' >> $f")
            finally:
                c.close()
            with open(os.path.join(root, ".git", "config")) as f:
                self.assertIn("# changed", f.read())


class Approval(ServerCase):
    """A command allowed outright gets only what the rules allow outright; one the user
    approved may also write what asks; a rule's deny holds either way."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="byd-kr-")
        cls.root = os.path.join(cls.tmp.name, "ws")
        make_workspace(cls.root)
        rules = {"extends": "default", "name": "ls allowed",
                 "execute": {"rules": [{"pattern": "python3 -c *", "action": "allow"}]},
                 "python": {"rules": [{"regex": "# outright.*", "action": "allow"}]}}
        cls.rules_file = os.path.join(cls.tmp.name, "rules.json")
        with open(cls.rules_file, "w") as f:
            json.dump(rules, f)
        cls.client = ElicitingClient(BINARY, "--root", cls.root, "--log-level", "warn",
                                     "--ruleset", cls.rules_file, *EXTRA)

    def test_outright_is_read_only_and_approved_may_write(self):
        asked = len(self.client.asked)
        r = self.client.call("execute", command="python3 -c \"open('listing.txt', 'w')\"",
                             timeout_s=20)
        self.assertEqual(len(self.client.asked), asked, "python3 -c is allowed outright")
        self.assertIn("Read-only file system", text(r))
        self.assertFalse(os.path.exists(os.path.join(self.root, "listing.txt")))
        r = self.client.call("execute", command="touch approved.txt && echo made", timeout_s=20)
        self.assertGreater(len(self.client.asked), asked, "touch asks")
        self.assertIn("made", text(r))
        self.assertTrue(os.path.exists(os.path.join(self.root, "approved.txt")))
        r = self.client.call("execute", command="cat .e* 2>&1; f=.git/config; echo x >> $f; true",
                             timeout_s=20)
        self.assertNotIn(SECRET, text(r))
        self.assertIn("Read-only file system", text(r))

    def test_a_live_kernel_follows_each_cells_approval(self):
        outright = "# outright\ntry:\n    open('cell.txt', 'a').write('x')\n    print('wrote')\n" \
                   "except OSError as e:\n    print('refused', e.strerror)"
        approved = outright.replace("# outright", "# asked")
        asked = len(self.client.asked)
        for code, expected in ((outright, "refused Read-only file system"), (approved, "wrote"),
                               (outright, "refused Read-only file system"), (approved, "wrote")):
            r = self.client.call("run_python", code=code, session="live")
            self.assertIn(expected, text(r))
        self.assertEqual(len(self.client.asked), asked + 2)
        with open(os.path.join(self.root, "cell.txt")) as f:
            self.assertEqual(f.read(), "xx")

if __name__ == "__main__":
    unittest.main(verbosity=2)
