#pragma once
// A parser for the bash language as bash 5.2 reads a script: the POSIX shell grammar and bash's
// extensions (`[[ ]]`, `(( ))`, arrays, `function`, `select`, `coproc`, here-strings, process
// substitution, `{fd}>` redirections, `;&` and `;;&`). It builds a syntax tree with positions,
// which the permission rules walk to judge every command a line runs and every file it
// redirects to (command_split.h).
//
// Written here because no packaged C or C++ library parses bash (the parsers in the field are
// mvdan/sh in Go and tree-sitter-bash, a grammar for editors); bash itself is the reference:
// tests/bash/differential.py checks that this parser accepts a line exactly when `bash -n`
// does, and that the commands it reports are those bash runs, over the corpus in tests/bash/.
//
// As `bash -n` does, it parses without expanding: aliases are not expanded (a non-interactive
// bash does not), and extended glob patterns are read only inside `[[ ]]` (`extglob` is off in
// a script until it is set). Parsing is linear in the input; nesting deeper than kMaxDepth is
// refused rather than recursed into. parseBash is a pure function, safe from any thread.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace byd::permissions::bash {

inline constexpr int kMaxDepth = 100;
// A line with more words, commands and redirections than this is refused: its tree would take
// memory out of proportion to what any command line needs (a 100 KiB script holds ~20,000).
inline constexpr size_t kMaxElements = 250000;

// Stands in Word::bare for a character that was quoted or came from an expansion.
inline constexpr char kNotBare = '\x01';
// What a command or process substitution leaves in Word::text; its commands are in `nested`.
inline constexpr std::string_view kSubstitution = "$(...)";

struct Node;

// A word as the parser reads it: quotes removed, expansions kept as they are written ($x,
// ${x:-y}, $((1+2))), substitutions replaced by kSubstitution.
struct Word {
  uint32_t begin = 0;  // byte offsets in the parsed text
  uint32_t end = 0;
  std::string text;
  // Whether every character of `text` was unquoted literal text: bash recognises keywords,
  // assignments, globs and brace expansions only there.
  bool literal = true;
  // When it is not: as long as `text`, each character that was unquoted literal text, and
  // kNotBare for the others (bare() reads it).
  std::string mask;
  bool expands = false;      // its value is not known before it runs ($x, ${x}, substitutions)
  bool substitutes = false;  // it runs commands: $( ), backticks, <( ), >( )
  bool quoted = false;       // some part of it was quoted (what makes a heredoc literal)
  // It runs code held in a variable's value: `${x@P}` expands a prompt string, which runs the
  // command substitutions in it.
  bool evaluates = false;
  // The scripts that run while the word expands (kList nodes), in order.
  std::vector<Node> nested;

  // `text` with kNotBare for every character that was not unquoted literal text.
  std::string_view bare() const { return literal ? std::string_view(text) : mask; }
  bool isBare(std::string_view s) const { return literal && text == s; }
};

// A heredoc's body, read from the lines after the one that holds its operator.
struct Heredoc {
  uint32_t begin = 0;  // where the body starts
  std::string body;    // as written
  // When the delimiter is unquoted, bash expands the body as it would in double quotes: the
  // body read as such a word, with the scripts of its substitutions in `word.nested`.
  bool expands = false;
  Word word;
};

struct Redirect {
  uint32_t begin = 0;
  std::string fd;  // "2", "{fd}", or empty for the operator's default
  // "<", ">", ">>", ">|", "<>", "<&", ">&", "&>", "&>>", "<<", "<<-" or "<<<".
  std::string op;
  Word target;                       // for a heredoc, its delimiter
  std::shared_ptr<Heredoc> heredoc;  // for << and <<-
};

enum class Kind : uint8_t {
  kList,      // children: pipelines, each with the operator after it in `op` (a pipeline of one
              // command, without `!` or `time`, is that command)
  kPipeline,  // children: commands; `negated` for `!`, `timed` for `time`
  kSimple,    // words, assignments, redirects
  kSubshell,  // ( list ): children[0]
  kGroup,     // { list; }: children[0]
  kIf,        // children: condition, body, [condition, body]..., [else body]
  kWhile,     // children: condition, body
  kUntil,
  kFor,       // name; words: the items (none: "$@"); children[0]: body
  kArithFor,  // words: the three expressions; children[0]: body
  kSelect,    // as kFor
  kCase,      // words[0]: the subject; children: kCaseItem
  kCaseItem,  // words: the patterns; children: [body]; op: ";;", ";&", ";;&" or empty
  kFunction,  // name; children[0]: the body (a compound command)
  kArith,     // (( expr )): words[0]
  kCond,      // [[ expr ]]: words: the operands and operators
  kCoproc,    // name (may be empty); children[0]: the command
};

struct Node {
  Kind kind = Kind::kList;
  uint32_t begin = 0;
  uint32_t end = 0;
  std::vector<Node> children;
  std::vector<Word> words;
  std::vector<Word> assignments;  // kSimple: NAME=value words before the command
  std::vector<Redirect> redirects;
  std::string name;
  // In a list: ";", "&", "&&", "||", "\n" or empty (the last); in a case item: ";;", ";&",
  // ";;&" or empty. Always a string literal.
  std::string_view op;
  bool negated = false;
  bool timed = false;
};

struct SyntaxError {
  uint32_t offset = 0;
  std::string message;  // "unexpected 'fi'", "'then' expected", ...
};

struct ParseResult {
  Node script;  // a kList
  std::optional<SyntaxError> error;
  // Errors in text that bash parses only when it runs it (a backtick substitution, a heredoc
  // body's substitutions): `bash -n` accepts the line, but what that text runs is unknown.
  std::vector<SyntaxError> deferred;
  bool functions = false;  // whether it defines a function
};

ParseResult parseBash(std::string_view text);

// "line 2, column 5" for an offset of `text`.
std::string describePosition(std::string_view text, uint32_t offset);

// Helpers on words, shared with the analysis.
bool isAssignmentWord(const Word& w);           // NAME=value, NAME+=value, NAME[i]=value (unquoted)
bool hasGlob(std::string_view bare);            // * ? or [ unquoted
bool hasBraceExpansion(std::string_view bare);  // {a,b} or {1..3}
bool isName(std::string_view s);                // a shell variable name

}  // namespace byd::permissions::bash
