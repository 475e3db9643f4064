#pragma once
// The command splitter as it was before the bash parser (permissions/bash_parser.cpp), kept
// only as the reference that bench/bash_parser_bench.cpp measures the parser against.
// Reads bash words the way bash reads them before running a command: quotes and escapes removed,
// parameter expansions kept literally, and the text of each `$(...)` or backtick substitution
// handed to the subclass, which parses the commands inside. Whatever cannot be read with
// certainty is recorded in a SplitStatus; a lexer and its status belong to one thread, and
// lexers of different lines share nothing.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace byd::bench_v1 {

// Stands in Word::bare for a character that was quoted or came from an expansion.
inline constexpr char kNotBare = '\x01';

// A lexed word. `text` is after quote removal; `bare` has the same length and repeats each
// character that was unquoted literal text, kNotBare otherwise, because bash recognises
// keywords, assignments, globs and fd numbers only in unquoted text.
struct Word {
  std::string text;
  std::string bare;
  bool expands = false;      // its value is not known statically ($x, ${x}, substitutions)
  bool substitutes = false;  // contains $(...) or backticks

  void add(char c, bool literal) {
    text += c;
    bare += literal ? c : kNotBare;
  }
  void addExpansion(std::string_view s) {
    text += s;
    bare.append(s.size(), kNotBare);
    expands = true;
  }
  bool isBare(std::string_view s) const { return text == s && bare == s; }
};
using Words = std::vector<Word>;

// Whether a line can still be split with certainty. One is shared by every lexer and parser of
// a line, including those for substitutions and `sh -c` scripts.
struct SplitStatus {
  bool certain = true;
  std::string reason;    // the first reason the line is uncertain
  bool aborted = false;  // nesting too deep: stop reading, the line is already uncertain

  void fail(std::string_view why);
  // Whether to read a construct nested `depth` levels deep; bounded so that hostile input
  // (10k nested parens) cannot exhaust the stack.
  bool enter(int depth);
};

bool isMeta(char c);  // ends an unquoted word: blank, newline or one of ;&|()<>
bool allDigits(std::string_view s);
bool isAssignment(const Word& w);  // NAME=value, NAME+=value, a[i]=value
bool looksLikeFd(const Word& w);   // `2` of `2>file`, `{fd}` of `{fd}>file`
bool hasGlob(std::string_view bare);
bool hasBraceExpansion(std::string_view bare);

class ShellLexer {
 public:
  ShellLexer(std::string_view input, SplitStatus& status) : in_(input), status_(status) {}
  virtual ~ShellLexer() = default;
  ShellLexer(const ShellLexer&) = delete;
  ShellLexer& operator=(const ShellLexer&) = delete;

  // Reads the word at the cursor, up to the next unquoted metacharacter.
  Word lexWord(int depth);

 protected:
  // Parses the commands of a `$(...)`, from just after `$(` through the closing `)`.
  virtual void parseSubstitution(int depth) = 0;
  // Parses the commands of a backtick substitution, whose escapes are already removed.
  virtual void parseScript(std::string_view script, int depth) = 0;

  bool atEnd() const { return pos_ >= in_.size() || status_.aborted; }
  char peek(size_t ahead = 0) const { return pos_ + ahead < in_.size() ? in_[pos_ + ahead] : '\0'; }
  void skipBlanks();  // also line continuations
  void skipComment();
  // At `;`, `|` or `&`, but not at the redirection `&>`.
  bool atSeparator() const {
    const char c = peek();
    return c == ';' || c == '|' || (c == '&' && peek(1) != '>');
  }
  // Reads `;`, `;;`, `|`, `||`, `|&`, `&` or `&&`; the cursor is where atSeparator() holds.
  std::string_view readSeparator();
  // Reads `>>`, `<(`, `&>` and the like; the cursor is at `<`, `>` or `&>`.
  std::string_view readRedirectionOperator();

  // The parser moves the cursor itself over the operators it reads.
  std::string_view in_;
  size_t pos_ = 0;

 private:
  void lexBackslash(Word& w);
  void lexSingleQuoted(Word& w);
  void lexDoubleQuoted(Word& w, int depth);
  void lexDollar(Word& w, int depth, bool in_double);
  void lexSubstitution(Word& w, int depth);
  void lexParameter(Word& w, int depth);
  void lexArithmeticBracket(int depth);
  void lexAnsiC(Word& w);
  void lexBacktick(Word& w, int depth, bool in_double);

  SplitStatus& status_;
};

}  // namespace byd::bench_v1
