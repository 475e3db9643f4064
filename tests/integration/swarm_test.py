#!/usr/bin/python3
"""--placement docker-swarm, for real: a swarm of two engines on this machine (the local engine
as manager, and a second engine in a container, tests/swarm/node.Dockerfile, joined as a
worker), the front in a container on the agents' overlay network with the manager's socket,
and the agents as Swarm services of the agent's image (deploy/agent/Dockerfile) built from the
binary under test. Checks that sessions spread over both nodes and work; that a session's end
removes its service; that a node taken down makes its sessions report their sandbox lost and
start afresh on their next call, on the node that lives, where new sessions go too; that a
runtime's sessions get its image and limits on the nodes labelled for it; that a named
session's workspace is a volume kept on its node, mounted again by the next session of its
name, removed there when purged or unopened for --workspace-ttl, and lost (said) with its
node; and that no service, volume or config is left after the fronts stop.

usage: swarm_test.py BINARY [unittest args]
Needs BYD_DOCKER_TESTS=1 and a Release binary (else exit 77), and an engine that is in no
swarm (the test makes one and leaves it)."""

import json
import os
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agent_test  # noqa: E402
from mcp_client import http_exchange  # noqa: E402

BINARY = None
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NODE_IMAGE = "backyard-mcp/swarm-node:test"
NODE = "byd-swarm-node"
FRONT = "byd-swarm-front"
NETWORK = "byd-swarm-agents"
FRONT_TOKEN = "swarm-front-token-0123456789abcdef"
AGENT_TOKEN = "swarm-agent-token-0123456789abcdef"
LABEL = "io.backyard-mcp.placement=swarm"
CAPS = ["CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID",
        "SETUID", "SETPCAP", "LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_ADMIN",
        "NET_RAW", "IPC_LOCK", "IPC_OWNER", "SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE",
        "SYS_PACCT", "SYS_ADMIN", "SYS_BOOT", "SYS_NICE", "SYS_RESOURCE", "SYS_TIME",
        "SYS_TTY_CONFIG", "MKNOD", "LEASE", "AUDIT_WRITE", "AUDIT_CONTROL", "SETFCAP",
        "MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG", "WAKE_ALARM", "BLOCK_SUSPEND", "AUDIT_READ",
        "PERFMON", "BPF", "CHECKPOINT_RESTORE"]

docker = agent_test.docker


def missing_caps():
    """The capabilities this machine's bounding set lacks (a container cannot be given them,
    so --privileged fails where any is missing)."""
    with open("/proc/self/status") as f:
        bounding = int(next(l for l in f if l.startswith("CapBnd:")).split()[1], 16)
    return [name for bit, name in enumerate(CAPS) if not bounding >> bit & 1]


def wait(what, predicate, timeout=120, step=0.25):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s")
        time.sleep(step)


def services():
    """The front's services: {name: [node hostnames of their running tasks]}."""
    out = {}
    for name in docker("service", "ls", "-q", "--filter", "label=" + LABEL,
                       "--format", "{{.Name}}").split():
        tasks = docker("service", "ps", name, "--filter", "desired-state=running",
                       "--format", "{{.Node}} {{.CurrentState}}", check=False)
        out[name] = [line.split()[0] for line in tasks.splitlines()
                     if line.split()[1:2] == ["Running"]]
    return out


def kept_volumes(node, named=None):
    """The named sessions' volumes on `node` (a host name), of `named` or of every one."""
    flt = ["--filter", "label=" + LABEL]
    if named:
        flt += ["--filter", "label=io.backyard-mcp.named=" + named]
    on = [] if node == docker("info", "--format", "{{.Name}}") else ["exec", NODE, "docker"]
    return docker(*on, "volume", "ls", "-q", *flt).split()


class Front:
    """The front's container, published on a loopback port of the same number (the port of
    the Host a loopback client names must be the one it listens on)."""

    def __init__(self, tokens, name=FRONT, image=None, extra=()):
        self.name = name
        self.port = agent_test.free_port()
        docker("rm", "-f", name, check=False)
        # Published on the default bridge (an internal network publishes nothing), and
        # attached to the agents' network before it starts.
        docker("create", "--name", name,
               "-v", "/var/run/docker.sock:/var/run/docker.sock",
               "-v", f"{tokens}:/run/tokens:ro", "-p", f"127.0.0.1:{self.port}:{self.port}",
               agent_test.SERVER_IMAGE, "--transport", "http", "--listen", f"0.0.0.0:{self.port}",
               "--token-file", "/run/tokens/front", "--backend", "remote",
               "--placement", "docker-swarm", "--swarm-network", NETWORK,
               "--agent-image", image or agent_test.AGENT_IMAGE, "--agent-token-file", "/run/tokens/agent",
               "--container-memory", str(512 << 20), "--log-level", "info", *extra)
        docker("network", "connect", NETWORK, name)
        docker("start", name)

        def healthy():
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=2):
                    return True
            except (OSError, urllib.error.HTTPError):
                return docker("inspect", "-f", "{{.State.Running}}", name) != "true" and \
                    self.fail_start()
        try:
            wait("the front answers /healthz", healthy, 60)
        except AssertionError as e:
            self.fail_start_with(str(e))

    def fail_start(self):
        self.fail_start_with("the front stopped")

    def fail_start_with(self, why):
        logs = self.logs()
        docker("rm", "-f", self.name, check=False)
        raise AssertionError(f"{why}: {logs}")

    def logs(self):
        return subprocess.run(["docker", "logs", self.name], capture_output=True,
                              text=True).stderr

    def request(self, method, body=None, sid=None, timeout=180):
        return http_exchange(self.port, method, body, sid, FRONT_TOKEN, timeout)

    def open(self, runtime=None, named=None):
        """A new session (of `runtime`, under the name `named`): its id and the name of its
        service."""
        before = set(services())
        params = {"protocolVersion": "2025-11-25", "capabilities": {},
                  "clientInfo": {"name": "swarm-test", "version": "1"}, "_meta": {}}
        if runtime:
            params["_meta"]["io.backyard/runtime"] = runtime
        if named:
            params["_meta"]["io.backyard/session"] = named
        code, sid, messages, payload = self.request("POST", {
            "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
        assert code == 200 and sid, (code, payload, self.logs())
        self.instructions = messages[0]["result"].get("instructions", "")
        self.request("POST", {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
        made = set(services()) - before
        assert len(made) == 1, (made, self.logs())
        return sid, made.pop()

    def call(self, sid, name, **arguments):
        _, _, messages, payload = self.request("POST", {
            "jsonrpc": "2.0", "id": 9, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}}, sid)
        answer = [m for m in messages if m.get("id") == 9]
        assert answer, payload
        return answer[0]["result"]

    def api(self, method, path):
        """/api/PATH: (status, its JSON answer)."""
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}/api/{path}", method=method,
                                     headers={"Authorization": "Bearer " + FRONT_TOKEN})
        try:
            with urllib.request.urlopen(req, timeout=180) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def stop(self):
        docker("stop", "-t", "60", self.name, check=False, timeout=90)
        logs = self.logs()
        docker("rm", "-f", self.name, check=False)
        return logs


class Swarm(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if docker("info", "--format", "{{.Swarm.LocalNodeState}}") != "inactive":
            raise unittest.SkipTest("this engine is in a swarm already; the test makes its own")
        docker("build", "-q", "--network", "host", "-t", NODE_IMAGE, "-f",
               os.path.join(ROOT, "tests/swarm/node.Dockerfile"),
               os.path.join(ROOT, "tests/swarm"), timeout=900)
        gateway = docker("network", "inspect", "bridge", "-f",
                         "{{(index .IPAM.Config 0).Gateway}}")
        docker("swarm", "init", "--advertise-addr", gateway, "--listen-addr", gateway + ":2377")
        cls.addClassCleanup(lambda: docker("swarm", "leave", "--force", check=False))
        cls.start_node()
        docker("network", "create", "-d", "overlay", "--internal", "--attachable", NETWORK)
        cls.tmp = tempfile.TemporaryDirectory()
        cls.addClassCleanup(cls.tmp.cleanup)
        for name, token in (("front", FRONT_TOKEN), ("agent", AGENT_TOKEN)):
            with open(os.path.join(cls.tmp.name, name), "w") as f:
                f.write(token + "\n")
        cls.front = Front(cls.tmp.name)
        cls.addClassCleanup(cls.front.stop)

    @classmethod
    def start_node(cls):
        """The second engine, with the agent's image, joined as a worker."""
        caps = ["--cap-add", "ALL"]
        for cap in missing_caps():
            caps += ["--cap-drop", cap]
        docker("rm", "-f", "-v", NODE, check=False)
        docker("run", "-d", "--name", NODE, "--hostname", NODE, *caps,
               "--security-opt", "seccomp=unconfined", "--security-opt", "apparmor=unconfined",
               "--security-opt", "systempaths=unconfined", "-v", "/sys/fs/cgroup:/sys/fs/cgroup",
               NODE_IMAGE, "--cgroup-parent", "/" + NODE)
        cls.addClassCleanup(lambda: docker("rm", "-f", "-v", NODE, check=False))
        wait("the node's engine", lambda: subprocess.run(
            ["docker", "exec", NODE, "docker", "info"], capture_output=True).returncode == 0, 60)
        save = subprocess.Popen(["docker", "save", agent_test.AGENT_IMAGE], stdout=subprocess.PIPE)
        subprocess.run(["docker", "exec", "-i", NODE, "docker", "load"], stdin=save.stdout,
                       check=True, capture_output=True, timeout=600)
        save.stdout.close()
        save.wait(60)
        token = docker("swarm", "join-token", "-q", "worker")
        manager = docker("info", "--format", "{{.Swarm.NodeAddr}}")
        docker("exec", NODE, "docker", "swarm", "join", "--token", token, manager + ":2377")
        wait("the worker is ready", lambda: "Ready" in docker(
            "node", "ls", "--filter", "name=" + NODE, "--format", "{{.Status}}"), 60)

    def test_a_named_session_keeps_its_workspace_on_its_node_until_purged(self):
        front = Front(self.tmp.name, name=FRONT + "-named", extra=("--session-idle", "1"))
        self.addCleanup(front.stop)
        # On the worker, whose volumes the manager cannot remove itself: the manager drained.
        manager = docker("info", "--format", "{{.Name}}")
        docker("node", "update", "--availability", "drain", manager)
        self.addCleanup(lambda: docker("node", "update", "--availability", "active", manager))
        sid, service = front.open(named="work")
        node = wait("the named session's agent runs", lambda: services().get(service), 60)[0]
        self.assertEqual(node, NODE)
        docker("node", "update", "--availability", "active", manager)
        wrote = front.call(sid, "write_file", path="keep.txt", content="kept\n")
        self.assertFalse(wrote.get("isError"), wrote)
        self.assertEqual(front.request("DELETE", sid=sid)[0], 200)
        # Unused for --session-idle, its service goes; its volume stays on its node.
        wait("the named session's service is removed", lambda: service not in services(), 60)
        self.assertEqual(len(kept_volumes(node, "work")), 1, kept_volumes(node))

        # The next session of that name runs on that node, on those files.
        sid, service = front.open(named="work")
        self.assertEqual(wait("its agent runs", lambda: services().get(service), 60), [node])
        ran = front.call(sid, "execute", command="cat keep.txt; echo more >> keep.txt; id -u")
        self.assertEqual(ran["structuredContent"]["stdout"], "kept\n65532\n", ran)
        constraints = json.loads(docker("service", "inspect", service))[0]["Spec"][
            "TaskTemplate"]["Placement"]["Constraints"]
        self.assertEqual(len(constraints), 1)
        self.assertRegex(constraints[0], r"^node\.id==\w+$")
        # Another name is another workspace.
        other_sid, _ = front.open(named="other")
        ran = front.call(other_sid, "execute", command="ls")
        self.assertEqual(ran["structuredContent"]["stdout"], "", ran)

        # Purged, the session ends and its volume is removed on its node, by a job that is
        # removed too; a name that kept nothing is named so.
        self.assertEqual(front.api("DELETE", "sessions/work"), (200, {"purged": "work"}))
        self.assertEqual(kept_volumes(node, "work"), [])
        self.assertNotIn(service, services())
        code, answer = front.api("DELETE", "sessions/never")
        self.assertEqual(code, 404, answer)
        self.assertIn("no workspace of session 'never'", json.dumps(answer))
        self.assertEqual(front.api("DELETE", "sessions/other")[0], 200)
        for n in (docker("info", "--format", "{{.Name}}"), NODE):
            self.assertEqual(kept_volumes(n), [], n)
        self.assertEqual(docker("config", "ls", "-q", "--filter", "label=" + LABEL), "")
        self.assertEqual(docker("service", "ls", "-q", "--filter", "name=byd-forget-"), "")

    def test_a_named_sessions_volume_unopened_for_the_ttl_is_deleted(self):
        front = Front(self.tmp.name, name=FRONT + "-ttl",
                      extra=("--session-idle", "1", "--workspace-ttl", "3"))
        self.addCleanup(front.stop)
        sid, service = front.open(named="brief")
        node = wait("its agent runs", lambda: services().get(service), 60)[0]
        wrote = front.call(sid, "write_file", path="brief.txt", content="soon gone\n")
        self.assertFalse(wrote.get("isError"), wrote)
        self.assertEqual(front.request("DELETE", sid=sid)[0], 200)
        wait("its service is removed", lambda: service not in services(), 60)
        # Its volume stays for the TTL, counted from when its service went (a config label).
        config = docker("config", "ls", "-q", "--filter", "label=io.backyard-mcp.named=brief")
        self.assertTrue(config, front.logs())
        labels = json.loads(docker("config", "inspect", config))[0]["Spec"]["Labels"]
        self.assertRegex(labels.get("io.backyard-mcp.closed", ""), r"^\d+$", labels)
        self.assertEqual(len(kept_volumes(node, "brief")), 1)
        wait("its volume is deleted after the TTL",
             lambda: not kept_volumes(node, "brief") and not docker(
                 "config", "ls", "-q", "--filter", "label=io.backyard-mcp.named=brief"), 90)
        self.assertIn("deleted the workspace of session 'brief' of tenant 'default', unopened "
                      "for --workspace-ttl", front.logs())

    def test_a_runtime_gives_its_image_limits_and_labelled_nodes(self):
        # "small": the agent's image with limits of its own, preferred on the worker (labelled
        # for it); "anywhere": no node is labelled for it, so any node takes it.
        with open(os.path.join(self.tmp.name, "runtimes.json"), "w") as f:
            json.dump({"small": {"image": agent_test.AGENT_IMAGE, "description": "a small agent",
                                 "limits": {"container_memory": 256 << 20, "cpus": 0.5,
                                            "pids": 100, "max_timeout_s": 30}},
                       "anywhere": {"image": agent_test.AGENT_IMAGE}}, f)
        label = "io.backyard-mcp.runtime.small=true"
        docker("node", "update", "--label-add", label, NODE)
        self.addCleanup(lambda: docker("node", "update", "--label-rm",
                                       "io.backyard-mcp.runtime.small", NODE, check=False))
        front = Front(self.tmp.name, name=FRONT + "-runtimes",
                      extra=("--runtimes", "/run/tokens/runtimes.json"))
        self.addCleanup(front.stop)
        small = [front.open("small") for _ in range(3)]
        self.assertIn("It runs the runtime 'small': a small agent.", front.instructions)
        placed = wait("the small sessions' agents run", lambda: (lambda s: s if all(
            s.get(name) for _, name in small) else None)(services()), 60)
        self.assertEqual({placed[name][0] for _, name in small}, {NODE}, placed)
        spec = json.loads(docker("service", "inspect", small[0][1]))[0]["Spec"]
        self.assertEqual(spec["Labels"]["io.backyard-mcp.runtime"], "small")
        self.assertEqual(spec["TaskTemplate"]["Resources"]["Limits"],
                         {"MemoryBytes": 256 << 20, "NanoCPUs": 500_000_000, "Pids": 100})
        self.assertEqual(spec["TaskTemplate"]["Placement"]["Constraints"],
                         ["node.labels.io.backyard-mcp.runtime.small==true"])
        # The worker's engine gave its container those limits.
        task = docker("service", "ps", small[0][1], "-q", "--no-trunc", "--filter",
                      "desired-state=running").split()[0]
        container = docker("inspect", "-f", "{{.Status.ContainerStatus.ContainerID}}", task)
        self.assertEqual(docker("exec", NODE, "docker", "inspect", "-f",
                                "{{.HostConfig.Memory}} {{.HostConfig.NanoCpus}} "
                                "{{.HostConfig.PidsLimit}}", container),
                         f"{256 << 20} 500000000 100")
        sid = small[0][0]
        # The runtime's ceiling of a call's timeout holds at the front.
        long = front.call(sid, "execute", command="true", timeout_s=60)
        self.assertTrue(long.get("isError"), long)
        self.assertIn("above the limit of 30 s (the max_timeout_s of runtime small)",
                      long["content"][0]["text"])

        sid, name = front.open("anywhere")
        spec = json.loads(docker("service", "inspect", name))[0]["Spec"]
        self.assertNotIn("Constraints", spec["TaskTemplate"].get("Placement", {}))
        self.assertEqual(spec["TaskTemplate"]["Resources"]["Limits"]["MemoryBytes"], 512 << 20)
        self.assertEqual(front.call(sid, "execute", command="echo any")["structuredContent"]
                         ["stdout"], "any\n")

    def test_an_agent_that_cannot_start_is_named_and_removed(self):
        # An image that is no agent: its tasks end at once (on the worker, which lacks it, they
        # are rejected); after three the session is refused and its service removed.
        front = Front(self.tmp.name, name=FRONT + "-bad", image="backyard-mcp/python:bookworm")
        self.addCleanup(front.stop)
        before = set(services())
        start = time.monotonic()
        code, sid, _, payload = front.request("POST", {
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "swarm-test", "version": "1"}}})
        self.assertEqual(code, 500, payload)
        self.assertIsNone(sid)
        self.assertLess(time.monotonic() - start, 90)
        logs = front.logs()
        self.assertIn("could not start its agent (3 tasks failed", logs)
        self.assertIn("it was removed", logs)
        wait("its service is gone", lambda: set(services()) == before, 30)

    def test_sessions_spread_lose_a_node_and_leave_nothing(self):
        front = self.front
        manager = docker("info", "--format", "{{.Name}}")
        # A named session's workspace kept on the worker (the manager drained meanwhile), by a
        # front of its own whose named sessions end as soon as they are left.
        named = Front(self.tmp.name, name=FRONT + "-kept", extra=("--session-idle", "1"))
        self.addCleanup(named.stop)
        docker("node", "update", "--availability", "drain", manager)
        try:
            kept_sid, kept_service = named.open(named="kept")
            self.assertEqual(wait("the named session's agent runs",
                                  lambda: services().get(kept_service), 60), [NODE])
        finally:
            docker("node", "update", "--availability", "active", manager)
        named.call(kept_sid, "write_file", path="on-node.txt", content="node\n")
        self.assertEqual(named.request("DELETE", sid=kept_sid)[0], 200)
        wait("its service is removed", lambda: kept_service not in services(), 60)

        # Four sessions: Swarm spreads them over both nodes; each works in its own workspace.
        opened = [front.open() for _ in range(4)]
        placed = wait("every session's agent runs", lambda: (lambda s: s if all(
            s.get(name) for _, name in opened) else None)(services()), 60)
        nodes = {placed[name][0] for _, name in opened}
        self.assertEqual(nodes, {manager, NODE}, placed)
        for i, (sid, name) in enumerate(opened):
            wrote = front.call(sid, "write_file", path="mine.txt", content=f"session {i}\n")
            self.assertFalse(wrote.get("isError"), wrote)
            ran = front.call(sid, "execute", command="cat mine.txt; ls | wc -l; id -u")
            self.assertEqual(ran["structuredContent"]["stdout"], f"session {i}\n1\n65532\n", ran)
            kept = front.call(sid, "run_python", code=f"n = {i}\nn")
            self.assertEqual(kept["structuredContent"]["result"], str(i), kept)

        # A session's end removes its service, and only its: one of a node that has two, so
        # that each node still has one.
        counts = {node: sum(placed[n][0] == node for _, n in opened) for node in nodes}
        ended_sid, ended = next(o for o in opened if counts[placed[o[1]][0]] > 1)
        opened.remove((ended_sid, ended))
        code, _, _, _ = front.request("DELETE", sid=ended_sid)
        self.assertEqual(code, 200)
        wait("the ended session's service is removed", lambda: ended not in services(), 30)
        self.assertEqual(set(services()), {name for _, name in opened})

        # The worker goes down: its sessions report their sandbox lost, then start afresh on the
        # manager at a later call; the others keep their state.
        placed = services()  # where they run now (Swarm may have moved one since)
        on_node = [(sid, name) for sid, name in opened if placed[name] == [NODE]]
        on_manager = [(sid, name) for sid, name in opened if placed[name] == [manager]]
        self.assertTrue(on_node and on_manager, placed)
        docker("kill", NODE)
        docker("wait", NODE)  # its init gone, and with it every process it held, agents too
        lost = front.call(on_node[0][0], "execute", command="echo hello")
        self.assertTrue(lost.get("isError"), (lost, placed, front.logs()[-3000:]))
        # Never delivered, or sent on a connection the dead node never acknowledged.
        self.assertRegex(lost["content"][0]["text"], r"not reachable|was lost during tools/call")

        def afresh():
            r = front.call(on_node[0][0], "run_python", code="'n' in globals()")
            return r if not r.get("isError") else None
        fresh = wait("the lost session works again", afresh, 180, step=2)
        self.assertEqual(fresh["structuredContent"]["result"], "False")
        self.assertTrue(fresh["structuredContent"]["new_session"])
        self.assertEqual(services()[on_node[0][1]], [manager])
        for sid, name in on_manager:
            again = front.call(sid, "run_python", code="n")
            self.assertFalse(again["structuredContent"].get("new_session"), again)
        sid, name = front.open()
        self.assertEqual(wait("the new session's agent runs",
                              lambda: services().get(name), 60), [manager])
        self.assertEqual(front.call(sid, "execute", command="echo new")["structuredContent"]
                         ["stdout"], "new\n")

        # The named session whose workspace was on the lost node starts afresh on the manager,
        # and the front says what was lost; purged, its new volume goes.
        wait("the worker is down", lambda: "Down" in docker(
            "node", "ls", "--filter", "name=" + NODE, "--format", "{{.Status}}"), 60)
        kept_sid, kept_service = named.open(named="kept")
        self.assertEqual(wait("its agent runs", lambda: services().get(kept_service), 60),
                         [manager])
        ran = named.call(kept_sid, "execute", command="ls")
        self.assertEqual(ran["structuredContent"]["stdout"], "", ran)
        self.assertIn("which is down or gone: it starts afresh on another node", named.logs())
        self.assertEqual(named.api("DELETE", "sessions/kept"), (200, {"purged": "kept"}))
        self.assertEqual(kept_volumes(manager, "kept"), [])
        named.stop()

        # The front stops: every service it made is removed.
        logs = front.stop()
        self.assertEqual(services(), {}, logs)
        self.assertEqual(kept_volumes(manager), [])


def main():
    global BINARY
    BINARY = os.path.realpath(sys.argv.pop(1))
    agent_test.BINARY = BINARY
    agent_test.skip_unless_images_can_be_built()
    agent_test.build_images()
    program = unittest.main(exit=False, verbosity=2)
    sys.exit(0 if program.result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
