#include "permissions/guard.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "permissions/command_split.h"
#include "permissions/decision_trail.h"
#include "permissions/env_policy.h"
#include "permissions/pip_install.h"

namespace byd::permissions {
namespace {

std::string reasonOf(const Decision& d) {
  return d.description.empty() ? "by " + d.source : d.description;
}

// Long commands and code are cut in messages and logs.
std::string shorten(std::string_view s) {
  constexpr size_t kMax = 200;
  std::string out(s.substr(0, kMax));
  for (char& c : out) {
    if (c == '\n') c = ' ';
  }
  return s.size() > kMax ? out + "..." : out;
}

bool isOneOf(std::string_view word, std::initializer_list<std::string_view> list) {
  return std::find(list.begin(), list.end(), word) != list.end();
}

// The variables a simple command sets that change what runs: before it, or exported by it.
std::vector<std::string_view> variablesThatChangeWhatRuns(const SimpleCommand& command) {
  std::vector<std::string_view> names;
  for (const std::string& a : command.assignments) names.push_back(assignedName(a));
  if (!command.words.empty() &&
      isOneOf(command.words.front(), {"export", "declare", "typeset", "readonly", "local"})) {
    for (size_t i = 1; i < command.words.size(); ++i) {
      if (!command.words[i].starts_with('-')) names.push_back(assignedName(command.words[i]));
    }
  }
  std::erase_if(names, [](std::string_view name) { return !changesWhatRuns(name); });
  return names;
}

}  // namespace

std::string lexicalKey(std::string_view cwd, std::string_view path) {
  if (path.starts_with('~') || path.starts_with('$')) return std::string(path);
  const bool absolute = path.starts_with('/');
  std::vector<std::string_view> parts;
  const auto add = [&](std::string_view s) {
    while (!s.empty()) {
      const size_t slash = s.find('/');
      const std::string_view part = s.substr(0, slash);
      if (part == "..") {
        if (!parts.empty() && parts.back() != "..") {
          parts.pop_back();
        } else if (!absolute) {
          parts.push_back(part);
        }
      } else if (!part.empty() && part != ".") {
        parts.push_back(part);
      }
      if (slash == std::string_view::npos) break;
      s.remove_prefix(slash + 1);
    }
  };
  if (!absolute) add(cwd);
  add(path);
  std::string out = absolute ? "/" : "";
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += '/';
    out += parts[i];
  }
  return out;
}

std::string displayTarget(std::string_view target) {
  return "'" + (target.empty() ? std::string(".") : shorten(target)) + "'";
}

namespace {

// The read and write rules as a sandbox's view of the workspace takes them.
class RulesetFileRules : public FileRules {
 public:
  RulesetFileRules(Ruleset rules, AskFallback fallback)
      : rules_(std::move(rules)), fallback_(fallback) {}
  PathActions judge(std::string_view key) const override {
    return {map(rules_.decide(Operation::kRead, key).action),
            map(rules_.decide(Operation::kWrite, key).action)};
  }

 private:
  // Inside the sandbox nobody can be asked about a path: "ask" is what the fallback says,
  // unless the call itself was approved (FileView::approved).
  ViewAction map(Action a) const {
    switch (a) {
      case Action::kAllow:
        return ViewAction::kAllow;
      case Action::kDeny:
        return ViewAction::kDeny;
      case Action::kAsk:
        return fallback_ == AskFallback::kAllow ? ViewAction::kAllow : ViewAction::kAsk;
    }
    return ViewAction::kDeny;
  }
  const Ruleset rules_;
  const AskFallback fallback_;
};

// What a line's parts say together: allowed until one asks (the first ask is the one shown),
// with what "for the rest of this session" would cover of every ask, where each can be.
struct LineVerdict {
  Decision combined{Action::kAllow, "every command allowed", "", ""};
  std::vector<SessionGrant> offered;
  bool all_offered = true;

  void ask(const Decision& d, std::optional<SessionGrant> grant) {
    if (grant) {
      offered.push_back(std::move(*grant));
    } else {
      all_offered = false;
    }
    if (combined.action == Action::kAllow) combined = d;
  }
};

// The install rules on what `command`, a pip install, installs: a denial, or nothing (what
// asks is added to `verdict`; what a grant covers sets `granted`).
std::optional<Decision> judgeInstall(const Ruleset& rules, const SimpleCommand& command,
                                     const PipInstall& pip, const SessionGrants* grants,
                                     bool* granted, LineVerdict& verdict) {
  const std::string what = "'" + shorten(command.text()) + "' installs ";
  for (const std::string& name : pip.names) {
    Decision install = rules.decide(Operation::kInstall, name);
    install.description = reasonOf(install) + " (" + what + name + ")";
    if (install.action == Action::kDeny) return install;
    if (install.action != Action::kAsk) continue;
    if (grants != nullptr && grants->covers(Operation::kInstall, name)) {
      if (granted != nullptr) *granted = true;
      continue;
    }
    verdict.ask(install, SessionGrant::forTarget(Operation::kInstall, name));
  }
  for (const std::string& from : pip.unknown) {
    // Unknown names: allowed where every install is, denied where every one is, else asked.
    if (rules.alwaysAllowed(Operation::kInstall)) continue;
    if (rules.alwaysDenied(Operation::kInstall)) {
      const Decision any = rules.decide(Operation::kInstall, "*");
      return Decision{Action::kDeny, any.source, reasonOf(any) + " (" + what + "from " + from + ")",
                      any.pattern};
    }
    verdict.ask(
        {Action::kAsk, "what pip installs is known only when it runs", what + "from " + from, ""},
        std::nullopt);
  }
  return std::nullopt;
}

}  // namespace

Guard::Guard(Ruleset rules, AskFallback fallback)
    : rules_(std::move(rules)),
      fallback_(fallback),
      file_rules_(std::make_shared<RulesetFileRules>(rules_, fallback_)) {}

Decision Guard::decideSimpleCommand(const SimpleCommand& command) const {
  Decision d = rules_.decide(Operation::kExecute, command.text());
  if (d.action == Action::kDeny) return d;
  const std::vector<std::string_view> names = variablesThatChangeWhatRuns(command);
  if (names.empty()) return d;
  const std::string full = command.fullText();
  Decision named = rules_.decide(Operation::kExecute, full);
  const bool names_all = std::all_of(names.begin(), names.end(), [&](std::string_view name) {
    return named.pattern.find(name) != std::string::npos;
  });
  // A rule that denies the whole stands; one that allows or asks must name every variable.
  if (!named.pattern.empty() && (named.action == Action::kDeny || names_all)) return named;
  const std::string name(names.front());
  return {Action::kDeny, "variables that change what runs",
          name + " changes what runs, and no rule names it for '" + shorten(full) +
              "' (a rule such as \"" + name + "=* " +
              (command.words.empty() ? std::string("*") : command.words.front() + "*") +
              "\" allows it)",
          ""};
}

Decision Guard::decideCommand(std::string_view line, const Env& env, const SessionGrants* grants,
                              std::vector<SessionGrant>* offer, const PathMapper& paths,
                              bool* granted) const {
  SplitResult split = splitCommandLine(line);
  if (split.error) {
    return {Action::kDeny, "bash's grammar",
            "the line is not valid bash (" + bash::describePosition(line, split.error->offset) +
                ": " + split.error->message + ")",
            ""};
  }
  if (!split.fork_bomb.empty()) {
    return {Action::kDeny, "the fork-bomb check",
            "the function '" + split.fork_bomb +
                "' starts copies of itself in parallel, a fork bomb, which is never allowed",
            ""};
  }
  if (!env.empty()) {
    // The variables reach every command of the line, and the shell that runs it.
    std::vector<std::string> words;
    for (const auto& [name, value] : env) words.push_back(name + "=" + value);
    for (SimpleCommand& command : split.commands) {
      command.assignments.insert(command.assignments.begin(), words.begin(), words.end());
    }
    if (split.commands.empty()) split.commands.push_back({{}, words, 0, {}});
  }
  LineVerdict verdict;
  Decision& combined = verdict.combined;
  bool judged = false;
  for (const SimpleCommand& command : split.commands) {
    if (command.words.empty() &&
        std::none_of(command.assignments.begin(), command.assignments.end(),
                     [](const std::string& a) { return changesWhatRuns(assignedName(a)); })) {
      continue;  // harmless variables for a line with no command
    }
    judged = true;
    Decision d = decideSimpleCommand(command);
    if (d.action == Action::kDeny) {
      d.source += " for '" + shorten(command.fullText()) + "'";
      return d;
    }
    if (auto pip = pipInstallOf(command.words)) {
      // What it installs is judged by the install rules too.
      if (auto denied = judgeInstall(rules_, command, *pip, grants, granted, verdict)) {
        return *denied;
      }
    }
    if (!command.unknown.empty()) {
      // Deny rules matched its text; nothing else can be said of it before it runs. (Only the
      // first ask is shown, so only its position is worked out.)
      verdict.all_offered = false;
      if (combined.action == Action::kAllow) {
        combined = {Action::kAsk, "what it runs is known only when the line runs",
                    "'" + shorten(command.text()) + "' (" +
                        bash::describePosition(line, command.offset) + "): " + command.unknown,
                    ""};
      }
      continue;
    }
    if (d.action != Action::kAsk) continue;
    // Session grants speak of commands alone, never of variables that change what runs.
    const bool plain = variablesThatChangeWhatRuns(command).empty();
    if (plain && grants != nullptr && grants->covers(Operation::kExecute, command.text())) {
      if (granted != nullptr) *granted = true;
      spdlog::info("permission: execute allowed for '{}' for this session, as the user said",
                   shorten(command.text()));
      continue;
    }
    verdict.ask(d, plain ? SessionGrant::forCommand(command) : std::optional<SessionGrant>());
  }
  for (const FileAccess& file : split.files) {
    judged = true;
    const std::string key = paths ? paths(file.path) : lexicalKey("", file.path);
    for (const Operation op : {Operation::kRead, Operation::kWrite}) {
      if ((op == Operation::kWrite) != file.write && !(file.op == "<>")) continue;
      Decision d = rules_.decide(op, key);
      const auto where = [&] {
        return "the redirection " + file.op + " at " + bash::describePosition(line, file.offset) +
               (op == Operation::kWrite ? " writes " : " reads ") + displayTarget(key);
      };
      if (d.action == Action::kDeny) {
        d.description = reasonOf(d) + " (" + where() + ")";
        return d;
      }
      if (d.action != Action::kAsk) continue;
      if (grants != nullptr && grants->covers(op, key)) {
        if (granted != nullptr) *granted = true;
        spdlog::info("permission: {} allowed for {} for this session, as the user said",
                     operationName(op), displayTarget(key));
        continue;
      }
      if (combined.action == Action::kAllow) d.description = reasonOf(d) + " (" + where() + ")";
      verdict.ask(d, SessionGrant::forTarget(op, key));
    }
  }
  if (!judged && split.certain) return rules_.decide(Operation::kExecute, "");
  if (!split.certain) {
    verdict.all_offered = false;
    if (combined.action == Action::kAllow) {
      combined = {Action::kAsk, "some of what the line runs cannot be seen before it runs",
                  split.reason, ""};
    }
  }
  if (offer != nullptr && combined.action == Action::kAsk && verdict.all_offered) {
    *offer = std::move(verdict.offered);
  }
  return combined;
}

Decision Guard::decide(Operation op, std::string_view target) const {
  return op == Operation::kExecute ? decideCommand(target, {}) : rules_.decide(op, target);
}

Status Guard::check(Operation op, std::string_view target, Approver* approver,
                    bool* approved) const {
  if (op == Operation::kExecute) return checkCommand(target, {}, "", approver, {}, approved);
  return checkShown(op, target, target, approver, approved);
}

Status Guard::checkInstall(std::string_view name, std::string_view tool, Approver* approver) const {
  return checkShown(Operation::kInstall, name,
                    std::string(tool) + " wants to install " + std::string(name), approver,
                    nullptr);
}

Status Guard::checkShown(Operation op, std::string_view target, std::string_view shown,
                         Approver* approver, bool* approved) const {
  const Decision d = rules_.decide(op, target);
  SessionGrants* grants = approver != nullptr ? approver->grants() : nullptr;
  if (d.action != Action::kAsk || grants == nullptr)
    return enforce(op, d, target, shown, approver, {}, approved);
  if (grants->covers(op, target)) {
    spdlog::info("permission: {} allowed for {} for this session, as the user said",
                 operationName(op), displayTarget(target));
    DecisionTrail::note(op, target, d.action, d.source);
    DecisionTrail::answer("approved earlier for this session");
    if (approved != nullptr) *approved = true;
    return okStatus();
  }
  return enforce(op, d, target, shown, approver, {SessionGrant::forTarget(op, target)}, approved);
}

Status Guard::checkMove(std::string_view from, std::string_view to, Approver* approver) const {
  const Decision a = rules_.decide(Operation::kMove, from);
  const Decision b = rules_.decide(Operation::kMove, to);
  if (a.action == Action::kDeny) return enforce(Operation::kMove, a, from, from, nullptr, {});
  if (b.action == Action::kDeny) return enforce(Operation::kMove, b, to, to, nullptr, {});
  SessionGrants* grants = approver != nullptr ? approver->grants() : nullptr;
  const auto asks = [&](const Decision& d, std::string_view path) {
    return d.action == Action::kAsk &&
           (grants == nullptr || !grants->covers(Operation::kMove, path));
  };
  const std::string both = std::string(from) + " -> " + std::string(to);
  if (!asks(a, from) && !asks(b, to)) {
    spdlog::info("permission: move allowed for '{}' ({}; {})", both, a.source, b.source);
    DecisionTrail::note(Operation::kMove, both, Action::kAllow, a.source + "; " + b.source);
    return okStatus();
  }
  std::vector<SessionGrant> offer;
  if (grants != nullptr) {
    offer.push_back(SessionGrant::forTarget(Operation::kMove, from));
    SessionGrant second = SessionGrant::forTarget(Operation::kMove, to);
    if (second.describe() != offer.front().describe()) offer.push_back(std::move(second));
  }
  return enforce(Operation::kMove, asks(a, from) ? a : b, both, both, approver, offer);
}

Status Guard::checkCommand(std::string_view line, const Env& env, std::string_view cwd,
                           Approver* approver, const PathMapper& paths, bool* approved) const {
  std::string shown(line);
  if (!env.empty()) {
    shown += "\n\nwith these variables:";
    for (const auto& [name, value] : env) shown += "\n  " + name + "=" + value;
  }
  if (!cwd.empty() && cwd != ".") shown += "\n\nin the directory " + std::string(cwd);
  SessionGrants* grants = approver != nullptr ? approver->grants() : nullptr;
  std::vector<SessionGrant> offer;
  const PathMapper relative = [cwd](std::string_view path) { return lexicalKey(cwd, path); };
  bool granted = false;
  const Decision d = decideCommand(line, env, grants, grants != nullptr ? &offer : nullptr,
                                   paths ? paths : relative, &granted);
  if (granted && approved != nullptr) *approved = true;
  return enforce(Operation::kExecute, d, line, shown, approver, offer, approved);
}

Status Guard::enforce(Operation op, const Decision& d, std::string_view target,
                      std::string_view shown, Approver* approver,
                      const std::vector<SessionGrant>& offer, bool* approved) const {
  const std::string what = std::string(operationName(op)) + " " + std::string(actionName(d.action));
  spdlog::info("permission: {} for {} ({})", what, displayTarget(target), d.source);
  DecisionTrail::note(op, target, d.action, d.source);
  const std::string subject = std::string(operationName(op)) + " for " + displayTarget(target);
  if (d.action == Action::kAllow) return okStatus();
  if (d.action == Action::kDeny) {
    return permissionDenied(std::string(operationName(op)) + " denied for " +
                            displayTarget(target) + ": " + reasonOf(d));
  }
  // What asks, and why: "what it runs is known only when the line runs: '$CMD x' (line 1,
  // column 1): its name '$CMD' is an expansion".
  const std::string why = d.source + (d.description.empty() ? "" : ": " + d.description);
  Question question{op, shown, d, {}};
  for (const SessionGrant& grant : offer) question.remember.push_back(grant.describe());
  Result<Answer> answer =
      approver ? approver->approve(question) : Result<Answer>(unimplemented("no approver"));
  if (answer.ok()) {
    const bool yes = *answer != Answer::kNo;
    DecisionTrail::answer(yes ? "approved" : "refused");
    spdlog::info("permission: {} {} by the user{}", subject, yes ? "approved" : "refused",
                 *answer == Answer::kYesForSession ? " for the rest of this session" : "");
    if (*answer == Answer::kYesForSession && approver->grants() != nullptr) {
      for (const SessionGrant& grant : offer) approver->grants()->add(grant);
    }
    if (yes) {
      if (approved != nullptr) *approved = true;
      return okStatus();
    }
    return permissionDenied(subject + " needs approval (" + why + ") and the user declined");
  }
  DecisionTrail::answer(fallback_ == AskFallback::kAllow ? "unanswered: allowed by the fallback"
                                                         : "unanswered: denied by the fallback");
  if (fallback_ == AskFallback::kAllow) {
    spdlog::warn("permission: {} allowed by --ask-fallback allow ({})", subject,
                 answer.status().message());
    if (approved != nullptr) *approved = true;
    return okStatus();
  }
  return permissionDenied(subject + " needs approval (" + why +
                          ") and none was given: " + answer.status().message());
}

bool Guard::hidesFromListings(std::string_view path) const {
  return rules_.action(Operation::kRead, path) == Action::kDeny;
}

}  // namespace byd::permissions
