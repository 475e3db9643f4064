#!/usr/bin/python3
"""Adversarial inputs against the real binary: each gets a clear error, the server still
answers ping, and nothing outside the workspace root is read, created or changed.

usage: adversarial_test.py BINARY [unittest args]"""

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from mcp_client import Client, text  # noqa: E402

BINARY = None


def tree_digest(path):
    """Names, link targets and contents of everything under `path`."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in sorted(os.walk(path)):
        dirnames.sort()
        for name in sorted(dirnames + filenames):
            full = os.path.join(dirpath, name)
            h.update(full.encode("utf-8", "surrogateescape"))
            if os.path.islink(full):
                h.update(os.readlink(full).encode("utf-8", "surrogateescape"))
            elif os.path.isfile(full):
                with open(full, "rb") as f:
                    h.update(f.read())
    return h.hexdigest()


class Adversarial(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="byd-adv-")
        base = cls.tmp.name
        cls.ws = os.path.join(base, "ws")
        cls.outside = os.path.join(base, "outside")
        cls.evil = os.path.join(base, "ws_evil")
        for d in (cls.ws, cls.outside, cls.evil):
            os.makedirs(d)
        with open(os.path.join(cls.outside, "private.txt"), "w") as f:
            f.write("OUTSIDE_SECRET\n")
        with open(os.path.join(cls.evil, "evil.txt"), "w") as f:
            f.write("EVIL_SECRET\n")
        with open(os.path.join(cls.ws, "ok.txt"), "w") as f:
            f.write("hello\n")
        os.symlink("/etc/passwd", os.path.join(cls.ws, "passwd"))
        os.symlink("../outside", os.path.join(cls.ws, "link_out"))
        os.symlink("../outside/created.txt", os.path.join(cls.ws, "dangling"))
        os.symlink("../ws_evil/evil.txt", os.path.join(cls.ws, "sibling_link"))
        # A secret directory inside, reached through a symlinked directory or a dangling link.
        os.makedirs(os.path.join(cls.ws, ".ssh"))
        os.symlink(".ssh", os.path.join(cls.ws, "keys"))
        os.symlink(".ssh/authorized_keys", os.path.join(cls.ws, "authkeys"))
        with open(os.path.join(cls.ws.encode(), b"name-\xff\xfe.txt"), "w") as f:
            f.write("NONUTF8_CONTENT\n")
        with open(os.path.join(cls.ws, "one_line.txt"), "w") as f:
            f.write("x" * (50 << 20))
        with open(os.path.join(cls.ws, "aaaa.txt"), "w") as f:
            f.write("a" * (1 << 20) + "!")
        cls.outside_before = tree_digest(cls.outside) + tree_digest(cls.evil)
        cls.client = Client(BINARY, "--root", cls.ws, "--log-level", "warn", "--ruleset", "permissive")

    @classmethod
    def tearDownClass(cls):
        code = cls.client.close()
        cls.tmp.cleanup()
        assert code == 0, f"server exit code {code}"

    def tearDown(self):
        self.assertTrue(self.client.ping(), "server stopped answering ping")
        self.assertEqual(tree_digest(self.outside) + tree_digest(self.evil), self.outside_before,
                         "something outside the workspace changed")
        self.assertFalse(os.path.exists(os.path.join(self.outside, "created.txt")))

    def assertToolError(self, result, *fragments):
        self.assertTrue(result.get("isError"), result)
        for fragment in fragments:
            self.assertIn(fragment, text(result))

    def test_nul_in_path(self):
        self.assertToolError(self.client.call("read_file", path="ok.txt\u0000../../etc/passwd"),
                             "NUL")

    def test_very_long_path(self):
        self.assertToolError(self.client.call("read_file", path="a/" * 2500),
                             "arguments.path", "4096")

    def test_dotdot_escapes(self):
        for path in ("../outside/private.txt", "a/../../outside/private.txt", "..", "/etc/passwd"):
            self.assertToolError(self.client.call("read_file", path=path), "outside the workspace")
        self.assertToolError(self.client.call("ls", path=".."), "outside the workspace")

    def test_sibling_prefix_directory(self):
        self.assertToolError(self.client.call("read_file", path=self.evil + "/evil.txt"),
                             "outside the workspace")
        self.assertToolError(self.client.call("read_file", path="sibling_link"),
                             "outside the workspace")
        self.assertToolError(self.client.call("write_file", path=self.evil + "/x", content="x"),
                             "outside the workspace")

    def test_symlink_to_etc_passwd_does_not_leak(self):
        self.assertToolError(self.client.call("read_file", path="passwd"), "outside the workspace")
        grep = self.client.call("grep", pattern="root:", output_mode="content")
        self.assertFalse(grep["isError"])
        self.assertNotIn("root:", json.dumps(grep["structuredContent"]))
        glob = self.client.call("glob", pattern="**/*passwd*")
        self.assertEqual(glob["structuredContent"]["paths"], [])
        grep = self.client.call("grep", pattern="SECRET")
        self.assertEqual(grep["structuredContent"]["files"], [])

    def test_dangling_symlink_write(self):
        self.assertToolError(self.client.call("write_file", path="dangling", content="pwned"),
                             "outside the workspace")
        self.assertToolError(
            self.client.call("write_file", path="dangling", content="pwned", mode="append"),
            "outside the workspace")

    def test_symlinked_parent_write(self):
        self.assertToolError(self.client.call("write_file", path="link_out/new.txt", content="x"),
                             "outside the workspace")
        self.assertToolError(
            self.client.call("write_file", path="link_out/deeper/new.txt", content="x"),
            "outside the workspace")
        self.assertToolError(
            self.client.call("edit_file", path="link_out/private.txt", old_string="OUTSIDE",
                             new_string="INSIDE"), "outside the workspace")

    def test_new_file_in_a_secret_directory_through_a_symlink(self):
        for path in ("keys/authorized_keys", "keys/sub/authorized_keys", "authkeys"):
            self.assertToolError(self.client.call("write_file", path=path, content="ssh-rsa X"),
                                 "write denied", "which the rules deny")
            self.assertToolError(
                self.client.call("write_file", path=path, content="ssh-rsa X", mode="append"),
                "write denied")
        self.assertEqual(os.listdir(os.path.join(self.ws, ".ssh")), [])

    def test_proc_self_root(self):
        self.assertToolError(
            self.client.call("read_file", path="/proc/self/root/etc/passwd"),
            "outside the workspace")

    def test_non_utf8_file_names(self):
        ls = self.client.call("ls")
        names = [e["name"] for e in ls["structuredContent"]["entries"]]
        self.assertIn("name-\ufffd\ufffd.txt", names)
        grep = self.client.call("grep", pattern="NONUTF8_CONTENT")
        self.assertEqual(len(grep["structuredContent"]["files"]), 1)

    def test_fifty_megabyte_single_line(self):
        r = self.client.call("read_file", path="one_line.txt")
        self.assertFalse(r["isError"])
        self.assertIn("line cut at 2000 of 52428800 bytes", text(r))
        self.assertLess(len(text(r)), 4000)

    def test_catastrophic_regex_is_linear(self):
        r = self.client.call("grep", pattern="(a+)+$", path="aaaa.txt", output_mode="count")
        self.assertFalse(r["isError"])
        self.assertEqual(r["structuredContent"]["files_matched"], 0)

    def test_malformed_json(self):
        self.client.send_raw(b'{"jsonrpc": "2.0", "id": 77, "method": "ping"\n')
        m = self.client.wait_for(lambda m: m.get("error", {}).get("code") == -32700)
        self.assertIsNone(m["id"])

    def test_wrong_types_and_unknown_fields(self):
        r = self.client.request("tools/call", {"name": 5})
        self.assertEqual(r["error"]["code"], -32602)
        r = self.client.call("read_file", path=["a"])
        self.assertToolError(r, "arguments.path: must be a string")
        r = self.client.call("grep", pattern="x", recursive=True)
        self.assertToolError(r, "recursive", "unknown property")
        r = self.client.call("read_file", path="ok.txt", limit=-5)
        self.assertToolError(r, "arguments.limit")

    def test_hundred_megabyte_line(self):
        chunk = b"x" * (1 << 20)
        self.client.send_raw(b'{"jsonrpc":"2.0","id":5555,"method":"ping","params":{"pad":"')
        for _ in range(100):
            self.client.send_raw(chunk)
        self.client.send_raw(b'"}}\n')
        m = self.client.wait_for(lambda m: "exceeds the size limit" in
                                 m.get("error", {}).get("message", ""))
        self.assertEqual(m["error"]["code"], -32600)

    def test_deeply_nested_json(self):
        self.client.send_raw(b"[" * 1000000 + b"\n")
        m = self.client.wait_for(lambda m: m.get("error", {}).get("code") == -32700)
        self.assertIn("nested deeper", m["error"]["message"])


class AppendToAHugeFile(unittest.TestCase):
    def test_append_to_a_sparse_file_keeps_memory_and_disk_bounded(self):
        # One byte appended to a 2 GiB sparse file: copied in bounded memory, holes kept.
        with tempfile.TemporaryDirectory(prefix="byd-append-") as ws:
            path = os.path.join(ws, "big.bin")
            with open(path, "wb") as f:
                f.write(b"head")
                f.truncate(2 << 30)
            c = Client(BINARY, "--root", ws, "--log-level", "warn", "--ruleset", "permissive")
            try:
                r = c.call("write_file", path="big.bin", content="!", mode="append")
                self.assertFalse(r.get("isError"), r)
                with open(f"/proc/{c.proc.pid}/status") as f:
                    peak_kib = int(f.read().split("VmHWM:")[1].split()[0])
            finally:
                c.close()
            if "ASAN_OPTIONS" not in os.environ:  # under the sanitizer, memory is its own
                self.assertLess(peak_kib, 256 << 10)
            st = os.stat(path)
            self.assertEqual(st.st_size, (2 << 30) + 1)
            self.assertLess(st.st_blocks * 512, 16 << 20)  # still sparse
            with open(path, "rb") as f:
                self.assertEqual(f.read(4), b"head")
                f.seek(2 << 30)
                self.assertEqual(f.read(), b"!")


class HardLinkToASecret(unittest.TestCase):
    """A hard link is the file itself under another name: a link to .env, present in the
    checkout or made by a command, is judged as .env by every file tool."""

    def test_hard_links_to_a_secret_are_refused(self):
        with tempfile.TemporaryDirectory(prefix="byd-links-") as ws:
            with open(os.path.join(ws, ".env"), "w") as f:
                f.write("TOKEN=hunter2\n")
            os.link(os.path.join(ws, ".env"), os.path.join(ws, "notes.txt"))
            with open(os.path.join(ws, "a.txt"), "w") as f:
                f.write("plain\n")
            os.link(os.path.join(ws, "a.txt"), os.path.join(ws, "b.txt"))  # harmless links
            c = Client(BINARY, "--root", ws, "--log-level", "warn", "--ruleset", "permissive")
            try:
                r = c.call("read_file", path="notes.txt")
                self.assertTrue(r.get("isError"), r)
                self.assertIn("another name (a hard link) of a file the rules deny", text(r))
                r = c.call("grep", pattern="TOKEN", output_mode="content")
                self.assertNotIn("hunter2", json.dumps(r))
                r = c.call("edit_file", path="notes.txt", old_string="TOKEN", new_string="X",
                           dry_run=True)
                self.assertTrue(r.get("isError"), r)
                self.assertNotIn("hunter2", json.dumps(r))
                r = c.call("write_file", path="notes.txt", content="more", mode="append")
                self.assertTrue(r.get("isError"), r)
                self.assertIn("plain", text(c.call("read_file", path="b.txt")))
                # Inside the sandbox the link is masked as .env is, and a command cannot make
                # another: what masks .env is a mount of its own.
                r = c.call("execute", command="cat notes.txt b.txt; ln .e?v made-by-a-command")
                self.assertNotIn("hunter2", json.dumps(r))
                self.assertIn("plain", r["structuredContent"]["stdout"])
                self.assertIn("Invalid cross-device link", r["structuredContent"]["stderr"])
                self.assertFalse(os.path.exists(os.path.join(ws, "made-by-a-command")))
            finally:
                c.close()
            with open(os.path.join(ws, ".env")) as f:
                self.assertEqual(f.read(), "TOKEN=hunter2\n")


class EnvThatRunsCode(unittest.TestCase):
    """execute's `env` with variables that make bash or git run code, under a ruleset that
    allows only `echo hello` and `git status*`: refused, and nothing ran."""

    def test_env_is_judged(self):
        with tempfile.TemporaryDirectory(prefix="byd-env-") as ws:
            rules = os.path.join(ws, "..", os.path.basename(ws) + ".rules.json")
            with open(rules, "w") as f:
                json.dump({"default": "allow", "execute": {"default": "deny", "rules": [
                    {"pattern": "echo hello", "action": "allow"},
                    {"pattern": "git status*", "action": "allow"}]}}, f)
            subprocess.run(["git", "init", "-q", ws], check=True)
            c = Client(BINARY, "--root", ws, "--log-level", "warn", "--ruleset", rules)
            try:
                ok = c.call("execute", command="echo hello", env={"DEBUG": "1"})
                self.assertEqual(ok["structuredContent"]["stdout"], "hello\n")
                attacks = [
                    ("echo hello", {"BASH_ENV": "$(touch pwned-bash-env)"}, "BASH_ENV"),
                    ("git status", {"GIT_CONFIG_COUNT": "1",
                                    "GIT_CONFIG_KEY_0": "core.fsmonitor",
                                    "GIT_CONFIG_VALUE_0": "touch pwned-fsmonitor; false"},
                     "GIT_CONFIG_COUNT"),
                    ("BASH_ENV='$(touch pwned-line)' echo hello", {}, "BASH_ENV"),
                ]
                for command, env, name in attacks:
                    r = c.call("execute", command=command, env=env)
                    self.assertTrue(r.get("isError"), r)
                    self.assertIn(f"{name} changes what runs, and no rule names it", text(r))
                self.assertEqual([n for n in os.listdir(ws) if n.startswith("pwned")], [])
            finally:
                c.close()
                os.unlink(rules)


class Lifecycle(unittest.TestCase):
    def test_eof_in_mid_message(self):
        c = Client(BINARY, "--backend", "state", "--log-level", "warn")
        c.send_raw(b'{"jsonrpc":"2.0","id":9,"meth')
        c.proc.stdin.close()
        m = c.read_message()
        self.assertEqual(m["error"]["code"], -32700)
        self.assertEqual(c.proc.wait(30), 0)
        c.proc.stdout.close(); c.proc.stderr.close()

    def test_state_file_saved_on_eof_and_loaded(self):
        with tempfile.TemporaryDirectory() as tmp:
            state = os.path.join(tmp, "state.json")
            c = Client(BINARY, "--backend", "state", "--state-file", state, "--ruleset", "permissive")
            self.assertFalse(c.call("write_file", path="a/b.txt", content="persist me")["isError"])
            self.assertEqual(c.close(), 0)
            with open(state) as f:
                self.assertEqual(json.load(f)["files"]["a/b.txt"]["content"], "persist me")
            c = Client(BINARY, "--backend", "state", "--state-file", state, "--ruleset", "permissive")
            self.assertIn("persist me", text(c.call("read_file", path="a/b.txt")))
            self.assertEqual(c.close(), 0)

    def test_state_file_saved_on_sigterm_and_with_sync(self):
        with tempfile.TemporaryDirectory() as tmp:
            state = os.path.join(tmp, "state.json")
            c = Client(BINARY, "--backend", "state", "--state-file", state, "--state-sync", "--ruleset", "permissive")
            c.call("write_file", path="x.txt", content="synced")
            with open(state) as f:  # --state-sync: saved before the answer
                self.assertIn("x.txt", json.load(f)["files"])
            c.call("write_file", path="y.txt", content="at exit")
            c.proc.terminate()
            self.assertEqual(c.proc.wait(30), 0)
            with open(state) as f:
                self.assertIn("y.txt", json.load(f)["files"])
            c.proc.stdin.close(); c.proc.stdout.close(); c.proc.stderr.close()

    def test_only_protocol_messages_on_stdout(self):
        c = Client(BINARY, "--backend", "state", "--log-level", "trace")
        c.call("ls")
        c.proc.stdin.close()
        out = c.proc.stdout.read()
        c.proc.wait(30)
        for line in (c.buffer + out).splitlines():
            self.assertEqual(json.loads(line)["jsonrpc"], "2.0")
        self.assertIn(b"tools/call ls", c.proc.stderr.read())
        c.proc.stdout.close(); c.proc.stderr.close()


class Startup(unittest.TestCase):
    """Configuration mistakes stop the server at once with exit code 2 and say what is wrong."""

    def start(self, *args):
        import subprocess
        return subprocess.run([BINARY, *args], input=b"", capture_output=True, timeout=30)

    def config(self, tmp, doc):
        path = os.path.join(tmp, "config.json")
        with open(path, "w") as f:
            f.write(doc if isinstance(doc, str) else json.dumps(doc))
        return path

    def test_unknown_config_key(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = self.start("--config", self.config(tmp, {"rooot": tmp}))
            self.assertEqual(r.returncode, 2)
            self.assertIn(b"rooot", r.stderr)
            self.assertEqual(r.stdout, b"")

    def test_wrong_config_type(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = self.start("--config", self.config(tmp, {"max_results": "many"}))
            self.assertEqual(r.returncode, 2)
            self.assertIn(b": max_results: not an integer", r.stderr)

    def test_config_not_json(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = self.start("--config", self.config(tmp, "{root:"))
            self.assertEqual(r.returncode, 2)
            self.assertIn(b"is not valid JSON", r.stderr)

    def test_missing_root(self):
        r = self.start("--root", "/nonexistent/backyard")
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"root '/nonexistent/backyard' does not exist", r.stderr)

    def test_missing_root_in_config(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = self.start("--config", self.config(tmp, {"root": tmp + "/gone"}))
            self.assertEqual(r.returncode, 2)
            self.assertIn(b"does not exist", r.stderr)

    def test_flags_override_config(self):
        with tempfile.TemporaryDirectory() as tmp:
            cfg = self.config(tmp, {"root": "/nonexistent/backyard"})
            r = self.start("--config", cfg, "--root", tmp, "--log-level", "warn")
            self.assertEqual(r.returncode, 0, r.stderr)

    @unittest.skipUnless(os.geteuid() == 0, "makes a root-owned directory")
    def test_docker_root_the_container_user_cannot_enter(self):
        with tempfile.TemporaryDirectory() as tmp:  # 0700, root's: as mktemp -d makes it
            os.chmod(tmp, 0o700)
            r = self.start("--backend", "docker", "--root", tmp, "--docker-host",
                           "unix:///nonexistent/docker.sock")
            self.assertEqual(r.returncode, 2)
            self.assertIn(f"--root {tmp} (owner uid 0, mode 0700): the container's user, uid "
                          f"65533, cannot enter it, so every call would fail. Give it to that "
                          f"user (chown 65533:65533 {tmp}) or give others access (chmod o+rwx)",
                          r.stderr.decode())

    def test_bad_flag(self):
        r = self.start("--backend", "cloud")
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"--backend", r.stderr)

    def ruleset_file(self, tmp, doc):
        path = os.path.join(tmp, "rules.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        return path

    def test_ruleset_with_bad_pattern(self):
        with tempfile.TemporaryDirectory() as tmp:
            rules = self.ruleset_file(tmp, {"default": "deny", "read": {"rules": [
                {"pattern": "src/[ab", "action": "allow"}]}})
            r = self.start("--ruleset", rules)
            self.assertEqual(r.returncode, 2)
            self.assertIn(b"read.rules[0].pattern: invalid glob", r.stderr)

    def test_ruleset_with_unknown_operation(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = self.start("--ruleset", self.ruleset_file(tmp, {"default": "deny", "chmod": {}}))
            self.assertEqual(r.returncode, 2)
            self.assertIn(b"ruleset.chmod: unknown property", r.stderr)

    def test_ruleset_with_unknown_action(self):
        with tempfile.TemporaryDirectory() as tmp:
            rules = self.ruleset_file(tmp, {"default": "deny", "write": {"rules": [
                {"pattern": "*", "action": "maybe"}]}})
            r = self.start("--ruleset", rules)
            self.assertEqual(r.returncode, 2)
            self.assertIn(b"ruleset.write.rules[0].action: must be one of", r.stderr)

    def test_unknown_preset(self):
        r = self.start("--ruleset", "lax")
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"--ruleset 'lax' is neither a preset", r.stderr)

    def test_print_ruleset(self):
        r = self.start("--ruleset", "readonly", "--print-ruleset")
        self.assertEqual(r.returncode, 0)
        doc = json.loads(r.stdout)
        self.assertEqual(doc["name"], "readonly")
        self.assertEqual(doc["write"]["default"], "deny")

    def test_inline_ruleset_in_config(self):
        with tempfile.TemporaryDirectory() as tmp:
            cfg = self.config(tmp, {"ruleset": {"name": "mine", "default": "allow"}})
            r = self.start("--config", cfg, "--print-ruleset")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(json.loads(r.stdout)["name"], "mine")

    def test_the_docker_libraries_are_loaded_only_when_needed(self):
        # libcurl and libarchive (and GnuTLS, Kerberos, ICU behind them) would cost every start
        # about 8 ms: the Docker backend loads them itself.
        import subprocess
        linked = subprocess.run(["ldd", BINARY], capture_output=True, text=True).stdout
        for lib in ("libcurl", "libarchive", "libgnutls", "libkrb5", "libicu"):
            self.assertNotIn(lib, linked)

    def test_help_and_version(self):
        r = self.start("--help")
        self.assertEqual(r.returncode, 0)
        for flag in (b"--backend", b"--root", b"--allow", b"--state-file", b"--state-sync",
                     b"--log-level", b"--config", b"--version"):
            self.assertIn(flag, r.stdout)
        r = self.start("--version")
        self.assertEqual(r.returncode, 0)
        self.assertTrue(r.stdout.startswith(b"backyard-mcp "))


class Instructions(unittest.TestCase):
    """The instructions name exactly the tools tools/list offers."""

    def offered(self, *args):
        import subprocess
        with tempfile.TemporaryDirectory() as tmp:
            lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": "t", "version": "1"}}},
                     {"jsonrpc": "2.0", "method": "notifications/initialized"},
                     {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]
            out = subprocess.run([BINARY, "--root", tmp, *args],
                                 input="".join(json.dumps(m) + "\n" for m in lines).encode(),
                                 capture_output=True, timeout=30).stdout
        by_id = {m.get("id"): m for m in map(json.loads, out.decode().splitlines())}
        text = by_id[1]["result"]["instructions"]
        named = text.split("Tools: ", 1)[1].split(".", 1)[0].split(", ")
        listed = [t["name"] for t in by_id[2]["result"]["tools"]]
        return named, listed

    def test_state_backend_names_no_command_tools(self):
        named, listed = self.offered("--backend", "state")
        self.assertEqual(named, listed)
        self.assertNotIn("execute", named)
        self.assertNotIn("run_python", named)

    def test_a_ruleset_that_hides_tools(self):
        for ruleset in ("readonly", "strict", "default"):
            named, listed = self.offered("--ruleset", ruleset)
            self.assertEqual(named, listed, ruleset)


if __name__ == "__main__":
    BINARY = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
