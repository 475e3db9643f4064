#include "permissions/session_grants.h"

#include <algorithm>

#include <re2/re2.h>

#include "backends/backend.h"

namespace byd::permissions {
namespace {

bool plainWord(std::string_view word) {
  return !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == ':';
  });
}

bool literalInPattern(std::string_view word) {
  return !word.empty() && word.find_first_of("*?") == std::string_view::npos;
}

}  // namespace

SessionGrant SessionGrant::forTarget(Operation op, std::string_view target) {
  if (op == Operation::kPython || op == Operation::kExecute) {
    return {op, Kind::kAnyCode, ""};
  }
  const size_t slash = target.rfind('/');
  if (slash == std::string_view::npos || slash == 0) return {op, Kind::kExact, std::string(target)};
  return {op, Kind::kUnder, std::string(target.substr(0, slash))};
}

std::optional<SessionGrant> SessionGrant::forCommand(const SimpleCommand& command) {
  if (command.words.empty() || !literalInPattern(command.words[0])) return std::nullopt;
  std::string pattern = command.words[0];
  if (command.words.size() > 1 && plainWord(command.words[1])) pattern += " " + command.words[1];
  return SessionGrant{Operation::kExecute, Kind::kCommands, pattern + "*"};
}

std::string SessionGrant::describe() const {
  const std::string name(operationName(op));
  switch (kind) {
    case Kind::kUnder:
      return name + " under '" + text + "/**'";
    case Kind::kExact:
      return name + " of '" + (text.empty() ? std::string(".") : text) + "'";
    case Kind::kCommands:
      return name + " of commands matching '" + text + "'";
    case Kind::kAnyCode:
      return name + " of any code";
  }
  return name;
}

SessionGrants::SessionGrants() = default;
SessionGrants::~SessionGrants() = default;

bool SessionGrants::covers(Operation op, std::string_view target) const {
  std::lock_guard lock(mu_);
  return std::any_of(entries_.begin(), entries_.end(), [&](const Entry& e) {
    if (e.grant.op != op) return false;
    std::string rest;
    switch (e.grant.kind) {
      case SessionGrant::Kind::kUnder:
        return stripDirPrefix(target, e.grant.text, &rest) && !rest.empty();
      case SessionGrant::Kind::kExact:
        return target == e.grant.text;
      case SessionGrant::Kind::kCommands:
        return e.re != nullptr && RE2::FullMatch(target, *e.re);
      case SessionGrant::Kind::kAnyCode:
        return true;
    }
    return false;
  });
}

void SessionGrants::add(const SessionGrant& grant) {
  Entry entry{grant, nullptr};
  if (grant.kind == SessionGrant::Kind::kCommands) {
    RE2::Options options;
    options.set_log_errors(false);
    options.set_dot_nl(true);
    auto re = std::make_shared<const RE2>(commandPatternToRegex(grant.text), options);
    if (!re->ok()) return;  // forCommand() quotes every literal; cannot happen
    entry.re = std::move(re);
  }
  std::lock_guard lock(mu_);
  entries_.push_back(std::move(entry));
}

std::vector<SessionGrant> SessionGrants::all() const {
  std::lock_guard lock(mu_);
  std::vector<SessionGrant> out;
  for (const Entry& e : entries_) out.push_back(e.grant);
  return out;
}

std::optional<bool> SessionGrants::networkAnswer(const std::string& target) const {
  std::lock_guard lock(mu_);
  const auto it = network_.find(target);
  if (it == network_.end()) return std::nullopt;
  return it->second;
}

void SessionGrants::setNetworkAnswer(const std::string& target, bool allowed) {
  std::lock_guard lock(mu_);
  network_[target] = allowed;
}

}  // namespace byd::permissions
