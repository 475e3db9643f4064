#!/usr/bin/python3
"""Resource attacks from execute and run_python against the real binary. While each runs, the
server must answer ping within 100 ms; afterwards nothing the attack started may be left.

A ping's time leaves out what the hypervisor took from this machine meanwhile: a VM whose every
vCPU is busy (the attack and the pinging do that) can lose its vCPUs for a whole quota period
(100 ms here), which the guest counts as steal time; that is not the server's doing.

usage: sandbox_attacks_test.py BINARY [unittest args]"""

import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from mcp_client import Client  # noqa: E402

BINARY = None
PING_LIMIT_S = 0.100
FILE_SIZE_LIMIT = 64 << 20


def descendants(pid):
    """How many processes descend from `pid`."""
    parent = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    parent[int(name)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (FileNotFoundError, ProcessLookupError, IndexError):
                pass
    count = 0
    for p in parent:
        q = parent.get(p)
        while q and q != pid:
            q = parent.get(q)
        count += q == pid
    return count


def steal_ticks():
    """Each CPU's steal time so far, in clock ticks (/proc/stat)."""
    with open("/proc/stat") as f:
        return [int(line.split()[8]) for line in f if line.startswith("cpu") and line[3] != " "]


def ping_seconds(client):
    """How long `client`'s ping took, less the most any one CPU lost to steal meanwhile."""
    before = steal_ticks()
    sent = time.monotonic()
    assert client.ping(), "no answer to ping"
    elapsed = time.monotonic() - sent
    stolen = max(b - a for a, b in zip(before, steal_ticks())) / os.sysconf("SC_CLK_TCK")
    return max(elapsed - stolen, 0.0)


def leftovers(marker):
    """Host processes whose command line contains `marker`."""
    out = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout
    return out.split()


class SandboxAttacks(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="byd-attack-")
        cls.client = Client(BINARY, "--root", cls.tmp.name, "--log-level", "warn",
                            "--ruleset", "permissive", "--file-size-limit", str(FILE_SIZE_LIMIT))

    @classmethod
    def tearDownClass(cls):
        code = cls.client.close()
        cls.tmp.cleanup()
        assert code == 0, f"server exit code {code}"

    def attack(self, tool, arguments, budget_s):
        """Calls `tool`, pinging without pause until it answers. Returns (result, seconds); the
        most processes the server had below it meanwhile is left in self.peak."""
        c = self.client
        rid = c.next_id
        c.next_id += 1
        start = time.monotonic()
        c.send_raw(json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                               "params": {"name": tool, "arguments": arguments}}).encode() + b"\n")
        worst = 0.0
        self.peak = 0
        while True:
            done = [m for m in c.pending if m.get("id") == rid]
            if done:
                c.pending.remove(done[0])
                response = done[0]
                break
            self.assertLess(time.monotonic() - start, budget_s, f"{tool} {arguments} still running")
            worst = max(worst, ping_seconds(c))
            self.peak = max(self.peak, descendants(c.proc.pid))
        elapsed = time.monotonic() - start
        self.assertLess(worst, PING_LIMIT_S, f"ping took {worst * 1000:.0f} ms during {arguments}")
        self.assertIn("result", response, response)
        return response["result"], elapsed

    def test_fork_bomb(self):
        # Spelled out, the ruleset refuses it before the sandbox sees it; from a file it runs.
        self.client.call("write_file", path="bomb.sh", content=":(){ :|:& };:\n")
        r, _ = self.attack("execute", {"command": "bash bomb.sh bomb7731; sleep 2",
                                       "timeout_s": 4}, budget_s=10)
        self.assertFalse(r.get("isError"), r)
        time.sleep(0.3)
        self.assertEqual(leftovers("bom[b]7731"), [])

    def test_fork_bomb_from_python(self):
        self.attack("run_python", {"code": "1", "session": "bomb"}, budget_s=10)
        baseline = descendants(self.client.proc.pid)
        code = ("import os\nwhile True:\n    try:\n        os.fork()\n"
                "    except OSError:\n        pass\n")
        # (The budget is wide: while the bomb runs, this test's own /proc scans crawl.)
        r, _ = self.attack("run_python", {"code": code, "session": "bomb", "timeout_s": 3},
                           budget_s=30)
        self.assertGreater(self.peak, baseline + 50)  # it did fork
        # The timeout ends the cell and every process it started. The session lives on when
        # the kernel gets the CPU to answer within the grace; on a loaded machine it may not,
        # and then the session is killed, which ends them too.
        self.assertIn(r["structuredContent"]["error"]["type"], ("KeyboardInterrupt", "SessionLost"))
        time.sleep(0.5)
        self.assertLessEqual(descendants(self.client.proc.pid), baseline + 4)
        r, _ = self.attack("run_python", {"code": "'still here'", "session": "bomb"},
                           budget_s=10)
        self.assertEqual(r["structuredContent"]["result"], "'still here'", r)
        # The session's own process limit held it: commands and other sessions still run.
        r, _ = self.attack("execute", {"command": "echo ok"}, budget_s=10)
        self.assertEqual(r["structuredContent"]["stdout"], "ok\n", r)
        r, _ = self.attack("run_python", {"code": "'alive'", "session": "other"}, budget_s=10)
        self.assertEqual(r["structuredContent"]["result"], "'alive'", r)
        # Resetting the session ends every process it made.
        r, _ = self.attack("run_python", {"code": "'fresh'", "session": "bomb", "reset": True},
                           budget_s=15)
        self.assertEqual(r["structuredContent"]["result"], "'fresh'", r)
        time.sleep(0.5)
        self.assertLessEqual(descendants(self.client.proc.pid), baseline + 4)

    def test_flood_of_the_kernels_channel(self):
        # A cell writes a header announcing 4 GiB, then 1.5 GB, to every pipe and socket it
        # may write (the kernel's channel among them: a pipe for a kernel of its own, a socket
        # for a fork). The server must not buffer it: the session ends with a clear error, the
        # server's memory stays bounded, and a new session works.
        code = (
            "import fcntl, os, stat, struct\n"
            "targets = []\n"
            "for fd in range(3, 64):\n"
            "    try:\n"
            "        st = os.fstat(fd)\n"
            "    except OSError:\n"
            "        continue\n"
            "    if stat.S_ISSOCK(st.st_mode) or (stat.S_ISFIFO(st.st_mode) and "
            "fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY):\n"
            "        targets.append(fd)\n"
            "def flood(data):\n"
            "    for fd in list(targets):\n"
            "        try:\n"
            "            os.write(fd, data)\n"
            "        except OSError:\n"
            "            targets.remove(fd)\n"
            "flood(struct.pack('>I', 0xFFFFFFF0))\n"
            "chunk = b'x' * (1 << 20)\n"
            "for _ in range(1500):\n"
            "    flood(chunk)\n")
        r, _ = self.attack("run_python", {"code": code, "session": "flood", "timeout_s": 20},
                           budget_s=30)
        self.assertTrue(r.get("isError"), r)
        self.assertIn("more than its output limits allow", r["content"][0]["text"])
        self.assertIn("the session was ended", r["content"][0]["text"])
        with open(f"/proc/{self.client.proc.pid}/status") as f:
            peak_kib = int(f.read().split("VmHWM:")[1].split()[0])
        if "ASAN_OPTIONS" not in os.environ:  # under the sanitizer, memory is its own
            self.assertLess(peak_kib, 256 << 10)
        r, _ = self.attack("run_python", {"code": "'fresh'", "session": "flood"}, budget_s=10)
        self.assertEqual(r["structuredContent"]["result"], "'fresh'", r)
        self.assertTrue(r["structuredContent"]["new_session"], r)

    def test_sixteen_gib_allocation(self):
        r, _ = self.attack("run_python", {"code": "x = bytearray(16 * 1024**3)",
                                          "session": "alloc"}, budget_s=30)
        self.assertEqual(r["structuredContent"]["error"]["type"], "MemoryError", r)
        r, _ = self.attack("run_python", {"code": "'alive'", "session": "alloc"}, budget_s=10)
        self.assertEqual(r["structuredContent"]["result"], "'alive'")  # the session lives on
        r, _ = self.attack("execute", {"command": "python3 -c 'x = bytearray(16 * 1024**3)'"},
                           budget_s=30)
        self.assertNotEqual(r["structuredContent"]["exit_code"], 0)
        self.assertIn("MemoryError", r["structuredContent"]["stderr"])

    def test_yes_for_ten_seconds_is_capped(self):
        r, elapsed = self.attack("execute", {"command": "timeout 10 yes", "timeout_s": 20},
                                 budget_s=25)
        self.assertIn("structuredContent", r, r)
        sc = r["structuredContent"]
        self.assertTrue(sc["truncated"], sc["exit_code"])
        self.assertLessEqual(len(sc["stdout"].encode()), 100 * 1024)
        self.assertGreater(elapsed, 9)

    def test_dd_stops_at_the_file_size_limit(self):
        r, _ = self.attack("execute", {"command": "dd if=/dev/zero of=big bs=1M count=10240",
                                       "timeout_s": 60}, budget_s=70)
        self.assertEqual(r["structuredContent"]["exit_code"], 128 + 25)  # SIGXFSZ
        self.assertLessEqual(os.path.getsize(os.path.join(self.tmp.name, "big")), FILE_SIZE_LIMIT)
        os.remove(os.path.join(self.tmp.name, "big"))

    def test_detached_sleepers_die_at_the_timeout(self):
        r, elapsed = self.attack("execute", {
            "command": "setsid sleep 7733 & nohup sleep 7734 >/dev/null 2>&1 & wait",
            "timeout_s": 2}, budget_s=10)
        self.assertTrue(r["structuredContent"]["timed_out"], r)
        self.assertLess(elapsed, 3.0)
        time.sleep(0.3)
        self.assertEqual(leftovers("slee[p] 773[34]"), [])

    def test_background_subshell_does_not_hold_the_call(self):
        r, elapsed = self.attack("execute", {"command": "(sleep 7735 &); echo hi"}, budget_s=10)
        self.assertEqual(r["structuredContent"]["stdout"], "hi\n")
        self.assertLess(elapsed, 1.0)
        time.sleep(0.3)
        self.assertEqual(leftovers("slee[p] 7735"), [])


if __name__ == "__main__":
    BINARY = sys.argv.pop(1)
    unittest.main()
