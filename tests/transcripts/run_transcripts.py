#!/usr/bin/python3
"""Runs transcript tests against the real binary.

A transcript is a text file of directives, one per line:
  # comment
  %args FLAG...        command-line flags for the server ({{tmp}} is a fresh temp directory)
  %file PATH CONTENT   creates {{tmp}}/PATH with CONTENT (JSON string syntax) before starting
  > JSON               a message sent to the server
  < JSON               a message the server must send

All '>' messages are written, stdin is closed, and the server must exit 0 having written only
JSON lines on stdout. Each '<' message is matched against what the server sent: responses by
id (answers may arrive in any order), id-less messages in order. Matching is structural: every
key of an expected object must be present and match, arrays must match element by element,
and the string "{{any}}" matches any value. The server must send nothing that is not expected.
"""

import json
import os
import shlex
import subprocess
import sys
import tempfile

ANY = "{{any}}"


def matches(expected, actual):
    if expected == ANY:
        return True
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            k in actual and matches(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, list):
        return (isinstance(actual, list) and len(expected) == len(actual)
                and all(matches(e, a) for e, a in zip(expected, actual)))
    return expected == actual and type(expected) == type(actual)


def parse(path, tmp):
    args, files, sends, expects = [], [], [], []
    with open(path, encoding="utf-8") as f:
        for number, raw in enumerate(f, 1):
            line = raw.rstrip("\n")
            where = f"{path}:{number}"
            if not line.strip() or line.startswith("#"):
                continue
            if line.startswith("%args "):
                args += [a.replace("{{tmp}}", tmp) for a in shlex.split(line[6:])]
            elif line.startswith("%file "):
                name, content = line[6:].split(" ", 1)
                files.append((name, json.loads(content)))
            elif line.startswith("> "):
                sends.append(line[2:].replace("{{tmp}}", tmp))
            elif line.startswith("< "):
                try:
                    expects.append((where, json.loads(line[2:].replace("{{tmp}}", tmp))))
                except json.JSONDecodeError as e:
                    raise SystemExit(f"{where}: bad expected JSON: {e}")
            else:
                raise SystemExit(f"{where}: unknown directive: {line[:40]}")
    return args, files, sends, expects


def key_of(message):
    if isinstance(message, dict) and message.get("id") is not None:
        return json.dumps(message["id"])
    return None


def run_one(binary, path):
    with tempfile.TemporaryDirectory(prefix="byd-transcript-") as tmp:
        args, files, sends, expects = parse(path, tmp)
        for name, content in files:
            full = os.path.join(tmp, name)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w", encoding="utf-8") as f:
                f.write(content)
        stdin = "".join(s + "\n" for s in sends)
        proc = subprocess.run([binary, *args], input=stdin.encode(), capture_output=True,
                              timeout=60)
        errors = []
        if proc.returncode != 0:
            errors.append(f"exit code {proc.returncode}; stderr: {proc.stderr.decode()[-2000:]}")
        actual = []
        for line in proc.stdout.decode("utf-8", "replace").splitlines():
            try:
                actual.append(json.loads(line))
            except json.JSONDecodeError:
                errors.append(f"stdout line is not JSON: {line[:200]}")
        unmatched = list(actual)
        for where, exp in expects:
            key = key_of(exp)
            found = None
            for i, act in enumerate(unmatched):
                if key_of(act) == key and (key is not None or matches(exp, act)):
                    found = i
                    break
            if found is None:
                errors.append(f"{where}: no message like {json.dumps(exp)[:300]}")
                continue
            act = unmatched.pop(found)
            if not matches(exp, act):
                errors.append(f"{where}: expected {json.dumps(exp)[:600]}\n"
                              f"      got {json.dumps(act)[:600]}")
        for act in unmatched:
            errors.append(f"{path}: unexpected message {json.dumps(act)[:300]}")
        return errors


def main():
    if len(sys.argv) != 3:
        raise SystemExit("usage: run_transcripts.py BINARY DIR")
    binary, folder = sys.argv[1], sys.argv[2]
    names = sorted(n for n in os.listdir(folder) if n.endswith(".transcript"))
    if not names:
        raise SystemExit(f"no .transcript files in {folder}")
    failed = 0
    for name in names:
        errors = run_one(binary, os.path.join(folder, name))
        print(("FAIL " if errors else "ok   ") + name)
        for e in errors:
            print("  " + e)
        failed += bool(errors)
    print(f"{len(names) - failed}/{len(names)} transcripts passed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
