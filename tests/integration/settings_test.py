"""The settings, declared once (settings.cpp's table), as every source gives them: flags, the
environment (BACKYARD_*), the config file, the defaults; the precedence between them; the errors
of each; and what is derived from the table (--help, the config file's schema, the README's
table, --print-config).

usage: settings_test.py BINARY [unittest args]
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

BINARY = None
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(*args, env=None, cwd=None):
    """The server with `args`, and only the environment given (besides PATH)."""
    full = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    full.update(env or {})
    return subprocess.run([BINARY, *args], input=b"", capture_output=True, timeout=30, env=full,
                          cwd=cwd)


def effective(*args, env=None):
    r = run(*args, "--print-config", env=env)
    if r.returncode != 0:
        raise AssertionError(f"exit {r.returncode}: {r.stderr.decode()}")
    return json.loads(r.stdout)


class Settings(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def config(self, doc):
        path = os.path.join(self.dir, "config.json")
        with open(path, "w") as f:
            f.write(doc if isinstance(doc, str) else json.dumps(doc))
        return path

    def test_precedence_flag_environment_file_default(self):
        cfg = self.config({"max_sessions": 5, "max_results": 50, "workers": 3})
        env = {"BACKYARD_MAX_SESSIONS": "6", "BACKYARD_MAX_RESULTS": "60"}
        got = effective("--config", cfg, "--max-sessions", "7", env=env)
        self.assertEqual(got["max_sessions"], {"value": 7, "from": "flag --max-sessions"})
        self.assertEqual(got["max_results"],
                         {"value": 60, "from": "environment BACKYARD_MAX_RESULTS"})
        self.assertEqual(got["workers"], {"value": 3, "from": "config file " + cfg})
        self.assertEqual(got["max_connections"], {"value": 1024, "from": "default"})

    def test_relative_paths_in_a_config_file_are_relative_to_the_file(self):
        os.mkdir(os.path.join(self.dir, "sub"))
        with open(os.path.join(self.dir, "token"), "w") as f:
            f.write("secret")

        def from_root(doc):
            r = run("--config", self.config(doc), "--print-config", cwd="/")
            self.assertEqual(r.returncode, 0, r.stderr.decode())
            return {key: v["value"] for key, v in json.loads(r.stdout).items()}

        got = from_root({"$comment": "paths beside this file", "root": ".", "allow": ["sub"],
                         "token_file": "sub/../token", "transport": "http",
                         "workspace_root": self.dir + "/sub", "ruleset": "default"})
        self.assertEqual(got["root"], self.dir)
        self.assertEqual(got["allow"], [os.path.join(self.dir, "sub")])
        self.assertEqual(got["token_file"], os.path.join(self.dir, "token"))
        self.assertEqual(got["workspace_root"], self.dir + "/sub")  # absolute: as it is
        self.assertEqual(got["ruleset"], "default")  # a preset's name stays a name
        got = from_root({"backend": "state", "state_file": "state.json"})
        self.assertEqual(got["state_file"], os.path.join(self.dir, "state.json"))
        # A ruleset file beside the config file is found from anywhere.
        with open(os.path.join(self.dir, "rules.json"), "w") as f:
            json.dump({"name": "mine", "default": "deny"}, f)
        cfg = self.config({"root": ".", "ruleset": "rules.json"})
        r = run("--config", cfg, "--print-ruleset", cwd="/")
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        self.assertEqual(json.loads(r.stdout)["name"], "mine")
        # On the command line a relative path still follows the current directory.
        self.assertEqual(effective("--root", ".")["root"]["value"], ".")

    def test_a_ruleset_file_that_extends_a_preset_keeps_its_denials(self):
        rules = os.path.join(self.dir, "rules.json")
        with open(rules, "w") as f:
            json.dump({"extends": "readonly", "name": "review-and-test",
                       "execute": {"rules": [{"pattern": "npm test*", "action": "allow"}]}}, f)
        r = run("--ruleset", rules, "--print-ruleset")
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        got = json.loads(r.stdout)
        self.assertEqual(got["name"], "review-and-test")
        self.assertNotIn("extends", got)
        execute = got["execute"]["rules"]
        self.assertEqual(execute[-1], {"pattern": "npm test*", "action": "allow"})
        self.assertTrue(all(rule["action"] == "deny" for rule in execute[:-1]), execute)
        self.assertGreater(len(execute), 1)  # the preset's denials, first
        self.assertIn({"pattern": "**/.env", "action": "deny"},
                      [{k: rule[k] for k in ("pattern", "action") if k in rule}
                       for rule in got["read"]["rules"]])
        with open(rules, "w") as f:
            json.dump({"extends": "lenient"}, f)
        r = run("--ruleset", rules)
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"extends: no ruleset preset 'lenient'", r.stderr)

    def test_the_example_config_serves_its_own_directory_from_anywhere(self):
        r = run("--config", os.path.join(ROOT, "examples", "config.json"), "--print-config",
                cwd="/")
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        self.assertEqual(json.loads(r.stdout)["root"]["value"], os.path.join(ROOT, "examples"))

    def test_config_file_annotations_must_be_strings(self):
        cfg = self.config({"$comment": 3})
        r = run("--config", cfg)
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"$comment: not a string", r.stderr)

    def test_every_type_from_the_environment(self):
        got = effective(env={"BACKYARD_ALLOW_HOST": "a.example,b.example",
                             "BACKYARD_SHUTDOWN_GRACE_S": "2.5", "BACKYARD_BACKEND": "state",
                             "BACKYARD_STATE_SYNC": "yes", "BACKYARD_PYTHON_IDLE": "7"})
        self.assertEqual(got["allow_host"]["value"], ["a.example", "b.example"])
        self.assertEqual(got["shutdown_grace_s"]["value"], 2.5)
        self.assertEqual(got["backend"]["value"], "state")
        self.assertEqual(got["state_sync"]["value"], True)
        self.assertEqual(got["python_idle"]["value"], 7)

    def test_the_config_file_from_the_environment(self):
        cfg = self.config({"max_results": 42})
        got = effective(env={"BACKYARD_CONFIG": cfg})
        self.assertEqual(got["max_results"], {"value": 42, "from": "config file " + cfg})

    def test_a_bad_value_names_its_source_and_the_setting(self):
        cases = [
            ((), {"BACKYARD_MAX_SESSIONS": "abc"}, "BACKYARD_MAX_SESSIONS=abc: not an integer"),
            (("--max-sessions", "abc"), {}, "--max-sessions=abc: not an integer"),
            (("--max-sessions", "0"), {}, "--max-sessions=0: out of range (1 to 100000)"),
            ((), {"BACKYARD_CPUS": "lots"}, "BACKYARD_CPUS=lots: not a number"),
            ((), {"BACKYARD_STATE_SYNC": "maybe"}, "BACKYARD_STATE_SYNC=maybe: not true or false"),
            ((), {"BACKYARD_RUNTIME": "kata"},
             "BACKYARD_RUNTIME=kata: not one of auto, runc, runsc"),
            (("--log-level", "loud"), {},
             "--log-level=loud: not one of trace, debug, info, warn, error, off"),
        ]
        for args, env, message in cases:
            r = run(*args, env=env)
            self.assertEqual(r.returncode, 2, (args, env))
            self.assertEqual(r.stderr.decode(), f"backyard-mcp: {message}\n")
            self.assertEqual(r.stdout, b"")

    def test_a_bad_config_file_names_the_file_and_the_setting(self):
        cfg = self.config({"max_results": "many"})
        r = run("--config", cfg)
        self.assertEqual((r.returncode, r.stderr.decode()),
                         (2, f"backyard-mcp: config file {cfg}: max_results: not an integer\n"))
        cfg = self.config({"max_results": 0})
        self.assertIn(f"config file {cfg}: max_results: out of range (1 to 1000000)",
                      run("--config", cfg).stderr.decode())
        cfg = self.config({"rooot": "."})
        self.assertIn(f"config file {cfg}: unknown setting 'rooot'",
                      run("--config", cfg).stderr.decode())
        cfg = self.config([1, 2])
        self.assertIn(f"config file {cfg}: not a JSON object", run("--config", cfg).stderr.decode())

    def test_help_lists_every_setting_with_its_variable(self):
        help_text = run("--help").stdout.decode()
        for key in effective():
            self.assertIn("BACKYARD_" + key.upper(), help_text, key)

    def test_the_schema_file_is_the_one_the_table_makes(self):
        r = run("--print-config-schema")
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(ROOT, "schemas", "config.schema.json")) as f:
            self.assertEqual(json.load(f), json.loads(r.stdout),
                             "schemas/config.schema.json differs from the settings table: "
                             "regenerate it with backyard-mcp --print-config-schema")
        schema = json.loads(r.stdout)
        settings = [key for key in schema["properties"] if not key.startswith("$")]
        self.assertEqual(sorted(settings), sorted(effective()))
        self.assertEqual(sorted(set(schema["properties"]) - set(settings)), ["$comment", "$schema"])

    def test_the_readme_table_is_the_one_the_table_makes(self):
        r = run("--print-settings-table")
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(ROOT, "README.md")) as f:
            readme = f.read()
        begin, end = "<!-- settings table: begin -->\n", "<!-- settings table: end -->"
        self.assertIn(begin, readme)
        shown = readme[readme.index(begin) + len(begin):readme.index(end)]
        self.assertEqual(shown, r.stdout.decode(),
                         "the README's table of settings differs from the settings table: "
                         "regenerate it with backyard-mcp --print-settings-table")

    def test_a_file_the_schema_accepts_is_what_the_server_accepts(self):
        # Every default, written back as a config file, is accepted and changes nothing.
        # (A relative path in a config file is read as relative to the file's directory.)
        doc = {key: v["value"] for key, v in effective().items()}
        got = effective("--config", self.config(doc))
        expected = dict(doc, root=self.dir)  # the default root is "."
        self.assertEqual({k: v["value"] for k, v in got.items()}, expected)


if __name__ == "__main__":
    BINARY = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
