#!/usr/bin/python3
"""Every file tool on inputs far beyond its limits, against the real binary: a 2 GiB sparse
file, a 16 MiB single line and a directory of 1,000,000 entries. Each answer must be a clear
error or a cut result, and the server's peak memory (VmHWM) must stay under 256 MB.

usage: memory_bounds_test.py BINARY [unittest args]"""

import json
import os
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from mcp_client import Client, text  # noqa: E402

BINARY = None
PEAK_LIMIT_KIB = 256 << 10
# Under AddressSanitizer (scripts/test sets ASAN_OPTIONS for that build) memory is the
# sanitizer's (shadow, quarantine), so only the answers are checked there.
MEASURE = "ASAN_OPTIONS" not in os.environ
ENTRIES = 1_000_000


def peak_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(f.read().split("VmHWM:")[1].split()[0])


class MemoryBounds(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="byd-bounds-")
        ws = cls.ws = cls.tmp.name
        with open(os.path.join(ws, "big.txt"), "wb") as f:  # text, then 2 GiB of hole
            f.write(b"needle at the start\n")
            f.truncate(2 << 30)
        with open(os.path.join(ws, "line.txt"), "wb") as f:
            f.write(b"x" * (16 << 20) + b" needle\n")
        many = os.path.join(ws, "many")
        os.mkdir(many)
        started = time.monotonic()
        # Names for a few empty files (ext4 allows 65,000 links each): a million entries
        # without a million inodes to make.
        source = None
        for i in range(ENTRIES):
            name = os.path.join(many, f"f{i:07d}.txt")
            if i % 60000 == 0:
                source = name
                os.close(os.open(source, os.O_CREAT | os.O_WRONLY, 0o644))
            else:
                os.link(source, name)
        print(f"\n{ENTRIES} entries made in {time.monotonic() - started:.0f} s", file=sys.stderr)
        cls.client = Client(BINARY, "--root", ws, "--log-level", "warn", "--ruleset", "permissive")

    @classmethod
    def tearDownClass(cls):
        code = cls.client.close()
        cls.tmp.cleanup()
        assert code == 0, f"server exit code {code}"

    def call(self, tool, **arguments):
        # The peak of this call alone: writing 5 to clear_refs resets VmHWM.
        with open(f"/proc/{self.client.proc.pid}/clear_refs", "w") as f:
            f.write("5")
        r = self.client.call(tool, **arguments)
        peak = peak_kib(self.client.proc.pid)
        if MEASURE:
            self.assertLess(peak, PEAK_LIMIT_KIB, f"{tool} {arguments}: peak {peak} KiB")
        return r

    def assertCutOrRefused(self, r, *phrases):
        """A clear error, or a result that says it was cut."""
        body = text(r) + json.dumps(r.get("structuredContent", {}))
        self.assertTrue(any(p in body for p in phrases), body[:500])

    def test_read_file(self):
        r = self.call("read_file", path="big.txt")
        self.assertCutOrRefused(r, "binary file", "larger than", "too large", "limit")
        r = self.call("read_file", path="line.txt")
        self.assertFalse(r.get("isError"), text(r)[:300])
        self.assertLess(len(text(r)), 200 << 10)  # the line is cut, and the text with it

    def test_edit_file(self):
        r = self.call("edit_file", path="big.txt", old_string="needle", new_string="pin")
        self.assertTrue(r.get("isError"), text(r)[:300])
        self.assertCutOrRefused(r, "larger than", "too large", "limit")
        r = self.call("edit_file", path="line.txt", old_string="needle", new_string="pin",
                      dry_run=True)
        self.assertLess(len(json.dumps(r)), 1 << 20)  # the diff does not carry the whole line

    def test_grep(self):
        r = self.call("grep", pattern="needle", path="big.txt", output_mode="content")
        self.assertLess(len(json.dumps(r)), 1 << 20)
        r = self.call("grep", pattern="needle", path="line.txt", output_mode="content")
        self.assertLess(len(json.dumps(r)), 1 << 20)

    def test_append(self):
        r = self.call("write_file", path="big.txt", content="!", mode="append")
        self.assertFalse(r.get("isError"), text(r)[:300])

    def test_ls(self):
        r = self.call("ls", path="many")
        self.assertFalse(r.get("isError"), text(r)[:300])
        self.assertLessEqual(len(r["structuredContent"]["entries"]), 1000)
        self.assertCutOrRefused(r, "more", "truncated")

    def test_glob(self):
        r = self.call("glob", pattern="many/*.txt")
        self.assertFalse(r.get("isError"), text(r)[:300])
        self.assertLessEqual(len(r["structuredContent"]["paths"]), 1000)
        r = self.call("glob", pattern="**/*")
        self.assertLessEqual(len(r["structuredContent"]["paths"]), 1000)


if __name__ == "__main__":
    BINARY = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
