#!/usr/bin/python3
"""Differential test of the bash parser (bash_parse_tool) against /bin/bash itself.

Usage: differential.py TOOL [CORPUS.jsonl ...]     (default: tests/bash/corpus/*.jsonl)
       differential.py --self-test                 (shows that both checks can fail)

TOOL reads JSON Lines {"src": ...} on stdin and answers one line each:
{"ok": true, "commands": [{"words": [...], "offset": N}], "files": [...]} or
{"ok": false, "error": "..."}.

Check 1 (syntax): the tool's "ok" must equal whether bash accepts the entry. Bash accepts when
`bash -n FILE` exits 0, says nothing but "here-document ... delimited by end-of-file" warnings,
and parsed to the end: bash 5.2 stops silently with status 0 on an error inside `[[ ]]` (for
`[[ ]]` with no message at all), so an accepted entry is checked once more with a line `)`
appended, which bash must then reject. An unterminated here-document reaches the end anyway.

Check 2 (runs): every entry marked harmless that bash accepts is run by bash in a fresh scratch
directory (stdin /dev/null, `env -i PATH=/usr/bin:/bin`, 5 s) under `set -x`, with the trace on
its own descriptor. The name of every simple command bash ran must be the first word of a
command the tool reported, or a wrapper or shell one runs through (`via`); a reported first word
holding `$` or a backquote matches any name.
Traced assignments and the `[[ ]]`, `(( ))`, `for`, `select` and `case` headers are skipped.

Prints every mismatch and a summary; exits 1 on any mismatch, 0 otherwise.
"""

import concurrent.futures
import glob
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile

BASH = "/bin/bash"
HERE = os.path.dirname(os.path.abspath(__file__))
HEREDOC_WARNING = re.compile(r"warning: here-document at line \d+ delimited by end-of-file")
MARK = "\x01\x02"  # PS4; bash repeats its first character for each nesting level
TRACE_FD = 19
SKIPPED_HEADS = ("[[ ", "((", "for ", "select ", "case ")
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")


def load_corpus(paths):
    entries = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for index, line in enumerate(f):
                if line.strip():
                    e = json.loads(line)
                    entries.append({"file": os.path.basename(path), "index": index,
                                    "src": e["src"], "harmless": bool(e.get("harmless"))})
    return entries


def bash_n(src, path):
    with open(path, "w", encoding="utf-8") as f:
        f.write(src)
    r = subprocess.run([BASH, "-n", path], stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, errors="replace", timeout=60)
    return r.returncode, r.stderr.replace(path, "<entry>")


def bash_accepts(src, workdir):
    """(accepted, bash's stderr) for src as a script given to `bash -n`."""
    fd, path = tempfile.mkstemp(suffix=".sh", dir=workdir)
    os.close(fd)
    try:
        rc, err = bash_n(src, path)
        said = [l for l in err.splitlines() if l.strip()]
        if rc != 0 or any(not HEREDOC_WARNING.search(l) for l in said):
            return False, err
        if said:  # a here-document ran to the end of the file: bash read it all
            return True, err
        rc, _ = bash_n(src + "\n)\n", path)
        if rc == 0:
            return False, err + "(bash -n stopped without a word before the end of the entry)\n"
        return True, err
    finally:
        os.unlink(path)


def run_tool(command, entries):
    payload = "".join(json.dumps({"src": e["src"]}) + "\n" for e in entries)
    r = subprocess.run(command, input=payload, capture_output=True, text=True, timeout=1800)
    lines = r.stdout.splitlines()
    if r.returncode != 0 or len(lines) != len(entries):
        sys.exit(f"tool failed: exit {r.returncode}, {len(lines)} lines for {len(entries)} "
                 f"entries\n{r.stderr[-2000:]}")
    return [json.loads(l) for l in lines]


ANSI_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{1,2}|[0-7]{1,3}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|.)",
                         re.DOTALL)
ANSI_CHARS = {"a": 7, "b": 8, "e": 27, "E": 27, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11}


def ansi_c(body):
    """The text of a $'...' string as bash's xtrace writes it."""
    def one(e):
        if e[0] == "x":
            return bytes([int(e[1:], 16)])
        if e[0] in "01234567":
            return bytes([int(e, 8) & 255])
        if e[0] in "uU":
            return chr(int(e[1:], 16)).encode("utf-8", "surrogatepass")
        return bytes([ANSI_CHARS[e]]) if e in ANSI_CHARS else e.encode()
    parts = ANSI_ESCAPE.split(body)
    raw = b"".join(p.encode() if k % 2 == 0 else one(p) for k, p in enumerate(parts))
    return raw.decode("utf-8", "replace")


def unquote_first(text):
    """The first word of an xtrace line, with bash's quoting ('x', \\x, $'x') removed."""
    out, i = [], 0
    while i < len(text) and text[i] not in " \n":
        if text[i] == "'":
            j = text.find("'", i + 1)
            j = len(text) if j < 0 else j  # a trace cut short
            out.append(text[i + 1:j])
            i = j + 1
        elif text.startswith("$'", i):
            m = re.match(r"\$'((?:[^'\\]|\\.)*)'?", text[i:], re.DOTALL)
            out.append(ansi_c(m.group(1)))
            i += m.end()
        elif text[i] == "\\" and i + 1 < len(text):
            out.append(text[i + 1])
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def parse_trace(text):
    names = []
    for record in re.split(r"\n(?=\x01+\x02)", text):
        m = re.match("\x01+\x02", record)
        if not m:
            continue
        body = record[m.end():]
        if body.startswith(SKIPPED_HEADS) or ASSIGNMENT.match(body):
            continue
        name = unquote_first(body)
        if name:
            names.append(name)
    return names


def traced_commands(src, timeout=5):
    """(names of the simple commands bash ran, whether it timed out, files it left)."""
    with tempfile.TemporaryDirectory() as scratch, tempfile.TemporaryDirectory() as tdir:
        trace = os.path.join(tdir, "trace")
        prefix = (f"exec {TRACE_FD}>{shlex.quote(trace)}; PS4=$'\\x01\\x02'; "
                  f"BASH_XTRACEFD={TRACE_FD}; set -x\n")
        p = subprocess.Popen(["/usr/bin/env", "-i", "PATH=/usr/bin:/bin", BASH, "-c",
                              prefix + src], cwd=scratch, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
        timed_out = False
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
        try:  # the whole session: a job left in the background goes too
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()
        left = sorted(os.listdir(scratch))
        with open(trace, encoding="utf-8", errors="replace") as f:
            return parse_trace(f.read()), timed_out, left


def first_words(answer):
    """The names of the commands the tool reported, and of the wrappers and shells they run
    through (`sudo`, `env`, `xargs`, `bash -c`, `eval`), which bash traces as commands too."""
    names = set()
    for c in answer.get("commands", []):
        if c.get("words"):
            names.add(c["words"][0])
        names.update(c.get("via", []))
    return names


def show(e, **parts):
    print(f"--- {e['file']}:{e['index']}")
    print("    src: " + e["src"].replace("\n", "\n         "))
    for key, value in parts.items():
        print(f"    {key}: " + str(value).rstrip().replace("\n", "\n         "))


def differential(tool_command, paths):
    entries = load_corpus(paths)
    answers = run_tool(tool_command, entries)
    with tempfile.TemporaryDirectory() as work, \
            concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        verdicts = list(pool.map(lambda e: bash_accepts(e["src"], work), entries))
    syntax_bad = 0
    print("== check 1: the tool accepts what bash -n accepts")
    for e, (accepted, err), a in zip(entries, verdicts, answers):
        if bool(a.get("ok")) != accepted:
            syntax_bad += 1
            show(e, bash=("accepts" if accepted else "rejects") + (": " + err if err else ""),
                 tool=("accepts" if a.get("ok") else "rejects: " + str(a.get("error"))))
    runnable = [(e, a) for e, (acc, _), a in zip(entries, verdicts, answers)
                if acc and e["harmless"]]
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        runs = list(pool.map(lambda ea: traced_commands(ea[0]["src"]), runnable))
    run_bad = 0
    print("== check 2: every command bash ran is one the tool reported")
    for (e, a), (names, timed_out, left) in zip(runnable, runs):
        if not a.get("ok"):
            continue  # counted by check 1
        reported = first_words(a)
        wildcard = any("$" in w or "`" in w for w in reported)
        missing = sorted({n for n in names if n not in reported}) if not wildcard else []
        if missing or timed_out or left:
            run_bad += 1
            show(e, ran=" ".join(names), reported=" ".join(sorted(reported)),
                 missing=" ".join(missing), timed_out=timed_out, files_left=" ".join(left))
    accepted = sum(1 for acc, _ in verdicts if acc)
    print(f"== {len(entries)} entries: bash accepts {accepted}, rejects {len(entries) - accepted}"
          f"; check 1 (syntax) mismatches: {syntax_bad}; check 2 (runs, {len(runnable)} run)"
          f" mismatches: {run_bad}")
    return syntax_bad, run_bad


def fake_tool():
    """Accepts everything; reports the first word of each piece split at ; & | ( ) newline."""
    for line in sys.stdin:
        src = json.loads(line)["src"]
        commands = []
        for piece in re.split(r"[;&|()\n]+", src):
            try:
                words = shlex.split(piece)
            except ValueError:
                words = piece.split()
            if words:
                commands.append({"words": words, "offset": 0})
        print(json.dumps({"ok": True, "commands": commands, "files": []}), flush=True)


def self_test():
    corpus = [{"src": "echo hi; true && printf x", "harmless": True},     # both checks pass
              {"src": "if true; then echo x", "harmless": False},         # bash rejects: check 1
              {"src": "[[ a b ]]", "harmless": False},                    # exit 0 with a message
              {"src": "echo a\n[[ ]]", "harmless": False},                # exit 0, silent
              {"src": "cat <<EOF\nbody", "harmless": False},              # accepted, warning
              {"src": "f() { echo in; }; f", "harmless": True}]           # echo missed: check 2
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "self.jsonl")
        with open(path, "w") as f:
            f.writelines(json.dumps(c) + "\n" for c in corpus)
        fake = [sys.executable, os.path.abspath(__file__), "--fake-accept-all"]
        syntax_bad, run_bad = differential(fake, [path])
        verdicts = [bash_accepts(c["src"], tmp)[0] for c in corpus]
    assert verdicts == [True, False, False, False, True, True], verdicts
    assert (syntax_bad, run_bad) == (3, 1), (syntax_bad, run_bad)
    names, timed_out, left = traced_commands("x=1; y=2 echo \"$x\" >/dev/null; '[' a = a ']'"
                                             "; [[ a ]]; for i in 1; do :; done; (( 1 ))"
                                             "; case a in a) f() { printf '%s\\n' \"a'b\"; }; f"
                                             ";; esac; echo \"$(printf 'x\\ny')\" >&2")
    assert names == ["echo", "[", ":", "f", "printf", "printf", "echo"], names
    trace = "\x01\x02x=1\n\x01\x02'[' a ']'\n\x01\x01\x02echo 'two\nlines' x\n" \
            "\x01\x02$'\\001b\\303\\251\\'' c\n\x01\x02for i in 1\n\x01\x02a\\ b\n" \
            "\x01\x02((  1  ))\n\x01\x02'cut"
    assert parse_trace(trace) == ["[", "echo", "\x01b\u00e9'", "a b", "cut"], parse_trace(trace)
    assert not timed_out and not left
    assert traced_commands("touch made")[2] == ["made"]
    print("self-test passed: both checks report mismatches")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    if sys.argv[1] == "--fake-accept-all":
        return fake_tool()
    if sys.argv[1] == "--self-test":
        return self_test()
    paths = sys.argv[2:] or sorted(glob.glob(os.path.join(HERE, "corpus", "*.jsonl")))
    syntax_bad, run_bad = differential([os.path.abspath(sys.argv[1])], paths)
    sys.exit(1 if syntax_bad or run_bad else 0)


if __name__ == "__main__":
    main()
