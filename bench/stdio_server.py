"""backyard-mcp over stdio for the benchmarks: started with the arguments given, initialized,
one request at a time."""

import json
import subprocess


class StdioServer:
    def __init__(self, binary, *args, stderr=subprocess.DEVNULL):
        self.proc = subprocess.Popen([binary, *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=stderr)
        self.next_id = 0
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "1"}})

    def request(self, method, params):
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()
        while True:
            answer = json.loads(self.proc.stdout.readline())
            if answer.get("id") == self.next_id:
                return answer

    def call(self, tool, **arguments):
        """A tool's structuredContent; an error answer raises."""
        r = self.request("tools/call", {"name": tool, "arguments": arguments})
        result = r.get("result")
        assert result is not None and not result.get("isError"), r
        return result["structuredContent"]

    def execute(self, command):
        return self.call("execute", command=command)

    def close(self, timeout=120):
        self.proc.stdin.close()
        self.proc.wait(timeout)
