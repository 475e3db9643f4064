#!/usr/bin/python3
"""--placement docker-swarm against the plain Docker backend, on this machine's engine: the
time from a session's initialize to its first execute result (the Swarm service made, its task
started and healthy, routed; against the session's container created and started), and a warm
execute's round trip (front, overlay network, agent; against the server's exec in its
container). Both servers are driven over HTTP the same way; sessions alternate between them.
Makes a one-node swarm when the engine is in none, and leaves it at the end.

    BYD_DOCKER_TESTS=1 /usr/bin/python3 bench/swarm.py [--binary build/backyard-mcp]
        [--sessions 6] [--calls 100]"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "integration"))
import agent_test  # noqa: E402
import swarm_test  # noqa: E402
from mcp_client import http_exchange  # noqa: E402

docker = agent_test.docker
TOKEN = swarm_test.FRONT_TOKEN


class DockerServer:
    """backyard-mcp --backend docker over HTTP on this machine."""

    def __init__(self, binary, token_file):
        self.proc = subprocess.Popen(
            [binary, "--transport", "http", "--listen", "127.0.0.1:0", "--backend", "docker",
             "--image", "backyard-mcp/python:bookworm", "--runtime", "runc",
             "--token-file", token_file, "--ruleset", "permissive", "--log-level", "warn"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        while True:
            line = self.proc.stderr.readline()
            if not line:
                sys.exit("the Docker backend's server ended before it listened")
            match = re.search(r"http://127\.0\.0\.1:(\d+)/mcp", line)
            if match:
                self.port = int(match.group(1))
                break

    def request(self, method, body=None, sid=None, timeout=180):
        return http_exchange(self.port, method, body, sid, TOKEN, timeout)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(60)


def initialize(server):
    code, sid, _, payload = server.request("POST", {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "bench", "version": "1"}}})
    if code != 200 or not sid:
        sys.exit(f"initialize: {code} {payload}")
    server.request("POST", {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
    return sid


def execute(server, sid):
    _, _, messages, payload = server.request("POST", {
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "execute", "arguments": {"command": "echo hi"}}}, sid)
    answer = [m for m in messages if m.get("id") == 2]
    if not answer or answer[0]["result"].get("structuredContent", {}).get("stdout") != "hi\n":
        sys.exit("execute: " + payload)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default="build/backyard-mcp")
    parser.add_argument("--sessions", type=int, default=6)
    parser.add_argument("--calls", type=int, default=100)
    args = parser.parse_args()
    binary = os.path.realpath(args.binary)
    agent_test.BINARY = binary
    agent_test.build_images()
    made_swarm = docker("info", "--format", "{{.Swarm.LocalNodeState}}") == "inactive"
    if made_swarm:
        gateway = docker("network", "inspect", "bridge", "-f",
                         "{{(index .IPAM.Config 0).Gateway}}")
        docker("swarm", "init", "--advertise-addr", gateway)
    tmp = tempfile.TemporaryDirectory()
    front = plain = None
    try:
        docker("network", "create", "-d", "overlay", "--internal", "--attachable",
               swarm_test.NETWORK, check=False)
        for name, token in (("front", swarm_test.FRONT_TOKEN), ("agent", swarm_test.AGENT_TOKEN)):
            with open(os.path.join(tmp.name, name), "w") as f:
                f.write(token + "\n")
        front = swarm_test.Front(tmp.name)
        plain = DockerServer(binary, os.path.join(tmp.name, "front"))
        servers = {"swarm": front, "docker": plain}
        start = {k: [] for k in servers}
        warm = {k: [] for k in servers}
        sessions = {k: [] for k in servers}
        for i in range(args.sessions):
            for kind in (("swarm", "docker") if i % 2 == 0 else ("docker", "swarm")):
                t0 = time.monotonic()
                sid = initialize(servers[kind])
                execute(servers[kind], sid)
                start[kind].append(time.monotonic() - t0)
                sessions[kind].append(sid)
        for i in range(args.calls):
            for kind in (("swarm", "docker") if i % 2 == 0 else ("docker", "swarm")):
                t0 = time.monotonic()
                execute(servers[kind], sessions[kind][0])
                warm[kind].append(time.monotonic() - t0)
        for kind in servers:
            for sid in sessions[kind]:
                servers[kind].request("DELETE", sid=sid)

        def row(what, values, scale, unit):
            s, d = (statistics.median(values[k]) * scale for k in ("swarm", "docker"))
            print(f"{what:<40} swarm {s:8.1f} {unit}   docker {d:8.1f} {unit}   "
                  f"swarm/docker {s / d:5.2f}")
        print(f"{args.sessions} sessions and {args.calls} warm calls each, medians:")
        row("session start to first execute", start, 1000, "ms")
        row("warm execute 'echo hi' round trip", warm, 1000, "ms")
    finally:
        if front:
            front.stop()
        if plain:
            plain.stop()
        docker("network", "rm", swarm_test.NETWORK, check=False)
        if made_swarm:
            docker("swarm", "leave", "--force", check=False)
        tmp.cleanup()


if __name__ == "__main__":
    main()
