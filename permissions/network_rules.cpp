#include "permissions/network_rules.h"

#include <arpa/inet.h>

#include <optional>

namespace byd::permissions {
namespace {

bool isLiteral(const std::string& host) {
  unsigned char buf[16];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

// Whether the rule's pattern names `host` itself (an IP literal, no wildcard in its host part).
bool namesLiteral(const std::string& pattern, const std::string& host) {
  if (!isLiteral(host)) return false;
  const size_t colon = pattern.rfind(':');
  std::string named = pattern.substr(0, colon);
  if (named.size() > 2 && named.front() == '[' && named.back() == ']') {
    named = named.substr(1, named.size() - 2);
  }
  return named == host;
}

}  // namespace

std::string NetworkRules::target(const std::string& host, uint16_t port) {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
         std::to_string(port);
}

egress::Verdict NetworkRules::judge(const std::string& host, uint16_t port) {
  const std::string t = target(host, port);
  const Decision d = guard_.ruleset().decide(Operation::kNetwork, t);
  egress::Verdict v{false, d.source, d.description.empty() ? "no rule allows it" : d.description,
                    namesLiteral(d.pattern, host)};
  if (d.action == Action::kAllow) {
    v.allow = true;
  } else if (d.action == Action::kAsk) {
    std::lock_guard lock(mu_);
    SessionGrants* grants = approver_ != nullptr ? approver_->grants() : nullptr;
    std::optional<bool> known = grants != nullptr ? grants->networkAnswer(t) : std::nullopt;
    if (const auto it = answers_.find(t); !known && it != answers_.end()) known = it->second;
    if (known) {
      answers_[t] = *known;  // so that it holds here after the call too
      v.allow = *known;
      v.reason = v.allow ? "" : "the user said no for this session";
    } else {
      const Status s =
          guard_.confirm(Operation::kNetwork, t, tool_ + " wants to reach " + t, d, approver_);
      v.allow = s.ok();
      if (!s.ok()) v.reason = s.message();
      if (grants != nullptr) {  // an answer from the user, not the fallback's
        answers_[t] = v.allow;
        grants->setNetworkAnswer(t, v.allow);
      }
    }
  }
  return v;
}

void NetworkRules::detach() {
  std::lock_guard lock(mu_);
  approver_ = nullptr;
}

}  // namespace byd::permissions
