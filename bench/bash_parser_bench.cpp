// How long the command rules take to read and judge a line, against the splitter they replaced
// (bench/reference/split_v1), on the same lines in the same process:
//   - typical lines: the corpus's lines of 150 to 250 bytes, one at a time;
//   - a 100 KiB script: commands cut from the system's shell scripts, joined;
// each parsed alone (the parser and its analysis, splitCommandLine) and parsed and judged
// (Guard::decideCommand under the permissive preset: every command and redirection against
// the rules). Prints p50 and p90 in µs and the ratio of each to the reference.
//
//   cmake --build build --target bash_parser_bench && build/bash_parser_bench [ROUNDS]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/reference/split_v1/command_split.h"
#include "permissions/command_split.h"
#include "permissions/guard.h"
#include "permissions/presets.h"

namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::string> readCorpus(const std::string& path) {
  std::vector<std::string> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) out.push_back(nlohmann::json::parse(line).at("src"));
  return out;
}

struct Stats {
  double p50 = 0;
  double p90 = 0;
};

// Times each of `fns` on each input, `rounds` times over; the percentiles are over every single
// call. The functions take turns on each input, so that a slow spell of this shared machine
// falls on all of them alike.
std::vector<Stats> measure(const std::vector<std::string>& inputs, int rounds,
                           const std::vector<std::function<size_t(const std::string&)>>& fns) {
  std::vector<std::vector<double>> us(fns.size());
  size_t sink = 0;
  for (int r = 0; r < rounds; ++r) {
    for (const std::string& s : inputs) {
      for (size_t f = 0; f < fns.size(); ++f) {
        const auto start = Clock::now();
        sink += fns[f](s);
        us[f].push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
      }
    }
  }
  if (sink == 42) std::puts("");  // keeps the work from being optimised away
  std::vector<Stats> out;
  for (std::vector<double>& v : us) {
    std::sort(v.begin(), v.end());
    out.push_back({v[v.size() / 2], v[v.size() * 9 / 10]});
  }
  return out;
}

void row(const char* what, const Stats& s, const Stats& ref, double target) {
  std::printf(
      "  %-34s p50 %9.1f  p90 %9.1f   ratio to the splitter %5.2f  (p50 target < %.0f: %s)\n", what,
      s.p50, s.p90, s.p50 / ref.p50, target, s.p50 < target ? "met" : "MISSED");
}

}  // namespace

int main(int argc, char** argv) {
  using namespace byd;
  // `profile`: only the parser on the script, for a profiler to watch.
  const bool profile = argc > 1 && std::string_view(argv[1]) == "profile";
  const int rounds = argc > 1 && !profile ? std::atoi(argv[1]) : 200;
  const std::string corpus = BYD_SOURCE_DIR "/tests/bash/corpus/";
  std::vector<std::string> typical;
  for (const char* file : {"agent_idioms.jsonl", "generated.jsonl", "system_scripts.jsonl"}) {
    for (const std::string& s : readCorpus(corpus + file)) {
      if (s.size() >= 150 && s.size() <= 250) typical.push_back(s);
    }
  }
  std::string script;
  for (const std::string& s : readCorpus(corpus + "system_scripts.jsonl")) {
    if (script.size() + s.size() + 1 > 100 * 1024) break;
    script += s + "\n";
  }
  size_t bytes = 0;
  for (const std::string& s : typical) bytes += s.size();

  auto rules = permissions::Ruleset::fromJson(*permissions::presetJson("permissive"));
  if (!rules.ok()) {
    std::fprintf(stderr, "%s\n", rules.status().message().c_str());
    return 1;
  }
  const permissions::Guard guard(std::move(*rules), permissions::AskFallback::kDeny);
  const auto v1 = [](const std::string& s) {
    return bench_v1::splitCommandLine(s).commands.size();
  };
  const auto parse = [](const std::string& s) {
    return permissions::splitCommandLine(s).commands.size();
  };
  const auto tree = [](const std::string& s) {
    return permissions::bash::parseBash(s).script.children.size();
  };
  const auto judge = [&](const std::string& s) {
    return static_cast<size_t>(guard.decideCommand(s, {}).action);
  };
  guard.decideCommand("warm up the rules' automata: ls > f < g", {});

  if (profile) {
    size_t n = 0;
    for (int i = 0; i < 500; ++i) n += parse(script);
    return n == 42;
  }
  const auto report = [&](const std::vector<std::string>& inputs, int n, double target) {
    const std::vector<Stats> st = measure(inputs, n, {v1, tree, parse, judge});
    std::printf("  %-34s p50 %9.1f  p90 %9.1f\n", "the splitter (reference)", st[0].p50, st[0].p90);
    row("the parser's syntax tree alone", st[1], st[0], target);
    row("the parser (tree and analysis)", st[2], st[0], target);
    row("the parser and the rules", st[3], st[0], target);
  };
  std::printf("%zu typical lines (150-250 bytes, mean %zu), %d rounds; times in µs\n",
              typical.size(), bytes / typical.size(), rounds);
  report(typical, rounds, 20);
  const int script_rounds = std::max(20, rounds / 4);
  std::printf("a script of %zu KiB (%zu lines), %d rounds; times in µs\n", script.size() / 1024,
              static_cast<size_t>(std::count(script.begin(), script.end(), '\n')), script_rounds);
  report({script}, script_rounds, 2000);
  return 0;
}
