#pragma once
// The ruleset's `network` operation as the egress proxy asks it (backends/egress/): one per
// execute or run_python call. "ask" goes to the call's approver while the call lasts; the
// answer, yes or no, holds for the session (kept with its grants, and here for what this
// object judges after the call). Once the call has ended (detach()),
// connections its code still makes are judged without asking: what was answered holds, the
// rest falls to the ask fallback. Thread-safe.

#include <map>
#include <mutex>
#include <string>

#include "backends/egress/network_policy.h"
#include "permissions/guard.h"

namespace byd::permissions {

class NetworkRules : public egress::NetworkPolicy {
 public:
  // `guard` outlives this object; `approver` (may be null) until detach(). `tool` names the
  // call in the question ("execute wants to reach pypi.org:443").
  NetworkRules(const Guard& guard, Approver* approver, std::string tool)
      : guard_(guard), approver_(approver), tool_(std::move(tool)) {}
  bool open() const override { return !guard_.ruleset().alwaysDenied(Operation::kNetwork); }
  egress::Verdict judge(const std::string& host, uint16_t port) override;
  // The call has ended: nobody can be asked any more.
  void detach();

  // "host:port" as rules see it ("[::1]:443" for an IPv6 literal).
  static std::string target(const std::string& host, uint16_t port);

 private:
  const Guard& guard_;
  std::mutex mu_;
  Approver* approver_;
  const std::string tool_;
  std::map<std::string, bool> answers_;
};

}  // namespace byd::permissions
