#include "permissions/decision_trail.h"

#include "common/metrics.h"
#include "common/redact.h"
#include "common/text.h"

namespace byd::permissions {
namespace {

thread_local DecisionTrail* current = nullptr;

std::string shortened(std::string_view s) {
  constexpr size_t kMax = 200;
  return s.size() <= kMax ? std::string(s) : std::string(utf8Truncate(s, kMax)) + "…";
}

}  // namespace

DecisionTrail::DecisionTrail() : outer_(current) { current = this; }

DecisionTrail::~DecisionTrail() { current = outer_; }

void DecisionTrail::note(Operation op, std::string_view target, Action action, std::string rule) {
  metrics::add("byd_permission_decisions_total",
               {std::string(operationName(op)), std::string(actionName(action))});
  if (current == nullptr || current->noted_.size() >= kMax) return;
  // Redacted whole, then cut: a secret the cut would split is not half shown.
  current->noted_.push_back({op, shortened(redactSecrets(target)), action, std::move(rule), ""});
}

void DecisionTrail::answer(std::string answer) {
  if (current == nullptr || current->noted_.empty()) return;
  NotedDecision& last = current->noted_.back();
  if (last.action == Action::kAsk && last.answer.empty()) last.answer = std::move(answer);
}

}  // namespace byd::permissions
