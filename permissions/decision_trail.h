#pragma once
// The permission decisions made for one tool call, for its line in the audit log: a trail
// lives on the thread that runs the call, and every decision the Guard makes on that thread
// while it lives is noted in it (decisions on other threads, such as a search's per-file
// filtering, are not). Every decision also counts in the metrics, trail or not.

#include <string>
#include <string_view>
#include <vector>

#include "permissions/ruleset.h"

namespace byd::permissions {

struct NotedDecision {
  Operation op;
  std::string target;  // shortened
  Action action;       // as the rules (or a session's grant) said
  std::string rule;    // what decided it: "read rule 3 (**/.env)", "granted for this session"
  // For an ask: "approved", "refused" or "unanswered" (the fallback decided); else "".
  std::string answer;
};

class DecisionTrail {
 public:
  DecisionTrail();
  ~DecisionTrail();
  DecisionTrail(const DecisionTrail&) = delete;
  DecisionTrail& operator=(const DecisionTrail&) = delete;

  const std::vector<NotedDecision>& decisions() const { return noted_; }

  // A decision of the rules, into this thread's trail (if any) and the metrics.
  static void note(Operation op, std::string_view target, Action action, std::string rule);
  // The user's (or the fallback's) answer to the last ask noted on this thread.
  static void answer(std::string answer);

 private:
  static constexpr size_t kMax = 32;  // kept per call; a line that runs many commands keeps these
  DecisionTrail* outer_;
  std::vector<NotedDecision> noted_;
};

}  // namespace byd::permissions
