#pragma once
// The command splitter as it was before the bash parser (permissions/bash_parser.cpp), kept
// only as the reference that bench/bash_parser_bench.cpp measures the parser against.
// Splits a shell command line into the simple commands bash would run, so that permission rules
// can judge each program on its own. The splitter is conservative: whenever bash could run
// something it cannot see (eval, heredocs, output redirection into files, variables in command
// position, unbalanced quotes, ...) it reports certain=false, and such a line must never be
// auto-allowed. splitCommandLine is a pure function of its input and safe to call from any thread.

#include <string>
#include <string_view>
#include <vector>

namespace byd::bench_v1 {

// What a `$(...)` or backtick substitution leaves in the word that contained it; the commands
// inside are reported separately. Parameter expansions ($x, ${x:-y}) are kept literally.
inline constexpr std::string_view kSubstitutionPlaceholder = "$(...)";

struct SimpleCommand {
  // After quote removal, dropping leading assignments and redirections, and unwrapping wrappers
  // (env, sudo, nice, ...), e.g. {"git", "status", "--short"}.
  std::vector<std::string> words;
  // The NAME=value words before it (in the line, or given to `env`), after quote removal. A
  // statement of assignments alone is reported, with no words, only when it sets a variable
  // that changes what runs (env_policy.h).
  std::vector<std::string> assignments;

  // The words joined by single spaces: what permission rules are matched against.
  std::string text() const;
  // The assignments and the words, joined by single spaces: what rules see of a command that
  // sets a variable that changes what runs.
  std::string fullText() const;
};

struct SplitResult {
  // Every simple command found. A substitution's commands come before the command whose word
  // contains them, because bash runs them first.
  std::vector<SimpleCommand> commands;
  // False when the line cannot be split with certainty; `commands` then still lists what was
  // found, so that deny rules can match, but the line must not be auto-allowed.
  bool certain = true;
  // The first reason the line is uncertain, e.g. "heredoc" or "variable in command position".
  std::string reason;
};

SplitResult splitCommandLine(std::string_view line);

}  // namespace byd::bench_v1
