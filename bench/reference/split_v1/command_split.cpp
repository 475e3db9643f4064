// The command splitter as it was before the bash parser (permissions/bash_parser.cpp), kept
// only as the reference that bench/bash_parser_bench.cpp measures the parser against.
#include "bench/reference/split_v1/command_split.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "permissions/env_policy.h"
#include "bench/reference/split_v1/shell_lexer.h"

namespace byd::bench_v1 {
using permissions::assignedName;
using permissions::changesWhatRuns;
namespace {

constexpr size_t kNpos = std::string_view::npos;

// Shared by every parser of one line, including those for substitutions and `sh -c` scripts.
struct State : SplitStatus {
  std::vector<SimpleCommand> commands;
};

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

void emitProgram(Words words, int depth, State& state, std::vector<std::string> assignments = {});

// Parses the lexer's words into simple commands: lists, pipelines, groups and redirections.
class Parser : public ShellLexer {
 public:
  Parser(std::string_view input, State& state) : ShellLexer(input, state), state_(state) {}
  // Parses commands until the `close` character (')' or '}') or, for '\0', the end of input.
  void parseList(char close, int depth);

 private:
  enum class Outcome { kConsumed, kClosed };
  // What a command's first word turned out to be.
  enum class Step { kWord, kSkip, kGroup, kClosed, kEnd };

  void parseSubstitution(int depth) override { parseList(')', depth); }
  void parseScript(std::string_view script, int depth) override {
    Parser(script, state_).parseList('\0', depth);
  }
  void consumeSeparator(bool have_command, bool& pending);
  Outcome parseCommand(char close, int depth);
  Step reservedWord(const Word& w, char close, int depth);
  bool openParen(Words& words, bool group, int depth);
  void parseFunctionHeader();
  void parseArrayValue(int depth);
  void parseRedirection(int depth);
  void finishCommand(Words words, int depth);

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

void Parser::consumeSeparator(bool have_command, bool& pending) {
  const std::string_view op = readSeparator();
  // `;;` only ends a case branch; a separator with nothing before it is a syntax error.
  if (!have_command || op == ";;") state_.fail("syntax error");
  pending = op[0] == '|' || op == "&&";
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
  std::vector<std::string> assignments;
  for (auto it = words.begin(); it != program; ++it) assignments.push_back(it->text);
  words.erase(words.begin(), program);
  for (const Word& w : words) {
    if (hasBraceExpansion(w.bare)) state_.fail("brace expansion");
  }
  emitProgram(std::move(words), depth, state_, std::move(assignments));
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

void emitProgram(Words words, int depth, State& state, std::vector<std::string> assignments) {
  if (!state.enter(depth)) return;
  while (!words.empty()) {
    checkProgramWord(words[0], state);
    const WrapperSpec* spec = findWrapper(words);
    if (spec == nullptr) break;
    const std::optional<size_t> index = wrappedCommandIndex(words, *spec);
    if (!index) state.fail("unknown wrapper option");
    if (!index || *index >= words.size()) break;  // a wrapper alone is reported as it is
    for (size_t i = 1; i < *index; ++i) {
      if (spec->assignments && isAssignment(words[i])) assignments.push_back(words[i].text);
    }
    words.erase(words.begin(), words.begin() + static_cast<std::ptrdiff_t>(*index));
  }
  if (words.empty()) {
    // `PATH=./bin` alone changes what the next commands run.
    if (std::any_of(assignments.begin(), assignments.end(),
                    [](const std::string& a) { return changesWhatRuns(assignedName(a)); })) {
      state.commands.push_back({{}, std::move(assignments)});
    }
    return;
  }
  if (splitShellScript(words, depth, state)) return;
  if (programName(words[0]) == "find") emitFindExec(words, depth, state);
  SimpleCommand command;
  for (Word& w : words) command.words.push_back(std::move(w.text));
  command.assignments = std::move(assignments);
  state.commands.push_back(std::move(command));
}

}  // namespace

std::string SimpleCommand::fullText() const {
  std::string out;
  for (const std::string& a : assignments) out += a + " ";
  out += text();
  if (words.empty() && !out.empty()) out.pop_back();
  return out;
}

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
  return {std::move(state.commands), state.certain, std::move(state.reason)};
}

}  // namespace byd::bench_v1
