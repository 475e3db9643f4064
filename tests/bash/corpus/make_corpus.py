#!/usr/bin/python3
"""Writes the bash parser's test corpus: JSON Lines {"src": BASH TEXT, "harmless": BOOL}.

  agent_idioms.jsonl    command lines of the kind coding agents send, written by hand in
                        agent_idioms.py: here-documents, loops, case, functions, [[ ]], arrays,
                        redirections of every kind, git/make/npm/python invocations, and lines
                        a policy should refuse (rm -rf /, cat .env). harmless=True for the ones
                        that only print; two dozen deliberate syntax errors (harmless=False).
  system_scripts.jsonl  top-level commands cut out of the shell scripts installed on the
                        machine that made the file (a Debian 12 image: files under /usr/bin,
                        /usr/sbin, /usr/share, /etc and /usr/lib whose first line is #!/bin/sh,
                        #!/bin/bash or #!/usr/bin/env bash). Each script is cut by adding
                        physical lines to a chunk until `bash -n` accepts the chunk without a
                        word on stderr; comment-only chunks and chunks over 4 KiB are dropped, a
                        script whose chunk never closes is left at that point. Scripts are
                        taken in sorted order (copies with the same content once), each one's
                        distinct chunks shuffled with a fixed seed and cut to 25, then chosen
                        round robin over the scripts up to 1,200. All harmless=False. The file
                        depends on the machine, so the checked-in copy is what the tests use.
  generated.jsonl       generated combinations of every construct nested inside each other
                        (a case inside a for inside $( ) inside a here-document body ...) using
                        only echo, printf, true, false, :, test, [, [[, ((, let, assignments,
                        declare, export, local, read and select from here-documents and here-
                        strings, set --, shift, unset, return, break, continue, wait and calls
                        of functions defined before, with redirections only to /dev/null, &1
                        and &2 (and process substitutions as arguments).
                        These are harmless=True: they finish at once and touch no file. 15%
                        are copies mutated into syntax errors (harmless=False): a closing or
                        opening word dropped or put where it cannot stand, an unbalanced quote
                        or parenthesis, `{echo`, `| |`, `&& ;`, case without in, a bad
                        for ((, a trailing operator. generator.py; fixed seed.

Every entry is checked before it is written: bash -n must accept it (reject it, for the
deliberate errors; acceptance as tests/bash/differential.py defines it), and a harmless entry,
run by bash in an empty directory with stdin from /dev/null, must finish within 2 s leaving the
directory empty. An entry that fails is reported, and for the generated file dropped.

Usage: /usr/bin/python3 make_corpus.py [agent] [system] [generated]   (default: all three)
"""

import concurrent.futures
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
from differential import bash_accepts, traced_commands  # noqa: E402
import agent_idioms  # noqa: E402
from generator import Generator  # noqa: E402

BASH = "/bin/bash"
SEED = 20240501


def write_jsonl(name, entries):
    with open(os.path.join(HERE, name), "w", encoding="utf-8") as f:
        for src, harmless in entries:
            f.write(json.dumps({"src": src, "harmless": harmless}, ensure_ascii=False) + "\n")
    print(f"{name}: {len(entries)} entries, {sum(h for _, h in entries)} harmless")


def verify(entries, expect_valid, drop=False):
    """Checks each (src, harmless) against bash; returns those that pass (or all, unless drop)."""
    with tempfile.TemporaryDirectory() as work, \
            concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        def check(entry):
            src, harmless = entry
            accepted, err = bash_accepts(src, work)
            if accepted != expect_valid(entry):
                return f"bash -n {'accepts' if accepted else 'rejects'}: {err.strip()}"
            if harmless:
                _, timed_out, left = traced_commands(src, timeout=2)
                if timed_out or left:
                    return f"ran: timed out {timed_out}, files left {left}"
            return None
        problems = list(pool.map(check, entries))
    kept = []
    for entry, problem in zip(entries, problems):
        if problem:
            print(f"{'dropped' if drop else 'PROBLEM'}: {entry[0]!r}\n    {problem}")
        if not problem or not drop:
            kept.append(entry)
    return kept


# ---------------------------------------------------------------- agent idioms

def make_agent():
    entries = ([(s, True) for s in agent_idioms.HARMLESS]
               + [(s, False) for s in agent_idioms.NOT_HARMLESS])
    valid = verify(entries, lambda e: True)
    invalid = verify([(s, False) for s in agent_idioms.INVALID], lambda e: False)
    write_jsonl("agent_idioms.jsonl", valid + invalid)


# ---------------------------------------------------------------- system scripts

SHEBANGS = (b"#!/bin/sh", b"#!/bin/bash", b"#!/usr/bin/env bash")
ROOTS = ["/usr/bin", "/usr/sbin", "/usr/share", "/etc", "/usr/lib"]
MAX_CHUNK = 4096
GIVE_UP = 256 * 1024
PER_SCRIPT = 25
SYSTEM_TOTAL = 1200


def shell_scripts():
    seen, scripts = set(), []
    for root in ROOTS:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for name in sorted(filenames):
                path = os.path.join(dirpath, name)
                if os.path.islink(path) or not os.path.isfile(path):
                    continue
                try:
                    with open(path, "rb") as f:
                        data = f.read()
                except OSError:
                    continue
                first = data.split(b"\n", 1)[0].rstrip()
                if not any(first == s or first.startswith(s + b" ") for s in SHEBANGS):
                    continue
                digest = hashlib.sha256(data).digest()
                if digest not in seen and b"\0" not in data:
                    seen.add(digest)
                    scripts.append((path, data))
    return sorted(scripts)


def bash_n_quiet(chunk, path):
    with open(path, "wb") as f:
        f.write(chunk)
    r = subprocess.run([BASH, "-n", path], stdin=subprocess.DEVNULL, capture_output=True)
    return r.returncode == 0 and not r.stderr


def cut_script(item):
    """The top-level commands of one script, as bash -n sees them complete."""
    path, data = item
    fd, tmp = tempfile.mkstemp(suffix=".sh")
    os.close(fd)
    chunks, chunk = [], b""
    try:
        for line in data.splitlines(keepends=True):
            if not chunk and (not line.strip() or line.lstrip().startswith(b"#")):
                continue
            chunk += line
            if chunk.rstrip().endswith((b"\\", b"|", b"&&")) and len(chunk) < GIVE_UP:
                continue
            if bash_n_quiet(chunk, tmp):
                text = chunk.rstrip(b"\n")
                if len(text) <= MAX_CHUNK:
                    try:
                        chunks.append(text.decode("utf-8"))
                    except UnicodeDecodeError:
                        pass
                chunk = b""
            elif len(chunk) > GIVE_UP:
                break
    finally:
        os.unlink(tmp)
    return path, chunks


def make_system():
    scripts = shell_scripts()
    print(f"{len(scripts)} shell scripts")
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        cut = list(pool.map(cut_script, scripts))
    rng = random.Random(SEED)
    seen, per_script = set(), []
    for path, chunks in cut:
        fresh = []
        for c in chunks:
            if c not in seen and c.strip():
                seen.add(c)
                fresh.append(c)
        rng.shuffle(fresh)
        per_script.append(fresh[:PER_SCRIPT])
    chosen = []  # round robin over the scripts, so that many contribute
    for rank in range(PER_SCRIPT):
        for fresh in per_script:
            if rank < len(fresh) and len(chosen) < SYSTEM_TOTAL:
                chosen.append(fresh[rank])
    print(f"{sum(1 for f in per_script if f)} scripts contribute; "
          f"{sum(len(c) for _, c in cut)} chunks cut, {len(seen)} distinct")
    entries = verify([(c, False) for c in chosen], lambda e: True, drop=True)
    write_jsonl("system_scripts.jsonl", entries)


# ---------------------------------------------------------------- generated

def make_generated(count=1100, invalid_share=0.15):
    gen = Generator(random.Random(SEED))
    seen, valid = set(), []
    n_valid = round(count * (1 - invalid_share))
    while len(valid) < n_valid * 1.05:
        src = gen.program()
        if src not in seen:
            seen.add(src)
            valid.append((src, True))
    valid = verify(valid, lambda e: True, drop=True)[:n_valid]
    invalid = []
    with tempfile.TemporaryDirectory() as work:
        for src, _ in valid:
            if len(invalid) >= count - n_valid:
                break
            if len(src) > 600 or gen.rng.random() > 3 * invalid_share:
                continue
            for _ in range(8):
                bad = gen.break_syntax(src)
                if bad not in seen and not bash_accepts(bad, work)[0]:
                    seen.add(bad)
                    invalid.append((bad, False))
                    break
    entries = valid + invalid
    gen.rng.shuffle(entries)
    write_jsonl("generated.jsonl", entries)


def main():
    wanted = sys.argv[1:] or ["agent", "system", "generated"]
    for name in wanted:
        {"agent": make_agent, "system": make_system, "generated": make_generated}[name]()


if __name__ == "__main__":
    main()
