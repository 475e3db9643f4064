#include "permissions/command_split.h"

#include <algorithm>
#include <optional>
#include <utility>

namespace byd::permissions {
namespace {

// Deeper than any real command line needs; bounded so that hostile input (10k nested parens)
// cannot exhaust the stack.
constexpr int kMaxDepth = 16;
constexpr size_t kNpos = std::string_view::npos;
// Stands in Word::bare for a character that was quoted or came from an expansion.
constexpr char kNotBare = '\x01';

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

// Shared by every parser of one line, including those for substitutions and `sh -c` scripts.
struct State {
  SplitResult result;
  bool aborted = false;  // nesting too deep: stop reading, the line is already uncertain

  void fail(std::string_view reason) {
    if (!result.certain) return;
    result.certain = false;
    result.reason = reason;
  }
  bool enter(int depth) {
    if (depth <= kMaxDepth) return !aborted;
    fail("too deeply nested");
    aborted = true;
    return false;
  }
};

bool isBlank(char c) { return c == ' ' || c == '\t'; }
bool isMeta(char c) { return isBlank(c) || std::string_view("\n;&|()<>").find(c) != kNpos; }
bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool isNameChar(char c) { return isNameStart(c) || isDigit(c); }
bool allDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), isDigit);
}

// Whether `name` is one of the space-separated words of `list`.
bool listHas(std::string_view list, std::string_view name) {
  while (!list.empty()) {
    const size_t space = list.find(' ');
    if (list.substr(0, space) == name) return true;
    if (space == kNpos) break;
    list.remove_prefix(space + 1);
  }
  return false;
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

// \x, \u, octal and \c are missing: rare, and decoding them is easy to get wrong.
std::optional<char> decodeAnsiEscape(char e) {
  constexpr std::string_view kEscapes = "ntrabeEfv\\'\"?";
  constexpr std::string_view kDecoded = "\n\t\r\a\b\x1b\x1b\f\v\\'\"?";
  const size_t i = kEscapes.find(e);
  return i == kNpos ? std::nullopt : std::optional<char>(kDecoded[i]);
}

void emitProgram(Words words, int depth, State& state);

class Parser {
 public:
  Parser(std::string_view input, State& state) : in_(input), state_(state) {}
  // Parses commands until the `close` character (')' or '}') or, for '\0', the end of input.
  void parseList(char close, int depth);

 private:
  enum class Outcome { kConsumed, kClosed };
  // What a command's first word turned out to be.
  enum class Step { kWord, kSkip, kGroup, kClosed, kEnd };

  bool atEnd() const { return pos_ >= in_.size() || state_.aborted; }
  char peek(size_t ahead = 0) const { return pos_ + ahead < in_.size() ? in_[pos_ + ahead] : '\0'; }
  bool atSeparator() const {
    const char c = peek();
    return c == ';' || c == '|' || (c == '&' && peek(1) != '>');
  }
  void skipBlanks();
  void skipComment();
  void consumeSeparator(bool have_command, bool& pending);
  Outcome parseCommand(char close, int depth);
  Step reservedWord(const Word& w, char close, int depth);
  bool openParen(Words& words, bool group, int depth);
  void parseFunctionHeader();
  void parseArrayValue(int depth);
  void parseRedirection(int depth);
  std::string_view readRedirectionOperator();
  void finishCommand(Words words, int depth);
  Word lexWord(int depth);
  void lexBackslash(Word& w);
  void lexSingleQuoted(Word& w);
  void lexDoubleQuoted(Word& w, int depth);
  void lexDollar(Word& w, int depth, bool in_double);
  void lexSubstitution(Word& w, int depth);
  void lexParameter(Word& w, int depth);
  void lexArithmeticBracket(int depth);
  void lexAnsiC(Word& w);
  void lexBacktick(Word& w, int depth, bool in_double);

  std::string_view in_;
  size_t pos_ = 0;
  State& state_;
};

void Parser::parseList(char close, int depth) {
  if (!state_.enter(depth)) return;
  bool have_command = false;  // a command precedes the next separator
  bool pending = false;       // `&&`, `||` or `|` still waits for its right-hand command
  while (true) {
    skipBlanks();
    if (atEnd()) break;
    const size_t start = pos_;
    const char c = peek();
    if (c == '#') {
      skipComment();
    } else if (c == '\n') {
      ++pos_;
      have_command = false;
    } else if (c == ')') {
      ++pos_;
      if (close == ')') {
        if (pending) state_.fail("incomplete command");
        return;
      }
      state_.fail("unbalanced parenthesis");
    } else if (atSeparator()) {
      consumeSeparator(have_command, pending);
      have_command = false;
    } else {
      if (parseCommand(close, depth) == Outcome::kClosed) {
        if (pending) state_.fail("incomplete command");
        return;
      }
      have_command = true;
      pending = false;
    }
    if (pos_ == start) {  // never loop without progress, whatever the input
      ++pos_;
      state_.fail("syntax error");
    }
  }
  if (state_.aborted) return;
  if (close != '\0') state_.fail(close == ')' ? "unbalanced parenthesis" : "unbalanced brace");
  if (pending) state_.fail("incomplete command");
}

void Parser::skipBlanks() {
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

void Parser::skipComment() {
  while (!atEnd() && peek() != '\n') ++pos_;
}

void Parser::consumeSeparator(bool have_command, bool& pending) {
  const char c = peek();
  const char next = peek(1);
  const bool doubled = next == c || (c == '|' && next == '&');
  pos_ += doubled ? 2 : 1;
  // `;;` only ends a case branch; a separator with nothing before it is a syntax error.
  if (!have_command || (c == ';' && doubled)) state_.fail("syntax error");
  pending = c == '|' || (c == '&' && doubled);
}

Parser::Outcome Parser::parseCommand(char close, int depth) {
  Words words;
  bool group = false;  // a ( ) or { } group was parsed; only redirections may follow it
  while (true) {
    skipBlanks();
    if (atEnd()) break;
    const char c = peek();
    if (c == '#') {
      skipComment();
    } else if (c == '<' || c == '>' || (c == '&' && peek(1) == '>')) {
      parseRedirection(depth);
    } else if (c == '(') {
      if (!openParen(words, group, depth)) return Outcome::kConsumed;
      group = group || words.empty();
    } else if (isMeta(c)) {
      break;
    } else {
      Word w = lexWord(depth);
      if (looksLikeFd(w) && (peek() == '<' || peek() == '>')) continue;
      if (group) {
        state_.fail("syntax error");
        continue;
      }
      const Step step = words.empty() ? reservedWord(w, close, depth) : Step::kWord;
      if (step == Step::kWord) words.push_back(std::move(w));
      if (step == Step::kGroup) group = true;
      if (step == Step::kClosed) return Outcome::kClosed;
      if (step == Step::kEnd) return Outcome::kConsumed;
    }
  }
  if (!group) finishCommand(std::move(words), depth);
  return Outcome::kConsumed;
}

// Interprets a command's first word when it is unquoted and reserved.
Parser::Step Parser::reservedWord(const Word& w, char close, int depth) {
  if (w.text != w.bare) return Step::kWord;
  if (w.text == "{") {
    parseList('}', depth + 1);
    return Step::kGroup;
  }
  if (w.text == "}") {
    if (close == '}') return Step::kClosed;
    state_.fail("unbalanced brace");
    return Step::kSkip;
  }
  if (w.text == "function") {
    state_.fail("function definition");
    skipBlanks();
    if (!atEnd() && !isMeta(peek())) lexWord(depth);  // the name
    parseFunctionHeader();
    return Step::kEnd;  // the body follows as a command of its own
  }
  // Keywords of if/while/until: the commands between them are split like any others.
  return listHas("if then elif else while until do done fi !", w.text) ? Step::kSkip : Step::kWord;
}

// Handles `(` inside a command. Returns false when the command ends here.
bool Parser::openParen(Words& words, bool group, int depth) {
  const bool all_assignments = std::all_of(words.begin(), words.end(), isAssignment);
  if (!words.empty() && all_assignments && in_[pos_ - 1] == '=') {
    parseArrayValue(depth);  // arr=(a b)
    return true;
  }
  if (words.size() == 1 && !group) {
    state_.fail("function definition");
    parseFunctionHeader();
    return false;  // the body follows as a command of its own
  }
  if (!words.empty() || group) {
    state_.fail("syntax error");
    finishCommand(std::move(words), depth);
    return false;  // the caller reads the `(` as the start of the next command
  }
  if (peek(1) == '(') state_.fail("arithmetic expansion");  // (( expr ))
  ++pos_;
  parseList(')', depth + 1);
  return true;
}

void Parser::parseFunctionHeader() {
  skipBlanks();
  if (peek() != '(') return;
  ++pos_;
  skipBlanks();
  if (peek() == ')') {
    ++pos_;
  } else {
    state_.fail("syntax error");
  }
}

void Parser::parseArrayValue(int depth) {
  ++pos_;
  while (true) {
    skipBlanks();
    if (atEnd()) {
      state_.fail("unbalanced parenthesis");
      return;
    }
    const char c = peek();
    if (c == ')') {
      ++pos_;
      return;
    }
    if (c == '\n') {
      ++pos_;
    } else if (isMeta(c)) {
      state_.fail("syntax error");
      return;
    } else {
      lexWord(depth);  // only for the substitutions inside
    }
  }
}

std::string_view Parser::readRedirectionOperator() {
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

void Parser::parseRedirection(int depth) {
  const std::string_view op = readRedirectionOperator();
  if (op == "<(" || op == ">(") {
    state_.fail("process substitution");
    parseList(')', depth + 1);
    return;
  }
  if (op == "<<<") state_.fail("here-string");
  if (op == "<<" || op == "<<-") state_.fail("heredoc");
  skipBlanks();
  if (atEnd() || isMeta(peek())) {
    state_.fail("missing redirection target");
    return;
  }
  const Word target = lexWord(depth);
  if (op == "<" || op == "<&" || op.starts_with("<<")) return;
  const bool dup = target.text == target.bare && (target.text == "-" || allDigits(target.text));
  if (op == ">&" && dup) return;
  const bool sink =
      target.text == "/dev/null" || target.text == "/dev/stdout" || target.text == "/dev/stderr";
  if (target.expands || !sink) state_.fail("output redirection to a file");
}

void Parser::finishCommand(Words words, int depth) {
  const auto program = std::find_if_not(words.begin(), words.end(), isAssignment);
  words.erase(words.begin(), program);
  for (const Word& w : words) {
    if (hasBraceExpansion(w.bare)) state_.fail("brace expansion");
  }
  emitProgram(std::move(words), depth, state_);
}

Word Parser::lexWord(int depth) {
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

void Parser::lexBackslash(Word& w) {
  if (pos_ + 1 >= in_.size()) {
    state_.fail("line continuation at end");
    ++pos_;
    return;
  }
  if (peek(1) != '\n') w.add(peek(1), false);
  pos_ += 2;
}

void Parser::lexSingleQuoted(Word& w) {
  size_t end = in_.find('\'', pos_ + 1);
  if (end == kNpos) {
    state_.fail("unbalanced quote");
    end = in_.size();
  }
  for (size_t i = pos_ + 1; i < end; ++i) w.add(in_[i], false);
  pos_ = std::min(end + 1, in_.size());
}

void Parser::lexDoubleQuoted(Word& w, int depth) {
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
  state_.fail("unbalanced quote");
}

void Parser::lexDollar(Word& w, int depth, bool in_double) {
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

void Parser::lexSubstitution(Word& w, int depth) {
  // $(( is arithmetic; reading it as a substitution of a subshell still finds any $(...) inside.
  if (peek(2) == '(') state_.fail("arithmetic expansion");
  pos_ += 2;
  parseList(')', depth + 1);
  w.addExpansion(kSubstitutionPlaceholder);
  w.substitutes = true;
}

void Parser::lexParameter(Word& w, int depth) {
  if (!state_.enter(depth)) return;
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
    if (c == '\'' || c == '"') state_.fail("quote inside parameter expansion");
    const size_t width = (c == '\\' && pos_ + 1 < in_.size()) ? 2 : 1;
    text += in_.substr(pos_, width);
    pos_ += width;
    if (c == '{') ++nesting;
    if (c == '}' && --nesting == 0) break;
  }
  if (nesting > 0) state_.fail("unbalanced brace");
  w.addExpansion(text);
}

void Parser::lexArithmeticBracket(int depth) {
  state_.fail("arithmetic expansion");
  if (!state_.enter(depth)) return;
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

void Parser::lexAnsiC(Word& w) {
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
      if (!decoded) state_.fail("unsupported ANSI-C escape");
      if (!decoded) w.add('\\', false);
      w.add(decoded.value_or(e), false);
    }
  }
  state_.fail("unbalanced quote");
}

void Parser::lexBacktick(Word& w, int depth, bool in_double) {
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
  if (!closed) state_.fail("unbalanced backtick");
  Parser(inner, state_).parseList('\0', depth + 1);
  w.addExpansion(kSubstitutionPlaceholder);
  w.substitutes = true;
}

// --- What runs: wrappers, shells and the program word ---

// A command that runs its arguments as another command.
struct WrapperSpec {
  std::string_view name = {};
  std::string_view flags = {};          // short options without an argument
  std::string_view with_arg = {};       // short options taking an argument
  std::string_view long_flags = {};     // space-separated; may carry `=value`
  std::string_view long_with_arg = {};  // space-separated
  size_t operands = 0;                  // words before the command, e.g. timeout's DURATION
  bool assignments = false;             // NAME=value words may precede the command
  bool numeric = false;                 // `-10` is an option (nice)
  bool lone_dash = false;               // `-` is an option (env)
};

// Options that make a wrapper run something other than its operands (sudo -s, env -S,
// xargs -I) are deliberately missing: unknown options make the line uncertain.
// One wrapper per line reads better than one field per line.
// clang-format off
constexpr WrapperSpec kWrappers[] = {
    {.name = "env", .flags = "i0v", .with_arg = "uC", .long_flags = "ignore-environment null debug",
     .long_with_arg = "unset chdir", .assignments = true, .lone_dash = true},
    {.name = "sudo", .flags = "AbEHknPS", .with_arg = "ugpCDrtTU",
     .long_flags = "preserve-env non-interactive set-home stdin askpass background",
     .long_with_arg = "user group prompt chdir close-from role type other-user chroot",
     .assignments = true},
    {.name = "command", .flags = "p"},
    {.name = "exec", .flags = "cl", .with_arg = "a"},
    {.name = "nohup"},
    {.name = "builtin"},
    {.name = "time", .flags = "p"},
    {.name = "timeout", .flags = "v", .with_arg = "sk",
     .long_flags = "preserve-status foreground verbose", .long_with_arg = "signal kill-after",
     .operands = 1},
    {.name = "nice", .with_arg = "n", .long_with_arg = "adjustment", .numeric = true},
    {.name = "xargs", .flags = "0rtpxo", .with_arg = "nLPsdaE",
     .long_flags = "null no-run-if-empty verbose interactive exit open-tty",
     .long_with_arg = "max-args max-lines max-procs max-chars delimiter arg-file eof"},
};
// clang-format on

// Programs whose arguments become shell code this splitter cannot see.
constexpr std::string_view kOpaquePrograms = "eval source . trap alias fc";
// Compound commands this splitter does not parse.
constexpr std::string_view kUnsupportedKeywords = "for case select coproc [[ esac";

constexpr std::string_view kStandardDirs[] = {"/bin/", "/usr/bin/", "/usr/local/bin/", "/sbin/",
                                              "/usr/sbin/"};

// The name to recognise wrappers and shells by: `/usr/bin/env` is env, but `./env` is not.
std::string_view programName(const Word& w) {
  const std::string_view text = w.text;
  for (std::string_view dir : kStandardDirs) {
    if (text.starts_with(dir) && text.find('/', dir.size()) == kNpos) {
      return text.substr(dir.size());
    }
  }
  return text;
}

// How many words `-abc` or `-n5` / `-n 5` occupies, or nullopt for an unknown option.
std::optional<size_t> shortOptionWidth(std::string_view t, const WrapperSpec& spec) {
  for (size_t j = 1; j < t.size(); ++j) {
    if (spec.with_arg.find(t[j]) != kNpos) return j + 1 < t.size() ? 1 : 2;
    if (spec.flags.find(t[j]) == kNpos) return std::nullopt;
  }
  return 1;
}

std::optional<size_t> longOptionWidth(std::string_view t, const WrapperSpec& spec) {
  const size_t eq = t.find('=');
  const std::string_view name = t.substr(2, eq == kNpos ? eq : eq - 2);
  if (listHas(spec.long_with_arg, name)) return eq == kNpos ? 2 : 1;
  if (listHas(spec.long_flags, name)) return 1;
  return std::nullopt;
}

// Index of the wrapped command's first word, or nullopt for an option not understood.
std::optional<size_t> wrappedCommandIndex(const Words& words, const WrapperSpec& spec) {
  size_t i = 1;
  while (i < words.size()) {
    const std::string_view t = words[i].text;
    std::optional<size_t> width = 1;
    if (t == "--") {
      ++i;
      break;
    }
    const bool lone_dash = t == "-" && spec.lone_dash;
    if (!lone_dash && (t.size() < 2 || t[0] != '-')) {
      break;
    } else if (lone_dash) {
      width = 1;
    } else if (t.starts_with("--")) {
      width = longOptionWidth(t, spec);
    } else if (!(spec.numeric && allDigits(t.substr(1)))) {
      width = shortOptionWidth(t, spec);
    }
    if (!width) return std::nullopt;
    i += *width;
  }
  while (spec.assignments && i < words.size() && words[i].text.find('=') != kNpos &&
         words[i].text[0] != '=') {
    ++i;
  }
  return i + spec.operands;
}

// Splits `sh -c SCRIPT` into the script's commands. Returns false when `words` is not such a
// call (e.g. `sh script.sh`, `curl x | sh`) and should be emitted as it is.
bool splitShellScript(const Words& words, int depth, State& state) {
  if (!listHas("sh bash dash zsh ksh", programName(words[0]))) return false;
  bool has_c = false;
  size_t i = 1;
  for (; i < words.size(); ++i) {
    const std::string_view t = words[i].text;
    if (t == "--" || t == "-") {
      ++i;
      break;
    }
    if (t.starts_with("--")) {
      if (listHas("login noprofile norc posix noediting restricted verbose", t.substr(2))) continue;
      state.fail("unknown shell option");
      return false;
    }
    if (t.size() < 2 || (t[0] != '-' && t[0] != '+')) break;
    for (char c : t.substr(1)) {
      if (c == 'c') {
        has_c = true;
      } else if (c == 'o' || c == 'O') {
        ++i;  // -o pipefail
      } else if (std::string_view("aefhiklmnprstuvxBCEHPT").find(c) == kNpos) {
        state.fail("unknown shell option");
        return false;
      }
    }
  }
  if (!has_c) return false;
  if (i >= words.size() || words[i].expands) {
    state.fail(i >= words.size() ? "missing shell script" : "dynamic shell script");
    return false;
  }
  Parser(words[i].text, state).parseList('\0', depth + 1);
  return true;
}

// `find ... -exec CMD ... ;` runs CMD, so rules must see it too.
void emitFindExec(const Words& words, int depth, State& state) {
  for (size_t i = 1; i < words.size(); ++i) {
    if (!listHas("-exec -execdir -ok -okdir", words[i].text)) continue;
    size_t end = i + 1;
    while (end < words.size() && words[end].text != ";" && words[end].text != "+") ++end;
    Words inner(words.begin() + i + 1, words.begin() + end);
    if (!inner.empty() && inner[0].text.find("{}") != kNpos) {
      state.fail("find runs the files it finds");
    }
    emitProgram(std::move(inner), depth + 1, state);
    i = end;
  }
}

void checkProgramWord(const Word& w, State& state) {
  if (w.substitutes) state.fail("command substitution in command position");
  if (w.expands) state.fail("variable in command position");
  if (hasGlob(w.bare)) state.fail("glob in command position");
  if (listHas(kOpaquePrograms, w.text)) state.fail(w.text == "." ? "source" : w.text);
  if (listHas(kUnsupportedKeywords, w.text)) state.fail("unsupported shell syntax");
}

const WrapperSpec* findWrapper(const Words& words) {
  const std::string_view name = programName(words[0]);
  // `command -v git` only describes git; keep it whole.
  if (name == "command" && words.size() > 1 && (words[1].text == "-v" || words[1].text == "-V")) {
    return nullptr;
  }
  for (const WrapperSpec& spec : kWrappers) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

void emitProgram(Words words, int depth, State& state) {
  if (!state.enter(depth)) return;
  while (!words.empty()) {
    checkProgramWord(words[0], state);
    const WrapperSpec* spec = findWrapper(words);
    if (spec == nullptr) break;
    const std::optional<size_t> index = wrappedCommandIndex(words, *spec);
    if (!index) state.fail("unknown wrapper option");
    if (!index || *index >= words.size()) break;  // a wrapper alone is reported as it is
    words.erase(words.begin(), words.begin() + static_cast<std::ptrdiff_t>(*index));
  }
  if (words.empty() || splitShellScript(words, depth, state)) return;
  if (programName(words[0]) == "find") emitFindExec(words, depth, state);
  SimpleCommand command;
  for (Word& w : words) command.words.push_back(std::move(w.text));
  state.result.commands.push_back(std::move(command));
}

}  // namespace

std::string SimpleCommand::text() const {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += ' ';
    out += words[i];
  }
  return out;
}

SplitResult splitCommandLine(std::string_view line) {
  State state;
  Parser(line, state).parseList('\0', 0);
  return std::move(state.result);
}

}  // namespace byd::permissions
