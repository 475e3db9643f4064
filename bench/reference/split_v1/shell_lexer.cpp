// The command splitter as it was before the bash parser (permissions/bash_parser.cpp), kept
// only as the reference that bench/bash_parser_bench.cpp measures the parser against.
#include "bench/reference/split_v1/shell_lexer.h"

#include <algorithm>
#include <optional>

#include "bench/reference/split_v1/command_split.h"

namespace byd::bench_v1 {
namespace {

// Deeper than any real command line needs.
constexpr int kMaxDepth = 16;
constexpr size_t kNpos = std::string_view::npos;

bool isBlank(char c) { return c == ' ' || c == '\t'; }
bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool isNameChar(char c) { return isNameStart(c) || isDigit(c); }

// \x, \u, octal and \c are missing: rare, and decoding them is easy to get wrong.
std::optional<char> decodeAnsiEscape(char e) {
  constexpr std::string_view kEscapes = "ntrabeEfv\\'\"?";
  constexpr std::string_view kDecoded = "\n\t\r\a\b\x1b\x1b\f\v\\'\"?";
  const size_t i = kEscapes.find(e);
  return i == kNpos ? std::nullopt : std::optional<char>(kDecoded[i]);
}

}  // namespace

void SplitStatus::fail(std::string_view why) {
  if (!certain) return;
  certain = false;
  reason = why;
}

bool SplitStatus::enter(int depth) {
  if (depth <= kMaxDepth) return !aborted;
  fail("too deeply nested");
  aborted = true;
  return false;
}

bool isMeta(char c) { return isBlank(c) || std::string_view("\n;&|()<>").find(c) != kNpos; }

bool allDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), isDigit);
}

bool isAssignment(const Word& w) {
  const std::string& b = w.bare;
  if (b.empty() || !isNameStart(b[0])) return false;
  size_t i = 1;
  while (i < b.size() && isNameChar(b[i])) ++i;
  if (i < b.size() && b[i] == '[') {  // array element: a[i]=x
    i = b.find(']', i);
    if (i == kNpos) return false;
    ++i;
  }
  if (i < b.size() && b[i] == '+') ++i;
  return i < b.size() && b[i] == '=';
}

// `2>file` and `{fd}>file` name the descriptor in front of the operator.
bool looksLikeFd(const Word& w) {
  if (w.text != w.bare) return false;
  if (allDigits(w.text)) return true;
  return w.text.size() > 2 && w.text.front() == '{' && w.text.back() == '}';
}

bool hasGlob(std::string_view bare) {
  if (bare.find_first_of("*?") != kNpos) return true;
  const size_t open = bare.find('[');
  return open != kNpos && bare.find(']', open + 1) != kNpos;
}

// {a,b} and {1..3} expand into several words, so the text would not be what runs.
bool hasBraceExpansion(std::string_view bare) {
  const size_t open = bare.find('{');
  if (open == kNpos) return false;
  const size_t close = bare.find('}', open);
  if (close == kNpos) return false;
  const std::string_view inside = bare.substr(open, close - open);
  return inside.find(',') != kNpos || inside.find("..") != kNpos;
}

void ShellLexer::skipBlanks() {
  while (!atEnd()) {
    if (isBlank(peek())) {
      ++pos_;
    } else if (peek() == '\\' && peek(1) == '\n') {
      pos_ += 2;
    } else {
      break;
    }
  }
}

void ShellLexer::skipComment() {
  while (!atEnd() && peek() != '\n') ++pos_;
}

std::string_view ShellLexer::readSeparator() {
  const char c = peek();
  const char next = peek(1);
  const bool doubled = next == c || (c == '|' && next == '&');
  const std::string_view op = in_.substr(pos_, doubled ? 2 : 1);
  pos_ += op.size();
  return op;
}

std::string_view ShellLexer::readRedirectionOperator() {
  constexpr std::string_view kOperators[] = {"&>>", "<<<", "<<-", "&>", "<<", "<>", "<&",
                                             "<(",  ">>",  ">|",  ">&", ">(", "<",  ">"};
  for (std::string_view op : kOperators) {
    if (in_.substr(pos_).starts_with(op)) {
      pos_ += op.size();
      return op;
    }
  }
  return {};  // unreachable: the caller saw `<`, `>` or `&>`
}

Word ShellLexer::lexWord(int depth) {
  Word w;
  while (!atEnd() && !isMeta(peek())) {
    const char c = peek();
    if (c == '\\') {
      lexBackslash(w);
    } else if (c == '\'') {
      lexSingleQuoted(w);
    } else if (c == '"') {
      lexDoubleQuoted(w, depth);
    } else if (c == '`') {
      lexBacktick(w, depth, false);
    } else if (c == '$') {
      lexDollar(w, depth, false);
    } else {
      w.add(c, true);
      ++pos_;
    }
  }
  return w;
}

void ShellLexer::lexBackslash(Word& w) {
  if (pos_ + 1 >= in_.size()) {
    status_.fail("line continuation at end");
    ++pos_;
    return;
  }
  if (peek(1) != '\n') w.add(peek(1), false);
  pos_ += 2;
}

void ShellLexer::lexSingleQuoted(Word& w) {
  size_t end = in_.find('\'', pos_ + 1);
  if (end == kNpos) {
    status_.fail("unbalanced quote");
    end = in_.size();
  }
  for (size_t i = pos_ + 1; i < end; ++i) w.add(in_[i], false);
  pos_ = std::min(end + 1, in_.size());
}

void ShellLexer::lexDoubleQuoted(Word& w, int depth) {
  ++pos_;
  while (!atEnd()) {
    const char c = peek();
    if (c == '"') {
      ++pos_;
      return;
    }
    if (c == '\\' && pos_ + 1 < in_.size() && std::string_view("$`\"\\\n").find(peek(1)) != kNpos) {
      if (peek(1) != '\n') w.add(peek(1), false);
      pos_ += 2;
    } else if (c == '$') {
      lexDollar(w, depth, true);
    } else if (c == '`') {
      lexBacktick(w, depth, true);
    } else {
      w.add(c, false);
      ++pos_;
    }
  }
  status_.fail("unbalanced quote");
}

void ShellLexer::lexDollar(Word& w, int depth, bool in_double) {
  const char next = peek(1);
  if (next == '(') {
    lexSubstitution(w, depth);
  } else if (next == '[') {
    lexArithmeticBracket(depth + 1);
    w.addExpansion("$[...]");
  } else if (next == '{') {
    lexParameter(w, depth + 1);
  } else if (next == '\'' && !in_double) {
    lexAnsiC(w);
  } else if (next == '"' && !in_double) {
    ++pos_;  // $"..." is a translated string: read it as a plain double-quoted one
  } else if (isNameStart(next)) {
    size_t end = pos_ + 1;
    while (end < in_.size() && isNameChar(in_[end])) ++end;
    w.addExpansion(in_.substr(pos_, end - pos_));
    pos_ = end;
  } else if (isDigit(next) || std::string_view("@*#?$!-").find(next) != kNpos) {
    w.addExpansion(in_.substr(pos_, 2));
    pos_ += 2;
  } else {
    w.add('$', !in_double);
    ++pos_;
  }
}

void ShellLexer::lexSubstitution(Word& w, int depth) {
  // $(( is arithmetic; reading it as a substitution of a subshell still finds any $(...) inside.
  if (peek(2) == '(') status_.fail("arithmetic expansion");
  pos_ += 2;
  parseSubstitution(depth + 1);
  w.addExpansion(kSubstitutionPlaceholder);
  w.substitutes = true;
}

void ShellLexer::lexParameter(Word& w, int depth) {
  if (!status_.enter(depth)) return;
  pos_ += 2;
  std::string text = "${";
  int nesting = 1;
  while (!atEnd()) {
    const char c = peek();
    if ((c == '$' && std::string_view("([{").find(peek(1)) != kNpos) || c == '`') {
      Word inner;
      if (c == '$') {
        lexDollar(inner, depth, true);
      } else {
        lexBacktick(inner, depth, true);
      }
      text += inner.text;
      w.substitutes = w.substitutes || inner.substitutes;
      continue;
    }
    // Quote rules inside ${...} differ between bash versions; do not guess.
    if (c == '\'' || c == '"') status_.fail("quote inside parameter expansion");
    const size_t width = (c == '\\' && pos_ + 1 < in_.size()) ? 2 : 1;
    text += in_.substr(pos_, width);
    pos_ += width;
    if (c == '{') ++nesting;
    if (c == '}' && --nesting == 0) break;
  }
  if (nesting > 0) status_.fail("unbalanced brace");
  w.addExpansion(text);
}

void ShellLexer::lexArithmeticBracket(int depth) {
  status_.fail("arithmetic expansion");
  if (!status_.enter(depth)) return;
  pos_ += 2;
  Word scratch;  // arithmetic evaluates subscripts, so substitutions inside still run
  int nesting = 1;
  while (!atEnd()) {
    const char c = peek();
    if (c == '$') {
      lexDollar(scratch, depth, true);
    } else if (c == '`') {
      lexBacktick(scratch, depth, true);
    } else {
      ++pos_;
      if (c == '[') ++nesting;
      if (c == ']' && --nesting == 0) return;
    }
  }
}

void ShellLexer::lexAnsiC(Word& w) {
  pos_ += 2;
  while (!atEnd()) {
    const char c = peek();
    ++pos_;
    if (c == '\'') return;
    if (c != '\\') {
      w.add(c, false);
    } else if (!atEnd()) {
      const char e = peek();
      ++pos_;
      const std::optional<char> decoded = decodeAnsiEscape(e);
      if (!decoded) status_.fail("unsupported ANSI-C escape");
      if (!decoded) w.add('\\', false);
      w.add(decoded.value_or(e), false);
    }
  }
  status_.fail("unbalanced quote");
}

void ShellLexer::lexBacktick(Word& w, int depth, bool in_double) {
  ++pos_;
  std::string inner;
  bool closed = false;
  while (!atEnd()) {
    const char c = peek();
    ++pos_;
    if (c == '`') {
      closed = true;
      break;
    }
    const char n = peek();
    const bool escaped = n == '$' || n == '`' || n == '\\' || (in_double && n == '"');
    if (c == '\\' && escaped) {
      inner += n;
      ++pos_;
    } else {
      inner += c;
    }
  }
  if (!closed) status_.fail("unbalanced backtick");
  parseScript(inner, depth + 1);
  w.addExpansion(kSubstitutionPlaceholder);
  w.substitutes = true;
}

}  // namespace byd::bench_v1
