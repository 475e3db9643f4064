"""End to end: execute's command rules read bash, judged by the real server under `permissive`
with a client that cannot answer elicitation (as Cursor, Codex and most agent harnesses).

Every line of tests/bash/corpus/ that only uses harmless commands runs, with no refusal; a
denied command or file hidden inside any construct is refused, and the secret it would print is
never seen; a line bash would refuse is refused with its position.

Usage: bash_rules_test.py BINARY
"""

import glob
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mcp_client import Client, text  # noqa: E402

BINARY = sys.argv.pop(1) if len(sys.argv) > 1 else "build/backyard-mcp"
CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bash", "corpus")
SECRET = "s3cr3t-7f1d"
REFUSED = ("denied for", "needs approval")


def harmless_lines():
    lines = []
    for path in sorted(glob.glob(os.path.join(CORPUS, "*.jsonl"))):
        with open(path, encoding="utf-8") as f:
            lines += [e["src"] for e in map(json.loads, f) if e["harmless"]]
    return lines


class BashRules(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="byd-bash-")
        with open(os.path.join(cls.tmp.name, ".env"), "w") as f:
            f.write(f"TOKEN={SECRET}\n")
        cls.client = Client(BINARY, "--root", cls.tmp.name, "--log-level", "warn",
                            "--ruleset", "permissive")

    @classmethod
    def tearDownClass(cls):
        code = cls.client.close()
        cls.tmp.cleanup()
        assert code == 0, f"server exit code {code}"

    def execute(self, command, **extra):
        return self.client.call("execute", command=command, timeout_s=10, **extra)

    def test_every_harmless_line_of_the_corpus_runs_without_asking(self):
        lines = harmless_lines()
        self.assertGreater(len(lines), 1000)
        refused = []
        for line in lines:
            r = self.execute(line)
            body = text(r)
            if r.get("isError") and any(word in body for word in REFUSED):
                refused.append((line, body))
        self.assertEqual(refused, [], f"{len(refused)} of {len(lines)} refused; first: "
                         f"{refused[:3]}")

    def test_ordinary_agent_lines_run_and_do_what_they_say(self):
        r = self.execute("cat > x.py <<'EOF'\nprint('from a heredoc', 6 * 7)\nEOF\n"
                         "/usr/bin/python3 x.py")
        self.assertFalse(r.get("isError"), r)
        self.assertIn("from a heredoc 42", text(r))
        r = self.execute("for i in 1 2 3 4; do echo tick$i; done")
        self.assertIn("tick4", text(r))
        r = self.execute("printf 'int main(void){return 3;}' > h.c && gcc h.c -o h && ./h; "
                         "echo status=$?")
        self.assertIn("status=3", text(r))
        r = self.execute("f() { echo \"in f: $1\"; }; case $(f x) in *x) f ok;; esac "
                         "> out.txt; cat < out.txt")
        self.assertIn("in f: ok", text(r))
        r = self.execute("diff <(printf 'a\\nb\\n') <(printf 'a\\nc\\n') | grep -c '^[<>]'")
        self.assertIn("2", text(r))

    def test_what_is_hidden_inside_any_construct_is_refused(self):
        for line in ["if false; then rm -rf ~; fi", "f() { cat .env; }", "x=$(cat .env)",
                     "false && cat <<EOF\n$(rm -rf /)\nEOF",
                     'while read l; do echo "$l"; done < .env',
                     "for f in a; do echo; done; cat < .env", "echo `cat .env`",
                     "bash -c 'grep TOKEN .env'", ":(){ :|:& };:"]:
            r = self.execute(line)
            self.assertTrue(r.get("isError"), line)
            self.assertIn("execute denied for", text(r), line)
            self.assertNotIn(SECRET, json.dumps(r), line)

    def test_what_is_known_only_when_it_runs_is_asked_and_so_refused_here(self):
        r = self.execute('CMD=ls; $CMD -l')
        self.assertTrue(r.get("isError"), r)
        self.assertIn("needs approval (what it runs is known only when the line runs: "
                      "'$CMD -l' (line 1, column 9): its name '$CMD' is an expansion)", text(r))

    def test_a_line_bash_refuses_is_refused_with_its_position(self):
        r = self.execute("if true\nthen echo hi\ndone")
        self.assertTrue(r.get("isError"), r)
        self.assertIn("the line is not valid bash (line 3, column 1: expected 'fi' but found "
                      "'done')", text(r))

    def test_a_redirection_is_judged_from_the_working_directory(self):
        os.makedirs(os.path.join(self.tmp.name, "sub"), exist_ok=True)
        r = self.execute("cat < ../.env", cwd="sub")
        self.assertTrue(r.get("isError"), r)
        self.assertIn("reads '.env'", text(r))
        r = self.execute("echo made > ../made.txt", cwd="sub")
        self.assertFalse(r.get("isError"), r)
        with open(os.path.join(self.tmp.name, "made.txt")) as f:
            self.assertEqual(f.read(), "made\n")


if __name__ == "__main__":
    unittest.main()
