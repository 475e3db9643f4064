"""The README's example session is what examples/session.sh gets from the server, line for
line, every time: the script waits for each answer before it sends the next request.

usage: readme_example_test.py BINARY [unittest args]
"""

import os
import subprocess
import sys
import unittest

BINARY = None
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def readme_session():
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    start = text.index("### Example session")
    block = text[text.index("```\n", start) + 4:]
    block = block[:block.index("```")]
    return [line for line in block.splitlines() if line.startswith(("> ", "< "))]


class ReadmeExample(unittest.TestCase):
    def test_the_script_gives_the_readme_session_every_time(self):
        expected = readme_session()
        self.assertEqual(sum(line.startswith("> ") for line in expected), 5)
        for _ in range(10):
            r = subprocess.run([os.path.join(ROOT, "examples", "session.sh"), BINARY],
                               capture_output=True, timeout=30)
            self.assertEqual(r.returncode, 0, r.stderr.decode())
            self.assertEqual(r.stdout.decode().splitlines(), expected)


if __name__ == "__main__":
    BINARY = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
