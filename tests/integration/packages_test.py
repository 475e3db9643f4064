"""End to end: run_python's packages on demand, against a local PEP 503 index on 127.0.0.2
standing for PyPI (package_index.py). A cell that imports a missing module gets its
distribution installed (with its dependency, from the index) and runs again, saying what was
installed; a second session imports it without installing; commands import it too but cannot
change it; an install the rules deny, a package that fails to build and one the index lacks are
clear errors naming it; under the default preset the user is asked "run_python wants to install
NAME".

Usage: packages_test.py BINARY [--backend docker --runtime runc|runsc]
"""

import glob
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mcp_client import Client, ElicitingClient, binary_and_backend, text  # noqa: E402
from package_index import Index  # noqa: E402

BINARY, EXTRA = binary_and_backend(sys.argv)
DOCKER = "docker" in EXTRA


class Packages(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.index = Index(wheels=[("byd_tiny", "1.0", "from byd_dep import BASE\nVALUE = BASE + 1\n",
                                   ("byd-dep",)),
                                  ("byd_dep", "2.0", "BASE = 41\n", ()),
                                  ("byd_denied", "1.0", "VALUE = 0\n", ()),
                                  ("byd_asked", "1.0", "VALUE = 'asked'\n", ())],
                          broken=["byd_broken"])
        cls.tmp = tempfile.TemporaryDirectory(prefix="byd-pkg-")
        cls.root = os.path.join(cls.tmp.name, "ws")
        cls.packages = os.path.join(cls.tmp.name, "packages")
        os.makedirs(cls.root)
        os.chmod(cls.tmp.name, 0o755)
        os.chmod(cls.root, 0o777)  # a container's user writes it
        rules = {"extends": "permissive", "name": "packages",
                 "install": {"rules": [{"pattern": "byd-denied", "action": "deny"},
                                       {"pattern": "*", "action": "allow"}]}}
        cls.rules = os.path.join(cls.tmp.name, "rules.json")
        with open(cls.rules, "w") as f:
            json.dump(rules, f)
        cls.client = Client(BINARY, "--root", cls.root, "--log-level", "info",
                            "--ruleset", cls.rules, "--package-index", cls.index.url,
                            "--python-packages", cls.packages, *EXTRA)

    @classmethod
    def tearDownClass(cls):
        code = cls.client.close()
        cls.index.close()
        cls.tmp.cleanup()
        assert code == 0, f"server exit code {code}"

    def tearDown(self):
        self.assertTrue(self.client.ping())

    def where(self):
        """The packages directory as the code sees it, and on this machine (Docker: one per
        image below --python-packages)."""
        if not DOCKER:
            return self.packages, self.packages
        return "/opt/backyard-packages", glob.glob(os.path.join(self.packages, "docker-*"))[0]

    def py(self, code, session="default", client=None):
        r = (client or self.client).call("run_python", code=code, session=session, timeout_s=120)
        return r, r.get("structuredContent", {})

    def test_a_missing_module_is_installed_once_and_the_cell_runs_again(self):
        r, sc = self.py("print('before')\nimport byd_tiny\nbyd_tiny.VALUE", session="first")
        self.assertFalse(r.get("isError"), text(r))
        self.assertEqual(sc["result"], "42")
        self.assertEqual(sorted(sc["installed"]), ["byd-dep 2.0", "byd-tiny 1.0"],
                         text(r))
        self.assertIn("[installed ", text(r))
        self.assertEqual(self.index.downloads("byd_tiny"), 1)
        self.assertEqual(self.index.downloads("byd_dep"), 1)
        # Another session finds it installed.
        r, sc = self.py("import byd_tiny, byd_dep\n(byd_tiny.VALUE, byd_dep.BASE)",
                        session="second")
        self.assertFalse(r.get("isError"), text(r))
        self.assertEqual((sc["result"], sc["installed"]), ("(42, 41)", []))
        self.assertEqual(self.index.downloads("byd_tiny"), 1)
        # Commands import it too, and cannot change it.
        inside, host = self.where()
        r = self.client.call("execute", command="/usr/bin/python3 -c 'import byd_tiny; "
                             f"print(byd_tiny.VALUE)'; echo x > {inside}/byd_tiny/x.py",
                             timeout_s=60)
        self.assertEqual(r["structuredContent"]["stdout"], "42\n", text(r))
        self.assertIn("Read-only file system", r["structuredContent"]["stderr"])
        r, sc = self.py(f"open({inside + '/byd_tiny/__init__.py'!r}, 'a')", session="second")
        self.assertIn(sc["error"]["type"], ("OSError", "PermissionError"), text(r))
        self.assertTrue(os.path.exists(os.path.join(host, "byd_tiny", "__init__.py")))
        self.assertFalse(os.path.exists(os.path.join(host, "byd_tiny", "x.py")))

    def test_a_denied_install_is_a_clear_error(self):
        r, sc = self.py("import byd_denied")
        self.assertTrue(r.get("isError"))
        self.assertEqual(sc["error"]["type"], "ModuleNotFoundError")
        self.assertIn("install denied for 'byd-denied'", sc["error"]["install_error"])
        self.assertIn("byd_denied was not installed: install denied for 'byd-denied'", text(r))
        self.assertEqual(sc["installed"], [])
        self.assertEqual(self.index.downloads("byd_denied"), 0)

    def test_a_package_that_fails_to_build_is_a_clear_error_naming_it(self):
        r, sc = self.py("import byd_broken")
        self.assertTrue(r.get("isError"))
        self.assertEqual(sc["error"]["type"], "ModuleNotFoundError")
        why = sc["error"]["install_error"]
        self.assertIn("could not install byd-broken from " + self.index.url, why)
        self.assertIn("byd_broken cannot be built: its compiler is missing", why)
        self.assertFalse(os.path.exists(os.path.join(self.where()[1], "byd_broken")))

    def test_a_module_the_index_lacks_is_a_clear_error(self):
        r, sc = self.py("import byd_nowhere")
        self.assertTrue(r.get("isError"))
        self.assertIn("could not install byd-nowhere", sc["error"]["install_error"])
        self.assertIn("No matching distribution found for byd-nowhere",
                      sc["error"]["install_error"])

    def test_a_submodule_or_a_private_module_installs_nothing(self):
        r, sc = self.py("import json.nowhere")
        self.assertEqual(sc["error"]["type"], "ModuleNotFoundError", text(r))
        self.assertNotIn("install_error", sc["error"])
        hits = len(self.index.hits)
        r, sc = self.py("import _byd_private")
        self.assertNotIn("install_error", sc["error"])
        self.assertEqual(len(self.index.hits), hits)

    def test_a_packages_directory_in_the_workspace_is_refused(self):
        with tempfile.TemporaryDirectory(prefix="byd-pkg-in-") as tmp:
            os.chmod(tmp, 0o777)
            client = Client(BINARY, "--root", tmp, "--ruleset", self.rules, "--package-index",
                            self.index.url, "--python-packages", os.path.join(tmp, "pk"),
                            *EXTRA)
            r, sc = self.py("import byd_tiny", client=client)
            self.assertEqual(sc["error"]["type"], "ModuleNotFoundError", text(r))
            self.assertNotIn("install_error", sc["error"])
            self.assertEqual(client.close(), 0)
            self.assertIn("overlaps the workspace", client.stderr)

    def test_the_default_preset_asks_the_user(self):
        with tempfile.TemporaryDirectory(prefix="byd-pkg-ask-") as tmp:
            os.chmod(tmp, 0o777)
            client = ElicitingClient(BINARY, "--root", tmp, "--package-index", self.index.url,
                                     "--python-packages", self.packages, *EXTRA)
            try:
                client.answer = lambda asked: "wants to install" not in asked
                r, sc = self.py("import byd_asked", client=client)
                self.assertIn("run_python wants to install byd-asked", "\n".join(client.asked))
                self.assertIn("the user declined", sc["error"]["install_error"])
                self.assertEqual(self.index.downloads("byd_asked"), 0)
                client.answer = True
                r, sc = self.py("import byd_asked\nbyd_asked.VALUE", client=client)
                self.assertEqual((sc["result"], sc["installed"]), ("'asked'", ["byd-asked 1.0"]),
                                 text(r))
            finally:
                self.assertEqual(client.close(), 0)


if __name__ == "__main__":
    unittest.main()
