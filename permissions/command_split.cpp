#include "permissions/command_split.h"

#include <algorithm>
#include <optional>
#include <span>
#include <utility>

#include "permissions/env_policy.h"

namespace byd::permissions {
namespace {

using bash::Kind;
using bash::Node;
using bash::Word;
// The words of a command, or a part of them.
using Words = std::span<const Word>;

constexpr size_t kNpos = std::string_view::npos;
// How deep scripts inside scripts (`sh -c "eval '...'"`) are followed.
constexpr int kMaxScriptDepth = 8;

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

bool allDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string quoted(std::string_view s) {
  constexpr size_t kMax = 60;
  std::string out = "'" + std::string(s.substr(0, kMax));
  for (char& c : out) {
    if (c == '\n') c = ' ';
  }
  return out + (s.size() > kMax ? "...'" : "'");
}

// --- Wrappers: commands that run their arguments as another command ---

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
// xargs -I) are deliberately missing: an unknown option leaves the command unknown.
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

// Whether a program may run another command or script from its arguments: a wrapper, a shell,
// eval, trap, alias or find. Most commands are none of these, and are reported as they are.
bool mayRunOthers(std::string_view name) {
  static constexpr std::string_view kOthers[] = {"sh",   "bash", "dash",  "zsh", "ksh",
                                                 "eval", "trap", "alias", "find"};
  // Their names are 2 to 7 bytes long and start with one of these.
  if (name.size() < 2 || name.size() > 7 ||
      std::string_view("bsdzkeatfcnx").find(name[0]) == kNpos) {
    return false;
  }
  for (std::string_view other : kOthers) {
    if (other == name) return true;
  }
  for (const WrapperSpec& spec : kWrappers) {
    if (spec.name == name) return true;
  }
  return false;
}

// Why a command word's value is known only when the line runs, or empty.
std::string unknownName(const Word& w) {
  if (w.substitutes) return "its name " + quoted(w.text) + " comes from a command's output";
  if (w.expands) return "its name " + quoted(w.text) + " is an expansion";
  if (bash::hasGlob(w.bare())) return "its name " + quoted(w.text) + " is a glob pattern";
  if (bash::hasBraceExpansion(w.bare())) {
    return "its name " + quoted(w.text) + " is a brace expansion";
  }
  return {};
}

// --- The walk over the syntax tree ---

class Analyzer {
 public:
  explicit Analyzer(SplitResult& out) : out_(out) {}

  void script(const bash::ParseResult& parsed, int depth) {
    for (const bash::SyntaxError& e : parsed.deferred) uncertain(e.message);
    if (parsed.functions) findForkBomb(parsed.script);
    node(parsed.script, depth);
  }

 private:
  void uncertain(std::string why) {
    if (out_.certain) out_.reason = std::move(why);
    out_.certain = false;
  }

  void node(const Node& n, int depth) {
    if (n.kind == Kind::kSimple) return simple(n, depth);
    if (n.kind == Kind::kFunction) {
      for (const Node& child : n.children) node(child, depth);
      return;
    }
    // A compound command's redirections are in place before its body runs.
    redirections(n, depth);
    for (const Word& w : n.words) nested(w, depth);
    for (const Node& child : n.children) node(child, depth);
  }

  void nested(const Word& w, int depth) {
    if (w.evaluates) {
      uncertain("'" + w.text.substr(0, 60) +
                "' expands a prompt string, which runs the command substitutions a variable "
                "holds");
    }
    for (const Node& script : w.nested) node(script, depth);
  }

  void redirections(const Node& n, int depth) {
    for (const bash::Redirect& r : n.redirects) {
      nested(r.target, depth);
      if (r.heredoc) {
        nested(r.heredoc->word, depth);
        continue;
      }
      file(r);
    }
  }

  void file(const bash::Redirect& r) {
    if (r.op == "<<<") return;
    const Word& t = r.target;
    if (t.substitutes && t.text == bash::kSubstitution) return;  // <(...) or >(...)
    const bool bare = t.literal;
    // `>&2`, `<&-` and `>&2-` (which moves the descriptor) name descriptors, not files.
    const std::string_view fd = t.text.size() > 1 && t.text.back() == '-'
                                    ? std::string_view(t.text).substr(0, t.text.size() - 1)
                                    : std::string_view(t.text);
    if ((r.op == "<&" || r.op == ">&") && bare && (t.text == "-" || allDigits(fd))) return;
    if (isDevice(t.text)) return;
    const bool write = r.op != "<" && r.op != "<&";
    out_.files.push_back({write, t.text, r.op, r.begin, t.expands});
  }

  static bool isDevice(std::string_view path) {
    if (path == "/dev/null" || path == "/dev/stdin" || path == "/dev/stdout" ||
        path == "/dev/stderr" || path == "/dev/tty") {
      return true;
    }
    return path.starts_with("/dev/fd/") && allDigits(path.substr(8));
  }

  // Bash expands the words, then performs the redirections (expanding heredocs), then runs
  // the command.
  void simple(const Node& n, int depth) {
    for (const Word& w : n.assignments) nested(w, depth);
    for (const Word& w : n.words) nested(w, depth);
    redirections(n, depth);
    std::vector<std::string> assignments;
    for (const Word& w : n.assignments) assignments.push_back(w.text);
    program(n.words, n.begin, depth, std::move(assignments));
  }

  // Reports the command `words` runs, looking through wrappers and into the scripts that
  // shells, eval, trap, alias and find -exec run.
  void program(Words words, uint32_t offset, int depth, std::vector<std::string> assignments) {
    std::string unknown;
    std::vector<std::string> via = via_;
    while (!words.empty()) {
      unknown = unknownName(words[0]);
      if (!unknown.empty() || !mayRunOthers(programName(words[0]))) break;
      const WrapperSpec* spec = findWrapper(words);
      if (spec == nullptr) break;
      const std::optional<size_t> index = wrappedCommandIndex(words, *spec);
      if (!index) {
        unknown = "an option of " + words[0].text + " is not one the rules understand";
        break;
      }
      if (*index >= words.size()) break;  // a wrapper alone is reported as it is
      for (size_t i = 1; i < *index; ++i) {
        if (spec->assignments && bash::isAssignmentWord(words[i])) {
          assignments.push_back(words[i].text);
        }
      }
      via.push_back(std::string(programName(words[0])));
      words = words.subspan(*index);
      offset = words.front().begin;
    }
    if (words.empty()) {
      // `PATH=./bin` alone changes what the next commands run.
      if (std::any_of(assignments.begin(), assignments.end(),
                      [](const std::string& a) { return changesWhatRuns(assignedName(a)); })) {
        out_.commands.push_back({{}, std::move(assignments), offset, {}, std::move(via)});
      }
      return;
    }
    if (unknown.empty() && mayRunOthers(programName(words[0]))) {
      via_.swap(via);
      Inner inner = innerScripts(words, offset, depth);
      via_.swap(via);
      if (inner.replaced) return;
      unknown = std::move(inner.unknown);
    }
    SimpleCommand command{{}, std::move(assignments), offset, std::move(unknown), std::move(via)};
    command.words.reserve(words.size());
    for (const Word& w : words) command.words.push_back(w.text);
    out_.commands.push_back(std::move(command));
  }

  struct Inner {
    std::string unknown;    // why what the scripts run is unknown, or empty
    bool replaced = false;  // the command only runs its script, whose commands were reported
  };

  // The scripts a command runs from its arguments: `sh -c`, eval, trap, alias, find -exec.
  Inner innerScripts(const Words& words, uint32_t offset, int depth) {
    const std::string_view name = programName(words[0]);
    std::string unknown;
    if (listHas("sh bash dash zsh ksh", name)) {
      bool script = false;
      unknown = shellScript(words, depth, script);
      return {unknown, script && unknown.empty()};
    }
    if (name == "eval") {
      unknown = evalScript(words, offset, depth);
      return {unknown, unknown.empty()};
    }
    if (name == "trap") return {trapScript(words, depth)};
    if (name == "alias") return {aliasScripts(words, offset, depth)};
    if (name == "find") return {findExec(words, depth)};
    return {};
  }

  // Parses `text`, a script the line passes to something that runs it.
  // `runner` is what runs it (bash, eval, trap, alias), `what` names it in messages.
  std::string parseInner(std::string_view text, uint32_t offset, int depth, std::string_view what,
                         std::string_view runner) {
    if (depth + 1 > kMaxScriptDepth) {
      return std::string(what) + " is nested in more than " + std::to_string(kMaxScriptDepth) +
             " scripts";
    }
    bash::ParseResult parsed = bash::parseBash(text);
    if (parsed.error) {
      return std::string(what) + " does not parse (" +
             bash::describePosition(text, parsed.error->offset) + ": " + parsed.error->message +
             ")";
    }
    relocate(parsed.script, offset);
    via_.push_back(std::string(runner));
    script(parsed, depth + 1);
    via_.pop_back();
    return {};
  }

  // Offsets of a nested script are those of the word that holds it.
  static void relocate(Node& n, uint32_t offset) {
    n.begin = n.end = offset;
    for (Node& child : n.children) relocate(child, offset);
    for (Word& w : n.words) {
      for (Node& s : w.nested) relocate(s, offset);
    }
    for (Word& w : n.assignments) {
      for (Node& s : w.nested) relocate(s, offset);
    }
    for (bash::Redirect& r : n.redirects) r.begin = offset;
  }

  // `sh -c SCRIPT`: sets `script` when it is such a call (not `sh file.sh` or `curl x | sh`).
  std::string shellScript(const Words& words, int depth, bool& script) {
    bool has_c = false;
    size_t i = 1;
    for (; i < words.size(); ++i) {
      const std::string_view t = words[i].text;
      if (t == "--" || t == "-") {
        ++i;
        break;
      }
      if (t.starts_with("--")) {
        if (listHas("login noprofile norc posix noediting restricted verbose", t.substr(2))) {
          continue;
        }
        return "the shell option " + quoted(t) + " is not one the rules understand";
      }
      if (t.size() < 2 || (t[0] != '-' && t[0] != '+')) break;
      for (char c : t.substr(1)) {
        if (c == 'c') {
          has_c = true;
        } else if (c == 'o' || c == 'O') {
          ++i;  // -o pipefail
        } else if (std::string_view("aefhiklmnprstuvxBCEHPT").find(c) == kNpos) {
          return "the shell option " + quoted(t) + " is not one the rules understand";
        }
      }
    }
    if (!has_c) return {};  // `sh script.sh`, `curl x | sh`: the program as it is
    script = true;
    if (i >= words.size()) return "the shell's -c has no script";
    if (words[i].expands) return "the script of -c, " + quoted(words[i].text) + ", is an expansion";
    return parseInner(words[i].text, words[i].begin, depth, "the script of -c",
                      programName(words[0]));
  }

  std::string evalScript(const Words& words, uint32_t offset, int depth) {
    std::string text;
    for (size_t i = 1; i < words.size(); ++i) {
      if (words[i].expands) return "eval runs " + quoted(words[i].text) + ", an expansion";
      if (i > 1) text += ' ';
      text += words[i].text;
    }
    return parseInner(text, offset, depth, "eval's script", "eval");
  }

  std::string trapScript(const Words& words, int depth) {
    size_t i = 1;
    while (i < words.size() && words[i].text.starts_with('-') && words[i].text != "-") {
      if (words[i].text == "--") {
        ++i;
        break;
      }
      if (words[i].text == "-p" || words[i].text == "-l" || words[i].text == "-P") return {};
      ++i;
    }
    // `trap SIG` alone resets; `trap - SIG` and `trap '' SIG` run nothing.
    if (i + 1 >= words.size() || words[i].text == "-" || words[i].text.empty()) return {};
    if (words[i].expands) return "trap runs " + quoted(words[i].text) + ", an expansion";
    return parseInner(words[i].text, words[i].begin, depth, "trap's script", "trap");
  }

  // `alias ll='ls -l'`: where aliases are expanded, the value runs as a command.
  std::string aliasScripts(const Words& words, uint32_t offset, int depth) {
    for (size_t i = 1; i < words.size(); ++i) {
      const size_t eq = words[i].text.find('=');
      if (eq == kNpos || eq == 0) continue;
      if (words[i].expands) return "an alias is " + quoted(words[i].text) + ", an expansion";
      std::string why = parseInner(std::string_view(words[i].text).substr(eq + 1), offset, depth,
                                   "an alias", "alias");
      if (!why.empty()) return why;
    }
    return {};
  }

  // `find ... -exec CMD ... ;` runs CMD, so rules must see it too.
  std::string findExec(const Words& words, int depth) {
    for (size_t i = 1; i < words.size(); ++i) {
      if (!listHas("-exec -execdir -ok -okdir", words[i].text)) continue;
      size_t end = i + 1;
      while (end < words.size() && words[end].text != ";" && words[end].text != "+") ++end;
      const Words inner = words.subspan(i + 1, end - i - 1);
      if (!inner.empty()) {
        const uint32_t at = inner.front().begin;
        if (inner[0].text.find("{}") != kNpos) {
          out_.commands.push_back({{inner[0].text}, {}, at, "find runs the files it finds", via_});
        } else {
          program(inner, at, depth + 1, {});
        }
      }
      i = end;
    }
    return {};
  }

  // --- Fork bombs: a function that starts copies of itself in parallel ---

  void findForkBomb(const Node& n) {
    if (!out_.fork_bomb.empty()) return;
    if (n.kind == Kind::kFunction && !n.children.empty() &&
        startsItself(n.children.front(), n.name, false)) {
      out_.fork_bomb = n.name;
      return;
    }
    for (const Node& child : n.children) findForkBomb(child);
  }

  // Whether `n` runs `name` in the background or in a pipeline beside another command.
  static bool startsItself(const Node& n, const std::string& name, bool parallel) {
    if (n.kind == Kind::kSimple) {
      return parallel && !n.words.empty() && n.words.front().text == name;
    }
    for (const Node& child : n.children) {
      bool p = parallel;
      if (n.kind == Kind::kList) p = p || child.op == "&";
      if (n.kind == Kind::kPipeline) p = p || n.children.size() > 1;
      if (startsItself(child, name, p)) return true;
    }
    return false;
  }

  SplitResult& out_;
  // The wrappers and shells the command being read runs through (SimpleCommand::via).
  std::vector<std::string> via_;
};

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
  SplitResult result;
  bash::ParseResult parsed = bash::parseBash(line);
  if (parsed.error) {
    result.error = std::move(parsed.error);
    result.certain = false;
    result.reason = "the line is not valid bash";
    return result;
  }
  Analyzer(result).script(parsed, 0);
  return result;
}

}  // namespace byd::permissions
