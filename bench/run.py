#!/usr/bin/python3
"""Benchmark backyard-mcp over stdio against a generated fixture.

Standard library only; run with Debian's /usr/bin/python3:

    /usr/bin/python3 bench/run.py            # full run
    /usr/bin/python3 bench/run.py --quick    # fewer iterations
    /usr/bin/python3 bench/run.py --json out.json --binary build/backyard-mcp

See bench/README.md for what each metric means.
"""

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(BENCH_DIR)
DEFAULT_FIXTURE = os.path.join(BENCH_DIR, "fixture")
DEFAULT_BINARY = os.path.join(REPO_ROOT, "build", "backyard-mcp")

PROTOCOL_VERSION = "2025-06-18"
NEEDLE = "NEEDLE_4242"

# --------------------------------------------------------------------------------------------
# Fixture
# --------------------------------------------------------------------------------------------

FIXTURE_VERSION = 2
SEED = 4242
MANIFEST = "fixture.json"  # at the fixture root; tiny and without the needle

KIB = 1024
MIB = 1024 * 1024
TOTAL_BYTES = 200 * MIB  # whole tree, approximately
BIG_FILE = "known/big_50m.txt"
BIG_BYTES = 50 * MIB
FILE_1K = "known/1k.txt"
FILE_1M = "known/1m.txt"
WIDE_DIR = "wide"  # the ls benchmark lists this
WIDE_FILES = 500
WIDE_SUBDIRS = 20
PROJECTS = 30
FILES_PER_PROJECT = 50
NEEDLE_FILES = 6  # in project files at various depths, plus one in the 50 MB file

WORDS = """
able about above access account across action active actual add address adjust after again
agent against algorithm align allow alpha amount anchor answer apply archive argument array
ask assert asset attach attempt audit author auto avoid backend balance base basic batch
before begin behind below benefit better between beyond binary bit block board body bound
branch bridge brief buffer build bundle button byte cache call cancel capture card carry case
catch cause cell center chain change channel chapter check child choice chunk class clean
clear client clock close cloud cluster code collect column command comment commit common
compare compile complete config connect consider constant contain content context control
convert copy core correct count cover create credit current cursor custom cycle daily data
date debug decide decode default define delay delete deliver depend deploy depth derive
describe design detail detect device differ digest direct disable discard disk display
distance divide document domain double draft drive drop during dynamic each early edge edit
effect element empty enable encode engine entry error escape event exact example except
execute exist expand expect export extend extra factor fail false feature fetch field figure
file filter final find first fix flag flat float flow flush focus folder follow force format
forward frame free fresh front full function gather general generate global graph group grow
guard handle hash header heap help hidden hint history hold hook host index inner input
insert inside install instance integer interval invalid issue item join journal keep kernel
key kind label large last layer layout lead leaf left length level library light limit line
link list load local lock log logic long lookup loop lower main major manage manual map mark
match matrix measure member memory merge message method middle minor mirror mode model module
monitor move name native nested network never next node normal note notice number object offset
open option order origin output owner package page pair panel parent parse part pass patch
path pattern peer pending period permit phase pick pipe place plain plan point policy pool
port position post power prefix prepare present press print prior private probe process produce
profile program project prompt proper protect proxy public pull push query queue quick quote
random range rate raw reach read ready reason record reduce refer region register release
remote remove render repeat reply report request require reserve reset resolve resource
response rest result retry return reverse review right root round route row rule runner safe
sample save scale scan schema scope score screen script search second section secure select
send sequence serial server service session setting shape share shell short signal simple
single size skip slice slot small socket sort source space span split stack stage standard
start state static status step storage store stream strict string struct style subject submit
suffix summary support switch symbol sync system table tail target task template temporary
tenant test text thread ticket timer token tool topic total trace track transfer tree trigger
trim true type unit update upper usage user valid value vector verify version view visit
volume wait walk warn watch weight while width window worker wrap write yield zone
""".split()

PY_TEMPLATES = [
    "import {w}",
    "from {w}.{w} import {W}{W}",
    "",
    "",
    "class {W}{W}({W}):",
    '    """{S}."""',
    "    def {w}_{w}(self, {w}, {w}={n}):",
    "def {w}_{w}({w}, {w}):",
    "    {w} = {w}.{w}_{w}({w}, {n})",
    "        {w}_{w} = self.{w}.get('{w}', {n})",
    "    if {w} is None or {w} > {n}:",
    "        return {w}_{w}({w}, {w}={n})",
    "        raise {W}Error(f'{w} {{{w}}} is {w}')",
    "    for {w} in {w}.{w}s():",
    "            {w}.append(({w}, {w}_{w}))",
    "    # {S}.",
    "    return {w}",
    "        self.{w}_{w} = [{n}, {n}, {n}]",
    "    logger.debug('%s %s', {w}, {w}_{w})",
]

MD_TEMPLATES = [
    "# {W} {w} {w}",
    "## {W} {w}",
    "",
    "",
    "{S}. {S}. {S}.",
    "{S}, {w} {w} {w}; {S}.",
    "- {S}.",
    "- `{w}_{w}`: {S}.",
    "1. {W} the {w} {w} with `{w} --{w} {n}`.",
    "```",
    "{w} {w}_{w} --{w}={n} {w}/{w}.{w}",
    "| {w} | {n} | {w} {w} |",
    "> {S}.",
    "See [{w} {w}]({w}/{w}.md) for the {w} {w}.",
]

TXT_TEMPLATES = [
    "2024-{mm}-{dd}T{hh}:{mi}:{ss}.{ms}Z INFO  {w}.{w}: {S}",
    "2024-{mm}-{dd}T{hh}:{mi}:{ss}.{ms}Z DEBUG {w}: {w}={n} {w}={n} {w}_{w}={w}",
    "2024-{mm}-{dd}T{hh}:{mi}:{ss}.{ms}Z WARN  {w}.{w}: {S} (retry {n})",
    "2024-{mm}-{dd}T{hh}:{mi}:{ss}.{ms}Z ERROR {w}: {w} {w} failed: {w} {w} {n}",
    "{S}. {S}.",
    "{S}, and {S}.",
    "",
    "    {w}: {n}  {w}: {n}  {w}: {n}",
]


def _sentence(rng):
    words = [rng.choice(WORDS) for _ in range(rng.randint(4, 14))]
    words[0] = words[0].capitalize()
    return " ".join(words)


def _fill(template, rng):
    out = []
    i = 0
    while i < len(template):
        if template.startswith("{{", i):
            out.append("{")
            i += 2
        elif template.startswith("}}", i):
            out.append("}")
            i += 2
        elif template[i] == "{":
            j = template.index("}", i)
            key = template[i + 1 : j]
            if key == "w":
                out.append(rng.choice(WORDS))
            elif key == "W":
                out.append(rng.choice(WORDS).capitalize())
            elif key == "S":
                out.append(_sentence(rng))
            elif key == "n":
                out.append(str(rng.choice([0, 1, 2, 8, 10, 16, 32, 64, 100, 256, 1000, 4096,
                                           rng.randint(0, 99999)])))
            elif key == "mm":
                out.append("%02d" % rng.randint(1, 12))
            elif key == "dd":
                out.append("%02d" % rng.randint(1, 28))
            elif key in ("hh",):
                out.append("%02d" % rng.randint(0, 23))
            elif key in ("mi", "ss"):
                out.append("%02d" % rng.randint(0, 59))
            elif key == "ms":
                out.append("%03d" % rng.randint(0, 999))
            else:
                raise ValueError(key)
            i = j + 1
        else:
            out.append(template[i])
            i += 1
    return "".join(out)


def _line_pool(templates, rng, count):
    return [(_fill(rng.choice(templates), rng) + "\n").encode() for _ in range(count)]


def _text_of_size(pool, rng, size):
    """About `size` bytes of whole lines from `pool`, cut to exactly `size` at the end."""
    avg = max(1, sum(len(x) for x in pool[:200]) // 200)
    parts = []
    have = 0
    while have < size:
        batch = rng.choices(pool, k=max(16, (size - have) // avg + 16))
        for line in batch:
            parts.append(line)
            have += len(line)
            if have >= size:
                break
    data = b"".join(parts)[:size]
    if size > 1 and not data.endswith(b"\n"):
        data = data[:-1] + b"\n"
    return data


def _with_needle(data, rng):
    """Puts a line holding the needle somewhere in the middle of `data`, keeping its size."""
    line = ("    # marker %s in %s\n" % (NEEDLE, rng.choice(WORDS))).encode()
    at = data.find(b"\n", len(data) // 2 + rng.randint(0, max(1, len(data) // 4)))
    if at < 0 or at + 1 + len(line) > len(data):
        at = data.find(b"\n", len(data) // 4)
    at += 1
    # Keep the planned size: cut the tail, ending on a newline.
    out = (data[:at] + line + data[at:])[: len(data)]
    if not out.endswith(b"\n"):
        out = out[:-1] + b"\n"
    return out


def _plan(rng):
    """The list of (relative path, size) for the tree, before the needle is placed."""
    files = [(BIG_FILE, BIG_BYTES), (FILE_1K, KIB), (FILE_1M, MIB)]
    # The wide directory: many small files and some subdirectories, for ls.
    for i in range(WIDE_FILES):
        ext = ("txt", "py", "md")[i % 3]
        files.append(("%s/entry_%04d.%s" % (WIDE_DIR, i, ext), rng.randint(2 * KIB, 14 * KIB)))
    for i in range(WIDE_SUBDIRS):
        files.append(("%s/dir_%02d/readme.md" % (WIDE_DIR, i), rng.randint(KIB, 4 * KIB)))
    fixed = sum(size for _, size in files)
    # Projects: 50 files each, spread over nested directories up to 4 levels deep.
    proj = []
    for p in range(PROJECTS):
        base = "proj_%02d" % p
        dirs = [
            base,
            base + "/src",
            base + "/src/" + rng.choice(WORDS),
            base + "/src/%s/%s" % (rng.choice(WORDS), rng.choice(WORDS)),
            base + "/docs",
            base + "/logs/%s/%s" % (rng.choice(WORDS), rng.choice(WORDS)),
        ]
        used = set()
        for f in range(FILES_PER_PROJECT):
            d = dirs[f % len(dirs)]
            if d.endswith("/docs"):
                ext = "md"
            elif "/logs" in d:
                ext = "txt"
            else:
                ext = rng.choice(("py", "py", "py", "md", "txt"))
            while True:
                name = "%s_%s.%s" % (rng.choice(WORDS), rng.choice(WORDS), ext)
                if (d, name) not in used:
                    used.add((d, name))
                    break
            weight = rng.lognormvariate(0, 1.2)
            proj.append(["%s/%s" % (d, name), weight])
    budget = TOTAL_BYTES - fixed
    scale = budget / sum(w for _, w in proj)
    for path, w in proj:
        files.append((path, max(200, int(w * scale))))
    return files


def generate_fixture(root):
    rng = random.Random(SEED)
    pools = {
        "py": _line_pool(PY_TEMPLATES, rng, 20000),
        "md": _line_pool(MD_TEMPLATES, rng, 20000),
        "txt": _line_pool(TXT_TEMPLATES, rng, 20000),
    }
    plan = _plan(rng)
    proj_paths = [p for p, size in plan if p.startswith("proj_") and size >= 16 * KIB]
    # Needle files: spread over projects and depths, deterministic.
    needle_files = sorted(rng.sample(proj_paths, NEEDLE_FILES - 1)) + [BIG_FILE]
    tmp = root + ".tmp"
    if os.path.exists(tmp):
        shutil.rmtree(tmp)
    os.makedirs(tmp)
    total = 0
    for path, size in plan:
        ext = path.rsplit(".", 1)[1]
        data = _text_of_size(pools[ext], rng, size)
        if path in needle_files:
            data = _with_needle(data, rng)
        full = os.path.join(tmp, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as f:
            f.write(data)
        total += len(data)
    manifest = {
        "version": FIXTURE_VERSION,
        "seed": SEED,
        "files": len(plan),
        "bytes": total,
        "needle_length": len(NEEDLE),  # not the needle itself: this file must not match
        "needle_files": sorted(needle_files),
        "file_1k": FILE_1K,
        "file_1m": FILE_1M,
        "big_file": BIG_FILE,
        "wide_dir": WIDE_DIR,
        "wide_entries": WIDE_FILES + WIDE_SUBDIRS,
    }
    with open(os.path.join(tmp, MANIFEST), "w") as f:
        json.dump(manifest, f, indent=1)
    if os.path.exists(root):
        shutil.rmtree(root)
    os.rename(tmp, root)
    return manifest


def load_or_generate_fixture(root, regen):
    path = os.path.join(root, MANIFEST)
    if not regen and os.path.exists(path):
        try:
            with open(path) as f:
                manifest = json.load(f)
            if manifest.get("version") == FIXTURE_VERSION and manifest.get("seed") == SEED:
                return manifest, False
        except (OSError, ValueError):
            pass
    print("generating fixture in %s ..." % root, flush=True)
    t = time.perf_counter()
    manifest = generate_fixture(root)
    print("  %d files, %.1f MiB in %.1f s" % (manifest["files"], manifest["bytes"] / MIB,
                                              time.perf_counter() - t), flush=True)
    return manifest, True


def warm_page_cache(root):
    """Reads every file once so the first timed pass does not pay for the disk."""
    for dirpath, _, names in os.walk(root):
        for name in names:
            with open(os.path.join(dirpath, name), "rb") as f:
                while f.read(1 << 20):
                    pass


# --------------------------------------------------------------------------------------------
# MCP client
# --------------------------------------------------------------------------------------------


class ServerError(Exception):
    pass


class McpServer:
    """One server subprocess; requests go one at a time, answers are read line by line."""

    def __init__(self, argv, cwd, quiet=False):
        # quiet: stderr to /dev/null, so that start-up timings do not include a temp file.
        self.stderr = subprocess.DEVNULL if quiet else tempfile.TemporaryFile()
        self.proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.stderr, bufsize=0)
        self.win = self.proc.stdin.fileno()
        self.rout = self.proc.stdout.fileno()
        self.buf = bytearray()
        self.scanned = 0
        self.next_id = 1

    @property
    def pid(self):
        return self.proc.pid

    def stderr_text(self):
        if self.stderr == subprocess.DEVNULL:
            return "(not kept)"
        self.stderr.seek(0)
        return self.stderr.read().decode(errors="replace")[-2000:]

    def send(self, data):
        view = memoryview(data)
        while view:
            n = os.write(self.win, view)
            view = view[n:]

    def read_line(self):
        while True:
            nl = self.buf.find(b"\n", self.scanned)
            if nl >= 0:
                line = bytes(self.buf[:nl])
                del self.buf[: nl + 1]
                self.scanned = 0
                return line
            self.scanned = len(self.buf)
            chunk = os.read(self.rout, 1 << 20)
            if not chunk:
                raise ServerError("server closed stdout; stderr:\n" + self.stderr_text())
            self.buf += chunk

    def encode(self, method, params=None):
        rid = self.next_id
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        return rid, (json.dumps(msg, separators=(",", ":")) + "\n").encode()

    def wait_for(self, rid):
        """The raw response line for `rid`, skipping notifications."""
        while True:
            line = self.read_line()
            # Cheap check first; parse only what might be a notification or another id.
            if b'"id":' not in line:
                continue
            return line

    def timed(self, method, params=None):
        """(seconds, raw line) for one request; only the round trip is timed."""
        rid, data = self.encode(method, params)
        t0 = time.perf_counter()
        self.send(data)
        line = self.wait_for(rid)
        t1 = time.perf_counter()
        return t1 - t0, line

    def call(self, method, params=None):
        _, line = self.timed(method, params)
        return check_response(line, method)

    def notify(self, method, params=None):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.send((json.dumps(msg) + "\n").encode())

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()
        if self.stderr != subprocess.DEVNULL:
            self.stderr.close()


def check_response(line, what):
    msg = json.loads(line)
    if "error" in msg:
        raise ServerError("%s: JSON-RPC error %s" % (what, msg["error"]))
    result = msg.get("result", {})
    if isinstance(result, dict) and result.get("isError"):
        raise ServerError("%s: tool error: %s" % (what, result["content"][0]["text"][:500]))
    return result


def initialize_params():
    return {"protocolVersion": PROTOCOL_VERSION, "capabilities": {},
            "clientInfo": {"name": "backyard-bench", "version": "1"}}


def tool(name, arguments):
    return {"name": name, "arguments": arguments}


def proc_status(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM", "Threads"):
                out[key] = value.strip()
    return out


def proc_counters(pid):
    """(CPU seconds, minor page faults) of the whole process, dead threads included."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rpartition(")")[2].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks, int(fields[7])


def kib_of(value):
    return int(value.split()[0])


# --------------------------------------------------------------------------------------------
# Measurements
# --------------------------------------------------------------------------------------------


def percentile(samples, p):
    s = sorted(samples)
    if not s:
        return float("nan")
    k = (len(s) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def summarize(samples):
    return {"n": len(samples), "p50": percentile(samples, 50), "p95": percentile(samples, 95),
            "min": min(samples), "max": max(samples)}


def measure_start(argv, cwd, n):
    """Seconds from spawn to the initialize response, n times."""
    out = []
    rid_params = initialize_params()
    for _ in range(n):
        t0 = time.perf_counter()
        s = McpServer(argv, cwd, quiet=True)
        rid, data = s.encode("initialize", rid_params)
        s.send(data)
        line = s.wait_for(rid)
        t1 = time.perf_counter()
        check_response(line, "initialize")
        s.close()
        out.append(t1 - t0)
    return out


def measure_true_spawn(n):
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        p = subprocess.Popen(["/bin/true"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             bufsize=0)
        p.wait()
        t1 = time.perf_counter()
        p.stdin.close()
        p.stdout.close()
        out.append(t1 - t0)
    return out


def measure_calls(server, method, params, n, warmup, check=None):
    for _ in range(warmup):
        _, line = server.timed(method, params)
        result = check_response(line, method)
        if check:
            check(result)
    out = []
    for _ in range(n):
        dt, line = server.timed(method, params)
        out.append(dt)
        if b'"isError":true' in line or b'"error":{' in line:
            check_response(line, method)  # raises with the message
    return out


def measure_sequential(server, params, n):
    encoded = [server.encode("tools/call", params)[1] for _ in range(n)]
    t0 = time.perf_counter()
    for data in encoded:
        server.send(data)
        server.wait_for(None)
    return time.perf_counter() - t0


def measure_pipelined(server, params, n):
    """All n requests written by a thread while this one reads the n answers."""
    encoded = b"".join(server.encode("tools/call", params)[1] for _ in range(n))
    t0 = time.perf_counter()
    writer = threading.Thread(target=server.send, args=(encoded,))
    writer.start()
    for _ in range(n):
        server.wait_for(None)
    writer.join()
    return time.perf_counter() - t0


def measure_command(argv, n, warmup, cwd=None):
    for _ in range(warmup):
        subprocess.run(argv, stdout=subprocess.DEVNULL, cwd=cwd, check=False)
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, cwd=cwd, check=False)
        out.append(time.perf_counter() - t0)
    return out


EXEC_COMMAND = "echo hi"
BWRAP_ARGV = ["bwrap", "--unshare-all", "--unshare-user", "--die-with-parent",
              "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin",
              "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
              "--proc", "/proc", "--dev", "/dev", "/bin/true"]


def proc_children_cpu(pid):
    """CPU seconds of the children `pid` has waited for (cutime + cstime)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")


def spawn_and_read(argv, env):
    """os.posix_spawn of argv with stdin /dev/null and stdout, stderr on a pipe; reads to EOF,
    then waitpid. Returns (seconds, output bytes, exit status). The pipe and /dev/null are
    opened close-on-exec (Python's default) and dup2'd onto 0-2, so the child gets no other
    descriptor of ours, as with subprocess's close_fds."""
    r, w = os.pipe()
    null = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    actions = [(os.POSIX_SPAWN_DUP2, null, 0), (os.POSIX_SPAWN_DUP2, w, 1),
               (os.POSIX_SPAWN_DUP2, w, 2)]
    t0 = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, env, file_actions=actions)
    os.close(w)
    chunks = []
    while True:
        chunk = os.read(r, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    t1 = time.perf_counter()
    os.close(r)
    os.close(null)
    return t1 - t0, b"".join(chunks), os.waitstatus_to_exitcode(status)


def measure_spawns(argv, env, n, warmup, expect=None):
    """Seconds for n posix_spawn + read-to-EOF + waitpid rounds of argv."""
    out = []
    for i in range(warmup + n):
        dt, data, code = spawn_and_read(argv, env)
        if code != 0 or (expect is not None and data != expect):
            raise ServerError("%s: exit %d, output %r" % (" ".join(argv), code, data[:300]))
        if i >= warmup:
            out.append(dt)
    return out


def measure_execute(server, params, n, warmup):
    """(round-trip seconds, server-reported duration_ms in seconds) per execute call."""
    out, inside = [], []
    for i in range(warmup + n):
        dt, line = server.timed("tools/call", params)
        result = check_response(line, "execute")  # parsed after the clock stopped
        sc = result["structuredContent"]
        if sc["exit_code"] != 0 or sc["stdout"] != "hi\n":
            raise ServerError("execute: exit %s, stdout %r, stderr %r"
                              % (sc["exit_code"], sc["stdout"], sc["stderr"][:300]))
        if i >= warmup:
            out.append(dt)
            inside.append(sc["duration_ms"] / 1000.0)
    return out, inside


PY_SUM = "sum(i*i for i in range(200000))"


def measure_python_calls(server, code_of, n, warmup, pause=0.0, inside=None):
    """Round-trip seconds of run_python calls; code_of(i) -> (code, session). With `inside` (a
    list), the kernel's own duration_ms of each cell is appended there, in seconds."""
    out = []
    for i in range(warmup + n):
        code, session = code_of(i)
        dt, line = server.timed("tools/call", tool("run_python", {"code": code, "session": session}))
        result = check_response(line, "run_python")
        if result.get("isError"):
            raise ServerError("run_python %r: %s" % (code, json.dumps(result)[:300]))
        if i >= warmup:
            out.append(dt)
            if inside is not None:
                inside.append(result["structuredContent"]["duration_ms"] / 1000.0)
        if pause:
            time.sleep(pause)
    return out


def plain_python_sum(n):
    """Seconds for PY_SUM timed inside one plain /usr/bin/python3, n times."""
    script = ("import time\nfor _ in range(%d):\n    t = time.perf_counter()\n    %s\n"
              "    print(time.perf_counter() - t)\n" % (n, PY_SUM))
    out = subprocess.run(["/usr/bin/python3", "-I", "-S", "-c", script], capture_output=True,
                         text=True, check=True).stdout
    return [float(x) for x in out.split()]


def bench_run_python(argv, fixture, n, warmup, row, results):
    """run_python: warm 1+1, the first call of a new session, and CPU-bound code."""
    server = McpServer(argv + ["--python-sessions", str(n + warmup + 4)], fixture)
    try:
        server.call("initialize", initialize_params())
        server.notify("notifications/initialized")
        print("run_python 1+1 (warm session): %d calls ..." % (n * 4), flush=True)
        warm = summarize(measure_python_calls(server, lambda i: ("1+1", "warm"), n * 4, warmup))
        # New sessions a second apart, as an agent opens them: each takes the spare kernel
        # started after the previous one.
        print("run_python in a new session: %d calls ..." % n, flush=True)
        time.sleep(1.0)
        fresh = summarize(measure_python_calls(
            server, lambda i: ("1+1", "new-%d" % i), n, 1, pause=1.0))
        print("run_python %s: %d calls ..." % (PY_SUM, n), flush=True)
        in_kernel = []
        cpu = summarize(measure_python_calls(server, lambda i: (PY_SUM, "warm"), n, warmup,
                                             inside=in_kernel))
    finally:
        server.close()
    plain = summarize(plain_python_sum(n + warmup)[warmup:])
    in_kernel = summarize(in_kernel)
    results["run_python_warm_s"] = warm
    results["run_python_new_session_s"] = fresh
    results["run_python_sum_s"] = cpu
    results["run_python_sum_in_kernel_s"] = in_kernel
    results["plain_python_sum_s"] = plain
    # The target compares like with like: the code timed inside the sandboxed kernel against
    # the same code timed inside a plain python3. The round trip adds the protocol.
    ratio = in_kernel["p50"] / plain["p50"]
    results["run_python_sum_over_plain_p50"] = ratio
    results["run_python_sum_round_trip_over_plain_p50"] = cpu["p50"] / plain["p50"]
    row("run_python '1+1', warm session", "p50 %s  p95 %s" % (fmt_time(warm["p50"]),
                                                          fmt_time(warm["p95"])),
        "p50 < 300 µs", warm["p50"] < 300e-6)
    row("run_python '1+1', first call of a new session",
        "p50 %s  p95 %s" % (fmt_time(fresh["p50"]), fmt_time(fresh["p95"])), "p50 < 5 ms",
        fresh["p50"] < 0.005)
    row("run_python %s, timed in the kernel" % PY_SUM, "p50 %s" % fmt_time(in_kernel["p50"]))
    row("  reference: the same timed inside plain python3 (p50)", fmt_time(plain["p50"]))
    row("run_python / plain python3 (p50)", "%.2f" % ratio, "≤ 1.10", ratio <= 1.10)
    row("  its round trip (p50; / plain: %.2f)" % results["run_python_sum_round_trip_over_plain_p50"],
        fmt_time(cpu["p50"]))


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------


def fmt_time(seconds):
    if seconds != seconds:
        return "n/a"
    if seconds < 1e-3:
        return "%.1f µs" % (seconds * 1e6)
    if seconds < 1:
        return "%.2f ms" % (seconds * 1e3)
    return "%.2f s" % seconds


def fmt_kib(kib):
    return "%.1f MiB" % (kib / 1024.0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--binary", default=DEFAULT_BINARY,
                    help="server binary (default: build/backyard-mcp in the repository)")
    ap.add_argument("--fixture", default=DEFAULT_FIXTURE,
                    help="fixture directory (default: bench/fixture)")
    ap.add_argument("--regen", action="store_true", help="regenerate the fixture")
    ap.add_argument("--quick", action="store_true", help="fewer iterations")
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON here")
    ap.add_argument("--server-arg", action="append", default=[], metavar="ARG",
                    help="extra argument for the server (repeatable), e.g. --server-arg=--workers=1")
    args = ap.parse_args()

    binary = os.path.abspath(args.binary)
    if not os.access(binary, os.X_OK):
        sys.exit("no executable server at %s (build it, or pass --binary)" % binary)
    rg = shutil.which("rg") or ("/usr/bin/rg" if os.path.exists("/usr/bin/rg") else None)
    if rg is None:
        sys.exit("ripgrep is missing: apt-get install ripgrep")

    fixture = os.path.abspath(args.fixture)
    manifest, _ = load_or_generate_fixture(fixture, args.regen)
    print("warming the page cache ...", flush=True)
    warm_page_cache(fixture)

    if args.quick:
        n_spawn, n_small, n_heavy, n_seq, warm_small, warm_heavy = 10, 50, 5, 500, 10, 2
        n_exec, warm_exec = 15, 3
    else:
        n_spawn, n_small, n_heavy, n_seq, warm_small, warm_heavy = 30, 200, 20, 2000, 30, 3
        n_exec, warm_exec = 50, 5
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        sys.exit("bubblewrap is missing: apt-get install bubblewrap")

    # permissive: the default ruleset asks before execute, which this client cannot answer;
    # it also keeps the other metrics independent of the default ruleset's asks.
    argv = [binary, "--root", fixture, "--log-level", "off", "--ruleset", "permissive"]
    argv += args.server_arg
    load_before = os.getloadavg()
    results = {}
    rows = []  # (metric, value text, target text, status)
    diag = []  # (case, server CPU per call, minor faults per call)

    def row(metric, value, target="", ok=None):
        status = "" if ok is None else ("PASS" if ok else "MISS")
        rows.append((metric, value, target, status))

    # --- start-up ------------------------------------------------------------------------
    print("start-up: %d spawns ..." % n_spawn, flush=True)
    measure_start(argv, fixture, 3)  # warm the binary's pages
    start = summarize(measure_start(argv, fixture, n_spawn))
    true_spawn = summarize(measure_true_spawn(n_spawn))
    results["start_to_initialize_s"] = start
    results["bin_true_spawn_s"] = true_spawn
    row("start → initialize response (p50)", fmt_time(start["p50"]), "< 10 ms",
        start["p50"] < 0.010)
    row("  reference: spawn+exit /bin/true (p50)", fmt_time(true_spawn["p50"]))

    # --- one long-lived server for the rest -----------------------------------------------
    server = McpServer(argv, fixture)
    try:
        server.call("initialize", initialize_params())
        server.notify("notifications/initialized")
        server.call("ping")
        idle = proc_status(server.pid)
        results["idle_rss_kib"] = kib_of(idle["VmRSS"])
        results["idle_threads"] = int(idle["Threads"])

        read_1k = tool("read_file", {"path": manifest["file_1k"]})
        read_1m = tool("read_file", {"path": manifest["file_1m"]})
        ls_wide = tool("ls", {"path": manifest["wide_dir"]})
        glob_txt = tool("glob", {"pattern": "**/*.txt"})
        grep_files = tool("grep", {"pattern": NEEDLE, "output_mode": "files_with_matches"})
        grep_count = tool("grep", {"pattern": NEEDLE, "output_mode": "count"})

        def check_grep(result):
            got = sorted(result["structuredContent"]["files"])
            if got != manifest["needle_files"]:
                raise ServerError("grep found %s, expected %s" % (got, manifest["needle_files"]))

        def check_ls(result):
            n = len(result["structuredContent"]["entries"])
            if n != manifest["wide_entries"]:
                raise ServerError("ls listed %d entries, expected %d" % (n, manifest["wide_entries"]))

        cases = [
            # key, label, method, params, n, warmup, check
            ("ping", "ping round trip (client floor)", "ping", None, n_small, warm_small, None),
            ("read_1k", "read_file 1 KiB", "tools/call", read_1k, n_small, warm_small, None),
            ("read_1m", "read_file 1 MiB (default args: 2000 lines, ≤100 KiB text)",
             "tools/call", read_1m, n_heavy * 5, warm_heavy, None),
            ("ls_wide", "ls %s/ (%d entries)" % (manifest["wide_dir"], manifest["wide_entries"]),
             "tools/call", ls_wide, n_small, warm_small, check_ls),
            ("glob_txt", "glob **/*.txt (capped at max_results)", "tools/call", glob_txt,
             n_heavy * 5, warm_heavy, None),
            ("grep_files", "grep %s files_with_matches" % NEEDLE, "tools/call", grep_files,
             n_heavy, warm_heavy, check_grep),
            ("grep_count", "grep %s count (extra)" % NEEDLE, "tools/call", grep_count,
             n_heavy, warm_heavy, None),
        ]
        for key, label, method, params, n, warmup, check in cases:
            print("%s: %d calls ..." % (label, n), flush=True)
            cpu0, flt0 = proc_counters(server.pid)
            s = summarize(measure_calls(server, method, params, n, warmup, check))
            cpu1, flt1 = proc_counters(server.pid)
            s["server_cpu_per_call_s"] = (cpu1 - cpu0) / n
            s["minor_faults_per_call"] = (flt1 - flt0) / n
            results[key + "_s"] = s
            diag.append((label, fmt_time(s["server_cpu_per_call_s"]),
                         "%.0f" % s["minor_faults_per_call"]))
            value = "p50 %s  p95 %s" % (fmt_time(s["p50"]), fmt_time(s["p95"]))
            if key == "read_1k":
                row(label, value, "p50 < 100 µs", s["p50"] < 100e-6)
            else:
                row(label, value)
            if key == "ping":
                ping_p50 = s["p50"]
        results["read_1k_minus_ping_p50_s"] = results["read_1k_s"]["p50"] - ping_p50
        row("  read_file 1 KiB p50 minus ping p50", fmt_time(results["read_1k_minus_ping_p50_s"]))

        print("sequential read_file 1 KiB x %d ..." % n_seq, flush=True)
        cpu0, flt0 = proc_counters(server.pid)
        seq = measure_sequential(server, read_1k, n_seq)
        cpu1, flt1 = proc_counters(server.pid)
        results["sequential_read_1k_per_s"] = n_seq / seq
        results["sequential_read_1k_server_cpu_per_call_s"] = (cpu1 - cpu0) / n_seq
        results["sequential_read_1k_minor_faults_per_call"] = (flt1 - flt0) / n_seq
        diag.append(("sequential read_file 1 KiB", fmt_time((cpu1 - cpu0) / n_seq),
                     "%.0f" % ((flt1 - flt0) / n_seq)))
        row("sequential read_file 1 KiB", "%.0f calls/s" % (n_seq / seq))
        pipe = measure_pipelined(server, read_1k, n_seq)
        results["pipelined_read_1k_per_s"] = n_seq / pipe
        row("  pipelined read_file 1 KiB (extra)", "%.0f calls/s" % (n_seq / pipe))

        peak = proc_status(server.pid)
        results["peak_rss_kib"] = kib_of(peak["VmHWM"])
        results["final_rss_kib"] = kib_of(peak["VmRSS"])
    finally:
        server.close()
    row("idle RSS after initialize", fmt_kib(results["idle_rss_kib"]), "< 10 MiB",
        results["idle_rss_kib"] < 10 * 1024)
    row("peak RSS (VmHWM) after the run", fmt_kib(results["peak_rss_kib"]))

    # --- execute --------------------------------------------------------------------------
    # A server of its own, so that its forks do not touch the RSS numbers above.
    print("execute %r: %d calls ..." % (EXEC_COMMAND, n_exec), flush=True)
    server = McpServer(argv, fixture)
    try:
        server.call("initialize", initialize_params())
        server.notify("notifications/initialized")
        exec_params = tool("execute", {"command": EXEC_COMMAND})
        cpu0, flt0 = proc_counters(server.pid)
        child0 = proc_children_cpu(server.pid)
        exec_times, exec_inside = measure_execute(server, exec_params, n_exec, warm_exec)
        cpu1, flt1 = proc_counters(server.pid)
        child1 = proc_children_cpu(server.pid)
    finally:
        server.close()
    ex = summarize(exec_times)
    ex["server_cpu_per_call_s"] = (cpu1 - cpu0) / (n_exec + warm_exec)  # own threads only
    ex["children_cpu_per_call_s"] = (child1 - child0) / (n_exec + warm_exec)
    ex["minor_faults_per_call"] = (flt1 - flt0) / (n_exec + warm_exec)
    results["execute_echo_s"] = ex
    results["execute_echo_duration_ms_field_s"] = summarize(exec_inside)
    diag.append(("execute %r (server threads)" % EXEC_COMMAND, fmt_time(ex["server_cpu_per_call_s"]),
                 "%.0f" % ex["minor_faults_per_call"]))
    diag.append(("  its sandbox processes (waited-for children)",
                 fmt_time(ex["children_cpu_per_call_s"]), "—"))

    plain_env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8",
                 "TERM": "dumb"}  # what the server gives the command
    print("posix_spawn /bin/bash -c %r: %d runs ..." % (EXEC_COMMAND, n_exec), flush=True)
    plain = summarize(measure_spawns(["/bin/bash", "-c", EXEC_COMMAND], plain_env, n_exec,
                                     warm_exec, expect=b"hi\n"))
    results["posix_spawn_bash_echo_s"] = plain
    print("bare bwrap /bin/true: %d runs ..." % n_exec, flush=True)
    bw = summarize(measure_spawns([bwrap] + BWRAP_ARGV[1:], plain_env, n_exec, warm_exec,
                                  expect=b""))
    results["bwrap_true_s"] = bw
    results["execute_over_posix_spawn_p50"] = ex["p50"] / plain["p50"]
    results["execute_minus_duration_ms_p50_s"] = ex["p50"] - results[
        "execute_echo_duration_ms_field_s"]["p50"]
    row("execute %r round trip" % EXEC_COMMAND,
        "p50 %s  p95 %s" % (fmt_time(ex["p50"]), fmt_time(ex["p95"])), "p50 < 5 ms",
        ex["p50"] < 0.005)
    row("  of which the server's duration_ms (fork → exit, p50)",
        fmt_time(results["execute_echo_duration_ms_field_s"]["p50"]))
    row("  reference: posix_spawn /bin/bash -c %r (p50)" % EXEC_COMMAND, fmt_time(plain["p50"]))
    row("execute p50 / posix_spawn p50", "%.1f" % results["execute_over_posix_spawn_p50"])
    row("  reference: bare bwrap --unshare-all /bin/true (p50)", fmt_time(bw["p50"]))

    # --- run_python -----------------------------------------------------------------------
    bench_run_python(argv, fixture, n_exec, warm_exec, row, results)

    # --- ripgrep reference ----------------------------------------------------------------
    rg_argv = [rg, "-j2", "-l", NEEDLE, fixture]
    listed = subprocess.run(rg_argv, capture_output=True, text=True).stdout.split()
    rg_files = sorted(os.path.relpath(p, fixture) for p in listed)
    if rg_files != manifest["needle_files"]:
        print("warning: rg listed %s, expected %s" % (rg_files, manifest["needle_files"]))
    print("rg -j2 -l: %d runs ..." % n_heavy, flush=True)
    rg_s = summarize(measure_command(rg_argv, n_heavy, warm_heavy))
    results["rg_j2_s"] = rg_s
    ratio = results["grep_files_s"]["p50"] / rg_s["p50"]
    results["grep_over_rg_p50"] = ratio
    row("  reference: rg -j2 -l %s (p50, incl. spawn)" % NEEDLE, fmt_time(rg_s["p50"]))
    row("grep p50 / rg -j2 p50", "%.2f" % ratio, "≤ 1.00", ratio <= 1.0)

    # --- report ---------------------------------------------------------------------------
    env = {
        "binary": binary,
        "server_args": argv[1:],
        "fixture": fixture,
        "fixture_files": manifest["files"],
        "fixture_bytes": manifest["bytes"],
        "python": platform.python_version(),
        "kernel": platform.release(),
        "cpus": os.cpu_count(),
        "quick": args.quick,
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
    }
    results["env"] = env
    print()
    print("backyard-mcp benchmark: %d files, %.0f MiB fixture, %d CPUs, load average %.2f -> %.2f%s"
          % (manifest["files"], manifest["bytes"] / MIB, os.cpu_count(), load_before[0],
             env["loadavg_after"][0], " (quick)" if args.quick else ""))
    widths = [max(len(r[i]) for r in rows + [("metric", "value", "target", "")])
              for i in range(4)]
    header = ("metric", "value", "target", "")
    for r in [header] + rows:
        print("  ".join(r[i].ljust(widths[i]) for i in range(4)).rstrip())
    print()
    print("server-side cost per call (from /proc/PID/stat; CPU has %d ms resolution per case)"
          % (1000 // os.sysconf("SC_CLK_TCK")))
    dw = [max(len(d[i]) for d in diag + [("case", "server CPU/call", "minor faults/call")])
          for i in range(3)]
    for d in [("case", "server CPU/call", "minor faults/call")] + diag:
        print("  ".join(d[i].ljust(dw[i]) for i in range(3)).rstrip())
    misses = [r[0] for r in rows if r[3] == "MISS"]
    print()
    print("%d target(s) missed" % len(misses) if misses else "all targets met")
    if args.json:
        results["table"] = [dict(zip(("metric", "value", "target", "status"), r)) for r in rows]
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
        print("wrote %s" % args.json)


if __name__ == "__main__":
    main()
