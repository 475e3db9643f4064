"""End to end: `backyard-mcp batch` on a file mixing good, failing, timing-out, memory-hungry
and malformed lines: one output line per input line (blank ones aside) with its id, in any
order; each run's facts as run_python gives them; progress and a summary on stderr; a fork bomb
fails its own run only.

Usage: batch_test.py BINARY [--backend docker --runtime runc|runsc]
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mcp_client import binary_and_backend  # noqa: E402

BINARY, EXTRA = binary_and_backend(sys.argv)

LINES = [
    {"id": "sum", "code": "print(sum(range(1000)))"},
    {"id": 2, "code": "1/0"},
    {"id": "loop", "code": "while True: pass", "timeout_s": 1},
    "this is not JSON",
    {"id": "nocode"},
    {"id": "stdin", "code": "import sys\nprint(sys.stdin.read()[::-1])", "stdin": "abc"},
    {"id": "hog", "code": "b = bytearray(600 << 20)", "memory": "256m"},
    "",
    {"id": "extra", "code": "1", "bogus": True},
    {"id": "bomb", "code": "import os\nwhile True:\n    try:\n        os.fork()\n"
                           "    except OSError:\n        pass", "timeout_s": 2},
    {"id": "value", "code": "6 * 7"},
]


# One after the other, so the second runs on the template the first used.
SEQUENTIAL = [
    {"id": "left", "code": "import os\nx = 1\nopen('/tmp/mark', 'w').write('x')"},
    {"id": "clean", "code": "import os\n(globals().get('x'), os.path.exists('/tmp/mark'))"},
]


def run_batch(lines, parallel):
    """The output lines and the process of `backyard-mcp batch` on `lines`."""
    with tempfile.TemporaryDirectory(prefix="byd-batch-") as tmp:
        os.chmod(tmp, 0o777)
        runs, results = os.path.join(tmp, "runs.jsonl"), os.path.join(tmp, "out.jsonl")
        ws = os.path.join(tmp, "ws")
        os.makedirs(ws)
        os.chmod(ws, 0o777)
        with open(runs, "w") as f:
            for line in lines:
                f.write((line if isinstance(line, str) else json.dumps(line)) + "\n")
        p = subprocess.run([BINARY, "batch", "--in", runs, "--out", results, "--parallel",
                            str(parallel), "--root", ws, "--python-packages",
                            os.path.join(tmp, "packages"), *EXTRA],
                           capture_output=True, timeout=300)
        assert p.returncode == 0, p.stderr.decode()
        with open(results) as f:
            return [json.loads(line) for line in f], p


class Batch(unittest.TestCase):
    def test_a_run_leaves_nothing_for_the_next_on_its_template(self):
        out, _ = run_batch(SEQUENTIAL, 1)
        self.assertEqual([o["id"] for o in out], ["left", "clean"])
        self.assertEqual(out[1]["result"], "(None, False)", out)

    def test_a_mixed_file(self):
        out, p = run_batch(LINES, 2)
        self.assertEqual(len(out), len(LINES) - 1)  # the blank line is no run
        by_id = {}
        for line in out:
            if line.get("error") and line["error"]["type"] == "BadLine":
                by_id.setdefault("bad", []).append(line)
            else:
                by_id[line["id"]] = line
        self.assertEqual(by_id["sum"]["stdout"], "499500\n")
        self.assertIsNone(by_id["sum"]["error"])
        self.assertEqual(by_id[2]["error"]["type"], "ZeroDivisionError")
        self.assertTrue(by_id["loop"]["timed_out"])
        self.assertEqual(by_id["stdin"]["stdout"], "cba\n")
        self.assertEqual(by_id["hog"]["error"]["type"], "MemoryError")
        self.assertIsNotNone(by_id["bomb"]["error"])
        self.assertEqual(by_id["value"]["result"], "42")
        bad = {(b["id"], b["line"]): b["error"]["message"] for b in by_id["bad"]}
        self.assertEqual(bad[(None, 4)], "line 4: not JSON")
        self.assertIn("\"code\" must be a non-empty string", bad[("nocode", 5)])
        self.assertIn("unknown field \"bogus\"", bad[("extra", 9)])
        err = p.stderr.decode()
        self.assertIn("batch: 7 runs (4 failed), 3 bad lines", err)

    def test_usage_errors(self):
        p = subprocess.run([BINARY, "batch", "--out", "/dev/null"], capture_output=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--in", p.stderr.decode() + p.stdout.decode())
        p = subprocess.run([BINARY, "batch", "--in", "/nonexistent/runs", "--out", "/dev/null"],
                           capture_output=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("cannot read /nonexistent/runs", p.stderr.decode())


if __name__ == "__main__":
    unittest.main()
