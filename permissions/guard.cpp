#include "permissions/guard.h"

#include <spdlog/spdlog.h>

#include "permissions/command_split.h"

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

}  // namespace

std::string displayTarget(std::string_view target) {
  return "'" + (target.empty() ? std::string(".") : shorten(target)) + "'";
}

Guard::Guard(Ruleset rules, AskFallback fallback) : rules_(std::move(rules)), fallback_(fallback) {}

Decision Guard::decideCommandLine(std::string_view line) const {
  const SplitResult split = splitCommandLine(line);
  Decision combined{Action::kAllow, "every command allowed", ""};
  for (const SimpleCommand& command : split.commands) {
    Decision d = rules_.decide(Operation::kExecute, command.text());
    if (d.action == Action::kDeny) {
      d.source += " for '" + shorten(command.text()) + "'";
      return d;
    }
    if (d.action == Action::kAsk && combined.action == Action::kAllow) combined = d;
  }
  if (split.commands.empty() && split.certain) return rules_.decide(Operation::kExecute, "");
  if (!split.certain && combined.action == Action::kAllow) {
    return {Action::kAsk, "the command line cannot be split with certainty (" + split.reason + ")",
            ""};
  }
  return combined;
}

Decision Guard::decide(Operation op, std::string_view target) const {
  return op == Operation::kExecute ? decideCommandLine(target) : rules_.decide(op, target);
}

Status Guard::check(Operation op, std::string_view target, Approver* approver) const {
  const Decision d = decide(op, target);
  const std::string what = std::string(operationName(op)) + " " + std::string(actionName(d.action));
  spdlog::info("permission: {} for {} ({})", what, displayTarget(target), d.source);
  const std::string subject = std::string(operationName(op)) + " for " + displayTarget(target);
  if (d.action == Action::kAllow) return okStatus();
  if (d.action == Action::kDeny) {
    return permissionDenied(std::string(operationName(op)) + " denied for " +
                            displayTarget(target) + ": " + reasonOf(d));
  }
  Result<bool> answer =
      approver ? approver->approve(op, target, d) : Result<bool>(unimplemented("no approver"));
  if (answer.ok()) {
    spdlog::info("permission: {} {} by the user", subject, *answer ? "approved" : "refused");
    if (*answer) return okStatus();
    return permissionDenied(subject + " needs approval (" + d.source + ") and the user declined");
  }
  if (fallback_ == AskFallback::kAllow) {
    spdlog::warn("permission: {} allowed by --ask-fallback allow ({})", subject,
                 answer.status().message());
    return okStatus();
  }
  return permissionDenied(subject + " needs approval (" + d.source +
                          ") and none was given: " + answer.status().message());
}

bool Guard::hidesFromListings(std::string_view path) const {
  return rules_.decide(Operation::kRead, path).action == Action::kDeny;
}

}  // namespace byd::permissions
