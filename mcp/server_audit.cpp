#include <sys/time.h>

#include <ctime>

#include "common/audit_log.h"
#include "common/metrics.h"
#include "common/redact.h"
#include "common/text.h"
#include "mcp/request_scope.h"
#include "mcp/server.h"
#include "mcp/server_helpers.h"
#include "permissions/decision_trail.h"

// Every tool call's line in the audit log (--audit-log) and its metrics: who called (transport,
// tenant, session), the tool, its arguments with secrets redacted, the permission decisions and
// the rules that made them, how long it took and how it ended.

namespace byd::mcp {

using namespace detail;
namespace {

using permissions::Action;
using permissions::NotedDecision;

// Now, as 2026-12-04T15:40:01.123Z.
std::string utcNow() {
  timeval tv{};
  gettimeofday(&tv, nullptr);
  tm parts{};
  gmtime_r(&tv.tv_sec, &parts);
  char buf[40];
  const size_t n = strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &parts);
  snprintf(buf + n, sizeof buf - n, ".%03dZ", static_cast<int>(tv.tv_usec / 1000));
  return buf;
}

// Whether a noted decision let the operation through.
bool allowed(const NotedDecision& d) {
  if (d.action == Action::kAllow) return true;
  if (d.action == Action::kDeny) return false;
  return d.answer == "approved" || d.answer == "approved earlier for this session" ||
         d.answer == "unanswered: allowed by the fallback";
}

// The text of an error result (its first text content), redacted and cut.
std::string errorText(const Result<json>& result) {
  if (!result.ok()) return result.status().message();
  const json content = result->value("content", json::array());
  if (content.is_array() && !content.empty() && content[0].is_object()) {
    return content[0].value("text", "");
  }
  return "";
}

}  // namespace

void Server::markOperatorRequest(const json& id) {
  std::lock_guard lock(activity_mu_);
  if (operator_requests_.size() >= 1024) operator_requests_.clear();  // never answered: dropped
  operator_requests_.insert(idKey(id));
}

bool Server::fromOperatorPage() const {
  const json* id = currentRequest();
  if (id == nullptr) return false;
  std::lock_guard lock(activity_mu_);
  return operator_requests_.contains(idKey(*id));
}

Result<json> Server::runToolCall(const CallToolParams& p, const Caller& caller, Peer* task) {
  const auto start = std::chrono::steady_clock::now();
  bool from_operator = false;
  if (const json* id = currentRequest(); id != nullptr) {
    std::lock_guard lock(activity_mu_);
    from_operator = operator_requests_.erase(idKey(*id)) > 0;
  }
  permissions::DecisionTrail trail;
  Result<json> result = dispatchToolCall(p, caller, task);
  const double ms = msSince(start);

  const std::vector<NotedDecision>& decisions = trail.decisions();
  const NotedDecision* deciding = nullptr;  // the first that refused, else the last
  for (const NotedDecision& d : decisions) {
    if (!allowed(d)) {
      deciding = &d;
      break;
    }
  }
  if (deciding == nullptr && !decisions.empty()) deciding = &decisions.back();
  const bool is_error = !result.ok() || !result->is_object() || result->value("isError", false);
  std::string outcome = "ok";
  if (caller.cancel.cancelled() || (!result.ok() && result.status().code() == Code::kCancelled)) {
    outcome = "cancelled";
  } else if ((deciding != nullptr && !allowed(*deciding)) ||
             (!result.ok() && result.status().code() == Code::kPermissionDenied)) {
    outcome = "denied";
  } else if (is_error) {
    outcome = "error";
  }
  // Names a client made up share one label: the series stay as few as the tools.
  const Tool* known = findTool(p.name);
  const std::string label =
      findCatalogTool(p.name) != nullptr || (known && toolVisible(*known)) ? p.name : "(unknown)";
  metrics::add("byd_tool_calls_total", {label, outcome});
  metrics::observe("byd_tool_call_duration_seconds", {label}, ms / 1000);

  AuditLog* log = AuditLog::global();
  if (log == nullptr && !options_.keep_activity) return result;
  json line = {{"time", utcNow()},
               {"transport", options_.transport_name},
               {"tenant", options_.tenant},
               {"session", session_id_.substr(0, 8)},
               {"session_name", options_.session_name},
               {"via", from_operator ? "operator page" : "client"},
               {"tool", std::string(utf8Truncate(p.name, 100))},
               {"arguments", summarizeArguments(p.arguments)},
               {"duration_ms", std::round(ms * 10) / 10},
               {"outcome", outcome}};
  if (deciding != nullptr) {
    json permission = {{"operation", permissions::operationName(deciding->op)},
                       {"target", deciding->target},  // redacted when noted
                       {"action", permissions::actionName(deciding->action)},
                       {"rule", deciding->rule},
                       {"allowed", allowed(*deciding)}};
    if (!deciding->answer.empty()) permission["answer"] = deciding->answer;
    line["permission"] = std::move(permission);
  }
  if (decisions.size() > 1) line["decisions"] = decisions.size();
  if (outcome != "ok") {
    std::string why = redactSecrets(errorText(result));
    if (why.size() > 300) why = std::string(utf8Truncate(why, 300)) + "…";
    line["error"] = why;
  }
  if (log != nullptr) log->write(line.dump(-1, ' ', false, json::error_handler_t::replace));
  if (options_.keep_activity) {
    constexpr size_t kActivityKept = 200;
    std::lock_guard lock(activity_mu_);
    line["seq"] = ++activity_seq_;
    activity_.push_back(std::move(line));
    if (activity_.size() > kActivityKept) activity_.pop_front();
    activity_cv_.notify_all();
  }
  return result;
}

json Server::recentCalls() const {
  std::lock_guard lock(activity_mu_);
  return json(activity_);
}

json Server::callsAfter(uint64_t seq, std::chrono::milliseconds wait) const {
  std::unique_lock lock(activity_mu_);
  activity_cv_.wait_for(lock, wait, [&] { return activity_seq_ > seq; });
  json lines = json::array();
  for (const json& line : activity_) {
    if (line.value("seq", uint64_t{0}) > seq) lines.push_back(line);
  }
  return lines;
}

}  // namespace byd::mcp
