#pragma once
// What a shell command line does, as the permission rules judge it: every simple command it
// runs, anywhere in the line (compound commands, function bodies, substitutions, heredoc bodies
// that expand, and the literal scripts of `eval`, `trap`, `alias`, `sh -c` and `find -exec`),
// and every file it redirects from or to. The line is parsed with bash's grammar
// (bash_syntax.h); a line bash would refuse is reported as a syntax error with its position.
//
// What cannot be known before the line runs is named, not guessed: a command whose name is not
// a literal word (`$CMD x`, `"$(which x)" y`, `eval "$s"`) carries the reason, and such a
// command must never be allowed without asking. Arguments with expansions are reported with
// their literal text. splitCommandLine is a pure function of its input, safe from any thread.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "permissions/bash_syntax.h"

namespace byd::permissions {

// What a command or process substitution leaves in the word that contained it; the commands
// inside are reported separately. Parameter expansions ($x, ${x:-y}) are kept literally.
inline constexpr std::string_view kSubstitutionPlaceholder = bash::kSubstitution;

struct SimpleCommand {
  // After quote removal, dropping leading assignments and redirections, and unwrapping wrappers
  // (env, sudo, nice, ...), e.g. {"git", "status", "--short"}.
  std::vector<std::string> words;
  // The NAME=value words before it (in the line, or given to `env`), after quote removal. A
  // statement of assignments alone is reported, with no words, only when it sets a variable
  // that changes what runs (env_policy.h).
  std::vector<std::string> assignments;
  uint32_t offset = 0;  // where it starts in the line
  // Why what it runs is known only when the line runs ("its name '$CMD' is an expansion");
  // empty when its name is a literal word.
  std::string unknown;
  // The wrappers and shells it runs through, outermost first: {"sudo", "env"} for
  // `sudo env make`, {"bash"} for `make` in `bash -c make`.
  std::vector<std::string> via;

  // The words joined by single spaces: what permission rules are matched against.
  std::string text() const;
  // The assignments and the words, joined by single spaces: what rules see of a command that
  // sets a variable that changes what runs.
  std::string fullText() const;
};

// A file a redirection reads or writes: `< f` reads, `> f`, `>> f`, `>| f`, `&> f` and `<> f`
// write. Heredocs, here-strings, descriptors (`2>&1`), process substitutions and the terminal
// devices (/dev/null, /dev/stdout, /dev/stderr, /dev/stdin, /dev/fd/N, /dev/tty) are not files.
struct FileAccess {
  bool write = false;
  std::string path;  // the target after quote removal, expansions literal
  std::string op;    // the redirection operator
  uint32_t offset = 0;
  bool expands = false;  // the path holds an expansion, known only when the line runs
};

struct SplitResult {
  // Every simple command found. A substitution's commands come before the command whose word
  // contains them, because bash runs them first.
  std::vector<SimpleCommand> commands;
  std::vector<FileAccess> files;
  // A line bash would refuse: nothing of it runs.
  std::optional<bash::SyntaxError> error;
  // A function that runs copies of itself in the background or in a pipeline (`:(){ :|:& };:`):
  // what it names, or empty.
  std::string fork_bomb;
  // False when some of what the line runs cannot be seen (a backtick substitution or a heredoc
  // that does not parse until it runs, scripts nested too deeply); `commands` still lists what
  // was found, so that deny rules can match, but the line must not be auto-allowed.
  bool certain = true;
  // The first reason the line is uncertain.
  std::string reason;
};

SplitResult splitCommandLine(std::string_view line);

}  // namespace byd::permissions
