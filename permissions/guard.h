#pragma once
// The Guard turns a ruleset decision into allow or deny. "ask" goes to an Approver (the MCP
// client, through elicitation); without one, or without an answer, the ask fallback decides
// (deny unless the user chose allow). Every decision is logged at info with the rule that made
// it. Immutable after construction; safe to share between threads.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backends/file_view.h"
#include "common/result.h"
#include "permissions/command_split.h"
#include "permissions/ruleset.h"
#include "permissions/session_grants.h"

namespace byd::permissions {

// One question for the user.
struct Question {
  Operation op;
  std::string_view shown;  // everything the operation would act on, whole
  const Decision& why;
  // What "allow for the rest of this session" would cover ("write under 'src/**'"); empty when
  // that is not offered.
  std::vector<std::string> remember;
};

enum class Answer { kNo, kYes, kYesForSession };

// Someone who can say yes or no to one operation: in practice the user, asked by the client.
class Approver {
 public:
  virtual ~Approver() = default;
  // Yes only on an explicit yes; an error when no answer could be had (the client cannot be
  // asked, or did not answer in time), in which case the fallback decides.
  virtual Result<Answer> approve(const Question& question) = 0;
  // Where this session's "for the rest of this session" answers are kept; null: not offered.
  virtual SessionGrants* grants() { return nullptr; }
};

enum class AskFallback { kDeny, kAllow };

class Guard {
 public:
  Guard(Ruleset rules, AskFallback fallback);

  // The ruleset's decision. For execute, `target` is a whole command line, judged as
  // decideCommand() judges it.
  Decision decide(Operation op, std::string_view target) const;
  // decide(), then ask `approver` (may be null) when the answer is ask. OK or PermissionDenied
  // with a message naming the operation, the target and the reason.
  // `approved`, when given, is set when the answer came from an "ask" answered yes (by the
  // user now, by an answer given for the session, or by --ask-fallback allow).
  Status check(Operation op, std::string_view target, Approver* approver,
               bool* approved = nullptr) const;
  // check() of installing distribution `name` on demand, asked as "`tool` wants to install
  // NAME".
  Status checkInstall(std::string_view name, std::string_view tool, Approver* approver) const;

  // An execute call as a whole: its line, and the variables it sets for every command in it
  // (judged as NAME=value words before each; a variable that changes what runs needs a rule
  // that names it). The approver is shown the whole line, the variables and `cwd`.
  using Env = std::vector<std::pair<std::string, std::string>>;
  // What the file rules judge of a path a redirection names (relative to the command's working
  // directory): the workspace key, or the path itself where it lies outside the workspace.
  using PathMapper = std::function<std::string(std::string_view path)>;
  // Every simple command of the line is judged by the execute rules and every file it
  // redirects from or to by the read or write rules (command_split.h); a line that is not
  // valid bash, and a fork bomb, are denied. With `grants`, what asks and they cover is
  // allowed; `offer` receives what "for the rest of this session" would cover of what still
  // asks (nothing when some of it cannot be known before the line runs). Without `paths`,
  // paths are taken relative to the workspace root.
  // `granted` is set when a grant allowed something that asks.
  Decision decideCommand(std::string_view line, const Env& env,
                         const SessionGrants* grants = nullptr,
                         std::vector<SessionGrant>* offer = nullptr, const PathMapper& paths = {},
                         bool* granted = nullptr) const;
  // `approved` as for check().
  Status checkCommand(std::string_view line, const Env& env, std::string_view cwd,
                      Approver* approver, const PathMapper& paths = {},
                      bool* approved = nullptr) const;
  // A move judges both paths by the move rules: a deny of either denies, and when either asks
  // the user is asked once about both.
  Status checkMove(std::string_view from, std::string_view to, Approver* approver) const;
  // Carries out a decision made elsewhere (an entry inside a directory that asks): `shown` is
  // what the approver sees.
  Status confirm(Operation op, std::string_view target, std::string_view shown, const Decision& d,
                 Approver* approver) const {
    return enforce(op, d, target, shown, approver, {});
  }
  // Whether listings must hide `path`: reading it is denied outright.
  bool hidesFromListings(std::string_view path) const;
  bool hidden(Operation op) const { return rules_.alwaysDenied(op); }
  // Whether an operation may need a human's approval that only elicitation can bring (some
  // rule asks, and the fallback denies).
  bool needsElicitation() const { return fallback_ == AskFallback::kDeny && rules_.mayAsk(); }

  const Ruleset& ruleset() const { return rules_; }
  AskFallback askFallback() const { return fallback_; }
  // The read and write rules for a sandbox's view of the workspace: one object for the life
  // of this Guard, so that what a backend learned of a tree under them stays valid.
  const std::shared_ptr<const FileRules>& fileRules() const { return file_rules_; }

 private:
  // One simple command of a line.
  Decision decideSimpleCommand(const SimpleCommand& command) const;
  // The decision made, logged and carried out; `shown` is what the approver sees.
  Status checkShown(Operation op, std::string_view target, std::string_view shown,
                    Approver* approver, bool* approved) const;
  Status enforce(Operation op, const Decision& d, std::string_view target, std::string_view shown,
                 Approver* approver, const std::vector<SessionGrant>& offer,
                 bool* approved = nullptr) const;

  Ruleset rules_;
  AskFallback fallback_;
  std::shared_ptr<const FileRules> file_rules_;
};

// A path named in a command line, relative to the directory key `cwd`, as the file rules see
// it: "src/a.c" for "../src/./a.c" in "lib"; absolute paths stay absolute, and what starts
// with ~ or $ is known only when the line runs, so it is kept as written.
std::string lexicalKey(std::string_view cwd, std::string_view path);

// "'src/a.py'", "'.'" for the workspace root.
std::string displayTarget(std::string_view target);

}  // namespace byd::permissions
