#!/usr/bin/python3
"""Who sandboxed code is on the host, and what it cannot make there, tried from execute and
run_python against the real binary and checked from the host afterwards: no file in the
workspace gains a setuid or setgid bit, a running command or kernel is never host root, the
files it creates belong to the documented owner, and /proc/sys stays read-only. Each layer
that the README promises is also switched off alone (BYD_TEST_SANDBOX_WITHOUT), to show that
the test catches its absence.

usage: sandbox_privileges_test.py BINARY [unittest args]"""

import atexit
import io
import json
import os
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from mcp_client import Client  # noqa: E402

BINARY = None
DEDICATED_UID = 65533
UNPRIVILEGED = 1000  # an account of the machine, for the workspace owner and the server

# Each attempt to plant a setuid or setgid file, and how it must fail inside.
COMMAND_ATTACKS = [
    "cp /bin/sh ./a && chmod 4755 ./a",
    "cp /bin/sh ./b && chmod g+s ./b",
    "install -m 4755 /bin/sh ./c",
    "cp -p /usr/bin/su ./d",
    "tar xpf evil.tar",
    "mkdir -m 2755 e",
    "python3 -c 'import os; os.mknod(\"f\", 0o106755)'",
]
PYTHON_ATTACKS = [
    "os.close(os.open('g', os.O_CREAT | os.O_WRONLY, 0o4755))",
    "os.mkdir('h', 0o2755)",
    "os.mknod('i', stat.S_IFREG | 0o4755)",
    "open('j', 'w').close(); os.chmod('j', 0o6755)",
    "fd = os.open('.', os.O_TMPFILE | os.O_WRONLY, 0o4755)\n"
    "os.link(f'/proc/self/fd/{fd}', 'k', follow_symlinks=True)",
]


def read(path):
    with open(path) as f:
        return f.read().strip()


def setid_files(root):
    """Workspace paths (relative) that carry a setuid or setgid bit, seen from the host."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            if os.lstat(path).st_mode & (stat.S_ISUID | stat.S_ISGID):
                found.append(os.path.relpath(path, root))
    return sorted(found)


def evil_tar(path):
    """An archive holding a setuid-root shell and a setgid directory."""
    with tarfile.open(path, "w") as tar:
        with open("/bin/sh", "rb") as f:
            data = f.read()
        member = tarfile.TarInfo("evil-sh")
        member.size, member.mode, member.uid, member.gid = len(data), 0o6755, 0, 0
        tar.addfile(member, io.BytesIO(data))
        folder = tarfile.TarInfo("evil-dir")
        folder.type, folder.mode = tarfile.DIRTYPE, 0o2775
        tar.addfile(folder)


def parent_of(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def descends_from(pid, ancestor):
    while pid > 1:
        pid = parent_of(pid)
        if pid == ancestor:
            return True
    return False


def host_uid_of(marker, server_pid, timeout=10):
    """The host's real, effective and saved uids of the process below `server_pid` whose
    command line holds `marker`, once it shows up (other tests may run kernels meanwhile)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for name in os.listdir("/proc"):
            if not name.isdigit() or not descends_from(int(name), server_pid):
                continue
            try:
                with open(f"/proc/{name}/cmdline", "rb") as f:
                    if marker.replace(" ", "\0").encode() not in f.read():
                        continue
                with open(f"/proc/{name}/status") as f:
                    for line in f:
                        if line.startswith("Uid:"):
                            return [int(u) for u in line.split()[1:4]]
            except OSError:
                continue
        time.sleep(0.02)
    raise AssertionError(f"no process with {marker!r} found")


_copies = {}


def reachable_copy(binary):
    """The binary copied where any user may run it: the checkout may sit below a directory
    only root can enter."""
    if binary not in _copies:
        folder = tempfile.mkdtemp(prefix="byd-bin-")
        os.chmod(folder, 0o755)
        copy = os.path.join(folder, "backyard-mcp")
        shutil.copy2(binary, copy)
        os.chmod(copy, 0o755)
        _copies[binary] = copy
        atexit.register(shutil.rmtree, folder, True)
    return _copies[binary]


class Server:
    """A server on `root` as stdio client, with the environment's layer switches."""

    def __init__(self, root, without="", user=None, extra=()):
        env = dict(os.environ, BYD_TEST_SANDBOX_WITHOUT=without)
        command = [BINARY]
        if user is not None:
            command = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups",
                       reachable_copy(BINARY)]
        self.client = Client(*command, "--root", root, "--ruleset", "permissive",
                             "--log-level", "warn", *extra, env=env)

    def execute(self, command):
        return self.client.call("execute", command=command)["structuredContent"]

    def python(self, code):
        return self.client.call("run_python", code=code)["structuredContent"]

    def close(self):
        assert self.client.close() == 0


class Workspace:
    def __init__(self, owner=0):
        self.tmp = tempfile.TemporaryDirectory(prefix="byd-priv-")
        self.path = self.tmp.name
        os.chown(self.path, owner, owner)
        evil_tar(os.path.join(self.path, "evil.tar"))

    def cleanup(self):
        self.tmp.cleanup()


class PrivilegesTest(unittest.TestCase):
    def plant(self, server, ws):
        """Every attack; returns their outputs joined, for the messages."""
        outputs = []
        for command in COMMAND_ATTACKS:
            r = server.execute(command)
            outputs.append(f"$ {command}\n{r['stdout']}{r['stderr']}")
        for code in PYTHON_ATTACKS:
            r = server.python("import os, stat\n" + code)
            outputs.append(f">>> {code}\n{json.dumps(r.get('error'))}")
        return "\n".join(outputs)

    def check_contained(self, server, ws):
        log = self.plant(server, ws)
        self.assertEqual(setid_files(ws.path), [], log)
        # Each attempt was refused as such, not failed for another reason.
        self.assertGreaterEqual(log.count("Operation not permitted"), len(COMMAND_ATTACKS) - 1, log)

    def check_running_uid(self, server, expected):
        marker = f"sleep 2.{os.getpid()}{int(time.monotonic() * 1000) % 1000}"
        c = server.client
        rid = c.next_id
        c.next_id += 1
        c.send_raw(json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                               "params": {"name": "execute",
                                          "arguments": {"command": f"exec {marker}"}}}).encode()
                   + b"\n")
        uids = host_uid_of(marker, c.proc.pid)
        answer = c.wait_for(lambda m: m.get("id") == rid, 30)
        self.assertEqual(answer["result"]["structuredContent"]["exit_code"], 0, answer)
        self.assertEqual(uids, [expected] * 3)
        server.python("1")
        self.assertEqual(host_uid_of("-I -S -u /dev/fd/3", c.proc.pid), [expected] * 3,
                         "the Python kernel")


@unittest.skipUnless(os.geteuid() == 0, "needs a server running as root")
class RootServer(PrivilegesTest):
    def test_root_owned_workspace(self):
        ws = Workspace(owner=0)
        server = Server(ws.path)
        try:
            self.check_contained(server, ws)
            self.check_running_uid(server, DEDICATED_UID)
            r = server.execute("id -u; touch made && mkdir made-dir && stat -c %u made")
            self.assertEqual(r["stdout"], "1000\n1000\n")
            # On the host, what it made belongs to the workspace's owner.
            for name in ("made", "made-dir"):
                self.assertEqual(os.stat(os.path.join(ws.path, name)).st_uid, 0)
        finally:
            server.close()
            ws.cleanup()

    def test_user_owned_workspace(self):
        ws = Workspace(owner=UNPRIVILEGED)
        server = Server(ws.path)
        try:
            self.check_contained(server, ws)
            self.check_running_uid(server, UNPRIVILEGED)
            server.execute("touch made")
            self.assertEqual(os.stat(os.path.join(ws.path, "made")).st_uid, UNPRIVILEGED)
        finally:
            server.close()
            ws.cleanup()

    def test_sandbox_user_flag(self):
        ws = Workspace(owner=0)
        server = Server(ws.path, extra=("--sandbox-user", "nobody"))
        try:
            self.check_running_uid(server, 65534)
            server.execute("touch made")
            self.assertEqual(os.stat(os.path.join(ws.path, "made")).st_uid, 0)
        finally:
            server.close()
            ws.cleanup()

    def test_sandbox_user_root_is_refused(self):
        ws = Workspace(owner=0)
        # The sandbox is checked once the server has answered its first message.
        initialize = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}) + "\n"
        proc = subprocess.run([BINARY, "--root", ws.path, "--sandbox-user", "root"],
                              input=initialize.encode(), capture_output=True, timeout=30)
        ws.cleanup()
        self.assertIn(b'"result"', proc.stdout)
        self.assertIn(b"--sandbox-user root: sandboxed commands never run as root", proc.stderr)

    def test_without_the_uid_layer_commands_are_root(self):
        # The switch the next tests use: the uid layer alone off, commands are host root.
        ws = Workspace(owner=0)
        server = Server(ws.path, without="uid")
        try:
            self.check_running_uid(server, 0)
        finally:
            server.close()
            ws.cleanup()

    def test_without_the_setid_filter_a_setuid_root_file_is_made(self):
        # The filter alone stops it: the identity and the mounts let the owner chmod its file.
        ws = Workspace(owner=0)
        server = Server(ws.path, without="seccomp-setid")
        try:
            server.execute("cp /bin/sh ./a && chmod 4755 ./a")
            self.assertEqual(setid_files(ws.path), ["a"])
        finally:
            os.unlink(os.path.join(ws.path, "a"))
            server.close()
            ws.cleanup()

    def check_layer_holds(self, write, refusal, without_others, layer):
        """`write` (a command that prints "written" when it succeeds) is refused with
        `refusal` with the layers `without_others` off, and succeeds once `layer` is off too:
        that layer alone is what holds."""
        ws = Workspace(owner=0)
        try:
            server = Server(ws.path, without=without_others)
            r = server.execute(write)
            server.close()
            self.assertNotIn("written", r["stdout"])
            self.assertIn(refusal, r["stderr"])
            server = Server(ws.path, without=",".join(filter(None, [without_others, layer])))
            r = server.execute(write)
            server.close()
            self.assertEqual(r["stdout"], "written\n", r["stderr"])
        finally:
            ws.cleanup()

    def test_proc_sys_is_read_only_without_landlock_and_uid(self):
        # Without the proc layer too, the same value is written back: harmless, and it shows
        # the read-only mount is what held.
        path = "/proc/sys/kernel/printk_ratelimit"
        value = read(path)
        self.check_layer_holds(
            f"python3 -c 'open(\"{path}\", \"w\").write(\"{value}\")' && echo written",
            "Read-only file system", "landlock,uid", "proc")
        self.assertEqual(read(path), value)

    def test_landlock_confines_writes_the_mounts_allow(self):
        # /proc/self/comm is writable as far as the mounts go; only Landlock keeps a command
        # from writing outside the workspace, /tmp and /dev/shm there.
        self.check_layer_holds(
            "python3 -c \"open('/proc/self/comm', 'w').write('renamed')\" && echo written",
            "Permission denied", "", "landlock")

    def test_proc_secrets_are_masked(self):
        ws = Workspace(owner=0)
        server = Server(ws.path, without="uid")  # as root, so that only the masks hide them
        try:
            r = server.execute("wc -c < /proc/keys; wc -c < /proc/timer_list; "
                               "head -c 16 /proc/kcore | wc -c")
            self.assertEqual(r["stdout"].split(), ["0", "0", "0"], r["stderr"])
        finally:
            server.close()
            ws.cleanup()


class UnprivilegedServer(PrivilegesTest):
    """The server as an ordinary user: its commands can only be that user, and still cannot
    make setuid or setgid files."""

    @unittest.skipUnless(os.geteuid() == 0, "needs root to start the server as another user")
    def test_user_server(self):
        ws = Workspace(owner=UNPRIVILEGED)
        os.chown(os.path.join(ws.path, "evil.tar"), UNPRIVILEGED, UNPRIVILEGED)
        server = Server(ws.path, user=UNPRIVILEGED)
        try:
            self.check_contained(server, ws)
            self.check_running_uid(server, UNPRIVILEGED)
        finally:
            server.close()
            ws.cleanup()


if __name__ == "__main__":
    BINARY = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
