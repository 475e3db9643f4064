#pragma once
// An in-process transport for dispatcher tests: frames are fed by the test, and everything the
// server sends is kept for inspection. Thread-safe, as the server sends from worker threads.

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "mcp/transport.h"

namespace byd::testing {

class FakeTransport : public mcp::Transport {
 public:
  Status run(mcp::MessageHandler&) override { return okStatus(); }
  void stop() override {}
  void send(const nlohmann::json& message) override {
    std::lock_guard lock(mu_);
    sent_.push_back(message);
    cv_.notify_all();
  }

  void unanswered(const std::string& id) override {
    std::lock_guard lock(mu_);
    unanswered_.push_back(id);
  }

  // The requests (their ids serialized) reported as cancelled with no answer to come, in order.
  std::vector<std::string> unansweredIds() {
    std::lock_guard lock(mu_);
    return unanswered_;
  }

  // All messages sent so far.
  std::vector<nlohmann::json> sent() {
    std::lock_guard lock(mu_);
    return sent_;
  }

  // Waits (up to 20 s) for a response with this id; null json if none came.
  nlohmann::json waitForId(const nlohmann::json& id) {
    std::unique_lock lock(mu_);
    nlohmann::json found;
    cv_.wait_for(lock, std::chrono::seconds(20), [&] {
      for (const auto& m : sent_) {
        if (m.is_object() && m.contains("id") && m["id"] == id) {
          found = m;
          return true;
        }
      }
      return false;
    });
    return found;
  }

  // Waits (up to 20 s) for a message with this method; null json if none came.
  // The `nth` message (from 0) sent with `method`.
  nlohmann::json waitForMethod(const std::string& method, size_t nth = 0) {
    std::unique_lock lock(mu_);
    nlohmann::json found;
    cv_.wait_for(lock, std::chrono::seconds(20), [&] {
      size_t seen = 0;
      for (const auto& m : sent_) {
        if (m.is_object() && m.value("method", "") == method && seen++ == nth) {
          found = m;
          return true;
        }
      }
      return false;
    });
    return found;
  }

  // Waits (up to 20 s) until at least `n` messages were sent.
  bool waitForCount(size_t n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(20), [&] { return sent_.size() >= n; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<nlohmann::json> sent_;
  std::vector<std::string> unanswered_;
};

}  // namespace byd::testing
