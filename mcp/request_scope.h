#pragma once
// The request a thread is working on, for transports that carry a request's notifications and
// questions on the stream that will carry its answer (Streamable HTTP). The dispatcher sets it
// around a tool call; progress, log and elicitation messages sent from that thread then belong
// to the call.

#include <nlohmann/json.hpp>

namespace byd::mcp {

inline thread_local const nlohmann::json* t_current_request = nullptr;

// The id of the request this thread works on, or null.
inline const nlohmann::json* currentRequest() { return t_current_request; }

class RequestScope {
 public:
  explicit RequestScope(const nlohmann::json& id) : saved_(t_current_request) {
    t_current_request = &id;
  }
  ~RequestScope() { t_current_request = saved_; }
  RequestScope(const RequestScope&) = delete;
  RequestScope& operator=(const RequestScope&) = delete;

 private:
  const nlohmann::json* saved_;
};

}  // namespace byd::mcp
