#!/usr/bin/env bash
# Fuzzes the bash parser with libFuzzer under AddressSanitizer and UBSan, for a bounded time,
# seeded from the corpus in tests/bash/corpus/. First, inputs of the worst shapes at the size of
# the largest message the server accepts (--max-message-bytes, 16 MiB) must each parse within a
# time and memory bound that only a linear parser meets: deep nesting, 10,000 heredocs, a 1 MiB
# word, unclosed quotes and arithmetic, many commands and redirections.
#
#   tests/bash/fuzz/run.sh WORK_DIR [SECONDS]
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
work=${1:?usage: run.sh WORK_DIR [SECONDS]}
seconds=${2:-${BYD_FUZZ_SECONDS:-60}}
mkdir -p "$work"
rm -f "$work"/crash-* "$work"/timeout-* "$work"/oom-* "$work"/leak-*  # a previous run's findings
bin=$work/bash_parser_fuzzer

sources=("$root/permissions/bash_parser.cpp" "$root/permissions/command_split.cpp"
         "$root/permissions/env_policy.cpp" "$root/tests/bash/fuzz/bash_parser_fuzzer.cpp")
# Built again only when a source changed.
stamp=$(cat "${sources[@]}" "$root/permissions/bash_syntax.h" "$root/permissions/command_split.h" \
        "$root/permissions/env_policy.h" | sha256sum | cut -c1-16)
if [[ ! -x $bin || $(cat "$bin.stamp" 2>/dev/null) != "$stamp" ]]; then
  echo "building the fuzzer (clang++, libFuzzer, ASan, UBSan)"
  clang++ -std=c++20 -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined \
    -fno-sanitize-recover=all -Wall -Wextra -Werror -I"$root" "${sources[@]}" -o "$bin"
  echo "$stamp" > "$bin.stamp"
fi

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

# The worst shapes, 16 MiB each (deep nesting stops at the parser's depth limit).
big=$work/big
rm -rf "$big" && mkdir -p "$big"
/usr/bin/python3 - "$big" <<'PY'
import sys, os
out = sys.argv[1]
MiB = 1 << 20
size = 16 * MiB
def put(name, unit, prefix="", suffix=""):
    body = unit * ((size - len(prefix) - len(suffix)) // len(unit)) if unit else ""
    with open(os.path.join(out, name), "w") as f:
        f.write(prefix + body + suffix)
put("word", "a", "echo ")
put("quoted_word", "a", "echo '", "'")
put("unclosed_quote", "a", "echo '")
put("unclosed_double", "a$x", 'echo "')
put("nested_parens", "( ")
put("nested_subst", "$(")
put("nested_arith", "$((")
put("arith_parens", "((")
put("nested_braces", "${")
put("backticks", "`a` ")
put("heredocs_10000", "", "cat " + "<<E " * 10000 + "\n", "E\n" * 10000 + "x\n" * ((size - 60000) // 2))
put("heredoc_bodies", "cat <<E\n$(a)\nE\n")
put("unclosed_heredocs", "cat <<E$x ")
put("commands", "a;")
put("unknown_commands", "$x;")
put("redirections", "a>f ")
put("pipes", "a|")
put("cond", "[[ a && ")
put("case", "case x in a) ;; ")
put("for_loops", "for i in 1; do ")
put("functions", "f() { ")
put("continuations", "a \\\n")
put("comments", "# x\n")
put("sh_c", "sh -c 'sh -c \"a\"'; ")
PY
echo "the worst shapes, 16 MiB each"
"$bin" -timeout=60 -rss_limit_mb=4096 -runs=1 "$big"/* 2>&1 | grep -E "^(Running|Executed|==|SUMMARY)" || true
for f in "$big"/*; do
  start=$(date +%s%N)
  "$bin" -timeout=60 -rss_limit_mb=4096 "$f" >"$work/one.log" 2>&1 || { cat "$work/one.log"; echo "FAILED on $(basename "$f")"; exit 1; }
  printf '  %-20s %5d ms\n' "$(basename "$f")" $((($(date +%s%N) - start) / 1000000))
done

# Seeds: every entry of the corpus, one file each.
seeds=$work/seeds
rm -rf "$seeds" && mkdir -p "$seeds"
/usr/bin/python3 - "$root/tests/bash/corpus" "$seeds" <<'PY'
import json, sys, os, glob, hashlib
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.jsonl"))):
    for line in open(path, encoding="utf-8"):
        src = json.loads(line)["src"].encode()
        with open(os.path.join(sys.argv[2], hashlib.sha1(src).hexdigest()), "wb") as f:
            f.write(src)
PY
mkdir -p "$work/found"
echo "fuzzing for ${seconds}s from $(ls "$seeds" | wc -l) seeds"
"$bin" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$work/" "$work/found" "$seeds" 2>&1 | \
  grep -E "^(#[0-9]+ *DONE|stat::number_of_executed_units|stat::peak_rss_mb|==|SUMMARY|artifact)" || true
# libFuzzer leaves crash-*, timeout-*, oom-* or leak-* files for what failed.
if compgen -G "$work/crash-*" >/dev/null || compgen -G "$work/timeout-*" >/dev/null ||
   compgen -G "$work/oom-*" >/dev/null || compgen -G "$work/leak-*" >/dev/null; then
  echo "the fuzzer found failing inputs:" && ls "$work"/crash-* "$work"/timeout-* "$work"/oom-* "$work"/leak-* 2>/dev/null
  exit 1
fi
echo "fuzzing passed"
