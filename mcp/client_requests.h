#pragma once
// Requests from the server to the client (elicitation/create), and the matching of the
// client's replies to them. call() sends a request and blocks the calling worker until the
// reply, the deadline, the caller's cancellation, or close(); onReply() is called by the
// reading thread. Thread-safe.

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "common/cancel.h"
#include "common/result.h"
#include "mcp/transport.h"

namespace byd::mcp {

class ClientRequests {
 public:
  explicit ClientRequests(Transport& transport) : transport_(transport) {}

  // The reply's "result", or: DeadlineExceeded (no reply in time), Cancelled (the tool call
  // was cancelled), Unavailable-like FailedPrecondition (the client has gone, or answered with
  // an error).
  Result<nlohmann::json> call(const std::string& method, nlohmann::json params,
                              std::chrono::milliseconds timeout, const CancelToken& cancel);
  // A response message from the client. False when it answers nothing we asked.
  bool onReply(const nlohmann::json& message);
  // The client has gone: every waiting and future call fails at once.
  void close();

 private:
  struct Pending {
    bool done = false;
    nlohmann::json reply;
  };

  Transport& transport_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::shared_ptr<Pending>> pending_;
  uint64_t next_id_ = 1;
  bool closed_ = false;
};

}  // namespace byd::mcp
