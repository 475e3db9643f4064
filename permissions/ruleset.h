#pragma once
// A permission ruleset: a global default action and, per operation, a default and an ordered
// list of rules. decide() returns the first matching rule's action, else the operation's
// default, else the global default, together with what decided it. mkdir, move and delete
// change files as write does: a ruleset without a section for one of them judges it by its
// write section. Path targets are matched
// with the glob tool's syntax (`*` never crosses '/'), command targets with command globs
// (see CommandPattern), `regex` rules with fully anchored RE2. A loaded Ruleset is immutable
// and safe to share between threads.

#include <array>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <re2/set.h>
#include <nlohmann/json.hpp>

#include "common/glob.h"
#include "common/result.h"

namespace re2 {
class RE2;
}

namespace byd::permissions {

enum class Action { kAllow, kDeny, kAsk };
enum class Operation {
  kRead,
  kWrite,
  kEdit,
  kLs,
  kGlob,
  kGrep,
  kExecute,
  kPython,
  kMkdir,
  kMove,
  kDelete,
  kNetwork,  // a connection from inside the sandbox: "host:port", host lower-cased
  kInstall   // a Python distribution installed: its name, normalized (pip_install.h)
};
inline constexpr size_t kOperationCount = 13;

std::string_view actionName(Action a);
std::string_view operationName(Operation op);
std::optional<Operation> parseOperation(std::string_view name);
std::optional<Action> parseAction(std::string_view name);

// What decided an action, for logs and messages: "read rule 3 (**/.env)", "write default",
// "global default".
struct Decision {
  Action action = Action::kDeny;
  std::string source;
  std::string description;  // the deciding rule's description ("" for defaults)
  std::string pattern;      // the deciding rule's pattern or regex as written ("" for defaults)
};

class Ruleset {
 public:
  // When a document's rules are compiled. kNow checks it against the schema and compiles every
  // rule at load, so that every error shows at start. kOnFirstUse, for the presets (tested to
  // compile), compiles an operation's rules when it is first decided: their regular expressions
  // are most of the server's start otherwise.
  enum class Compile { kNow, kOnFirstUse };
  // Parses and compiles a ruleset document. Every error names its place:
  // "read.rules[2].pattern: unclosed '[' at position 3".
  static Result<Ruleset> fromJson(const nlohmann::json& doc, Compile when = Compile::kNow);
  // Compiles what still waits; the first error.
  Status compileAll() const;

  // The decision for one target (a workspace-relative path, a simple command's words joined
  // by spaces, or Python code).
  Decision decide(Operation op, std::string_view target) const;
  // decide()'s action alone, without building its reasons: what a listing asks of each entry.
  Action action(Operation op, std::string_view target) const;
  // True when `op` can never be allowed or asked: its default resolves to deny and no rule
  // allows or asks. Such operations' tools are hidden from tools/list.
  bool alwaysDenied(Operation op) const;
  // True when every target of `op` is allowed: its default resolves to allow and every rule
  // allows (the protected paths aside).
  bool alwaysAllowed(Operation op) const;
  // True when some operation's default or some rule says "ask".
  bool mayAsk() const;

  const std::string& name() const { return name_; }
  // The document as loaded (shared by copies of the ruleset: a guard and its sandbox's view
  // each hold one).
  const nlohmann::json& json() const;

 private:
  // Whether every rule of `op` and its default say `action`.
  bool always(Operation op, Action action) const;
  struct Rule {
    std::string text;                    // the pattern or regex as written
    std::optional<GlobMatcher> glob;     // path patterns
    std::shared_ptr<const re2::RE2> re;  // regex rules and command patterns
    Action action;
    std::string description;
  };
  struct Compiled {
    Status status;  // the first rule that did not compile
    std::vector<Rule> rules;
    // Every rule in one automaton, when they all share their RE2 options (all globs, or all
    // regexes): one pass over the target instead of one per rule. Null otherwise.
    std::shared_ptr<const re2::RE2::Set> set;
  };
  // An operation's rules as written, compiled once, by the first to need them.
  struct Pending {
    Operation op;
    std::shared_ptr<const nlohmann::json> doc;  // the ruleset's document, which holds...
    const nlohmann::json* rules = nullptr;      // ...the operation's rules as written
    std::once_flag once;
    Compiled compiled;
  };
  struct OperationRules {
    Operation named = Operation::kRead;  // whose section this is (write's, for an absent move)
    std::optional<Action> fallback;
    std::vector<Action> actions;       // each rule's, known before compiling
    std::shared_ptr<Pending> pending;  // shared by copies of the ruleset; null: no rules
    const Compiled& compiled() const;
  };
  static std::shared_ptr<const re2::RE2::Set> combine(const std::vector<Rule>& rules);
  // What decides `target`: a rule (its index), a protected path, or one of the defaults.
  struct Verdict {
    enum class By { kBrokenRules, kRule, kProtected, kSectionDefault, kNoSection, kGlobal };
    By by;
    Action action;
    size_t index = 0;  // the rule's, or the protected pattern's
  };
  Verdict verdict(Operation op, std::string_view target) const;
  // The index of the first rule that matches `target`, or rules.size().
  static size_t firstHit(const Compiled& ops, std::string_view target);
  static Result<Rule> compileRule(Operation op, const nlohmann::json& rule,
                                  const std::string& where);

  std::string name_;
  Action fallback_ = Action::kDeny;
  std::array<OperationRules, kOperationCount> ops_;
  std::shared_ptr<const nlohmann::json> json_;
};

// Translates a command glob into an RE2 pattern. `*` matches anything (including '/' and
// spaces), `?` one character, everything else is literal; a trailing `*` right after a word
// ("git status*") matches only on a word boundary: "git status" and "git status -s", never
// "git statusx", so "git log*" does not allow "git logout".
std::string commandPatternToRegex(std::string_view pattern);

// Paths that hold what runs outside the sandbox later (git hooks and config, editor and agent
// settings, direnv and shell start-up files). write, edit, mkdir, move and delete deny them in
// every ruleset, after its own rules (a rule of its own that allows one comes first) and
// before its defaults.
std::span<const std::string_view> protectedPathPatterns();

}  // namespace byd::permissions
