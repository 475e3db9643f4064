#pragma once
// GlobMatcher compiles a Claude Code / ripgrep style glob into one anchored RE2, so matching is
// linear in the path length whatever the pattern; paths are byte strings and need not be UTF-8.
// A compiled matcher is immutable: copies share the compiled state, and any number of threads may
// call its const methods concurrently.

#include <memory>
#include <string>
#include <string_view>

#include <re2/re2.h>

#include "common/result.h"

namespace byd {

// Syntax: `*` any run of bytes except '/'; `?` one character except '/' (a UTF-8 sequence, or one
// byte that cannot start one); `**` as a whole component matches zero or more components, and
// like `*` elsewhere; `[abc]`, `[a-z]`, `[!a]`, `[^a]` (never match '/'); `{a,b}` alternation,
// nestable, may hold wildcards and '/'; `\` escapes the next character. Leading "./" is dropped.
// ignore_case folds ASCII letters only: folding non-ASCII bytes one by one would corrupt UTF-8.
class GlobMatcher {
 public:
  // Errors: InvalidArgument naming the problem and its 0-based byte position.
  static Result<GlobMatcher> compile(std::string_view pattern, bool ignore_case = false);

  // `path` is '/'-separated and relative, without a leading "./".
  bool matches(std::string_view path) const;
  // The leading directory components free of wildcards ("src/lib" for "src/lib/**/*.c", "" for
  // "**/*.py"), so a walker can start below the root. Never the last component (that names the
  // entry itself), never "." or "..", and always "" with ignore_case (the disk may differ in case).
  const std::string& literalPrefix() const;
  // False only when no path strictly below directory `dir` (relative, e.g. "a/b") can match, so a
  // walker may prune it. Conservative: true whenever unsure.
  bool couldMatchBelow(std::string_view dir) const;
  const std::string& pattern() const;
  // The RE2 pattern (Latin-1, anchored by FullMatch) that matches() runs, for combining several
  // globs into one RE2::Set built with regexOptions().
  const std::string& regex() const;
  static RE2::Options regexOptions();

 private:
  struct Compiled;
  explicit GlobMatcher(std::shared_ptr<const Compiled> compiled);

  std::shared_ptr<const Compiled> compiled_;
};

}  // namespace byd
