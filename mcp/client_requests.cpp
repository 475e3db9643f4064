#include "mcp/client_requests.h"

#include "mcp/json_rpc.h"

namespace byd::mcp {

Result<nlohmann::json> ClientRequests::call(const std::string& method, nlohmann::json params,
                                            std::chrono::milliseconds timeout,
                                            const CancelToken& cancel) {
  auto slot = std::make_shared<Pending>();
  std::string id;
  {
    std::lock_guard lock(mu_);
    if (closed_) return failedPrecondition("the client has closed the connection");
    // Our ids are strings with a prefix, so they never collide with what the client sends.
    id = "byd-" + std::to_string(next_id_++);
    pending_[id] = slot;
  }
  transport_.send(
      {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}});

  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock lock(mu_);
  // Wake up now and then to notice a cancellation, which arrives on another thread.
  while (!slot->done && !closed_ && !cancel.cancelled() &&
         std::chrono::steady_clock::now() < deadline) {
    cv_.wait_until(
        lock, std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(50)));
  }
  pending_.erase(id);
  if (!slot->done) {
    if (cancel.cancelled()) return cancelled("cancelled");
    if (closed_) return failedPrecondition("the client has closed the connection");
    const std::string span = timeout.count() >= 1000 ? std::to_string(timeout.count() / 1000) + " s"
                                                     : std::to_string(timeout.count()) + " ms";
    return Status(Code::kDeadlineExceeded, "no answer within " + span);
  }
  const nlohmann::json& reply = slot->reply;
  if (auto error = reply.find("error"); error != reply.end()) {
    std::string message = "the client answered " + method + " with an error";
    if (error->is_object() && error->contains("message") && (*error)["message"].is_string()) {
      message += ": " + (*error)["message"].get<std::string>();
    }
    return failedPrecondition(message);
  }
  auto result = reply.find("result");
  if (result == reply.end()) return failedPrecondition("the client's answer has no result");
  return *result;
}

bool ClientRequests::onReply(const nlohmann::json& message) {
  auto id = message.find("id");
  if (id == message.end() || !id->is_string()) return false;
  std::lock_guard lock(mu_);
  auto it = pending_.find(id->get<std::string>());
  if (it == pending_.end()) return false;
  it->second->done = true;
  it->second->reply = message;
  cv_.notify_all();
  return true;
}

void ClientRequests::close() {
  std::lock_guard lock(mu_);
  closed_ = true;
  cv_.notify_all();
}

}  // namespace byd::mcp
