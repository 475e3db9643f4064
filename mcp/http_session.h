#pragma once
// The pieces of one HTTP session, for mcp/http_server.cpp alone: the SSE streams it keeps for
// resumption (Exchange), the transport that routes what its dispatcher sends to the right POST
// or stream (SessionTransport), and the session itself.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mcp/http_server.h"
#include "mcp/request_scope.h"
#include "mcp/server.h"
#include "mcp/transport.h"

namespace byd::mcp::http {

using nlohmann::json;

// The messages of one SSE stream (a POST's, or the session's GET stream), in order, kept so
// that a client whose connection dropped can resume with Last-Event-ID: event N of stream S
// has the id "S:N". A POST's stream ends with its response; it may also be abandoned (the
// request was cancelled) or ended with the session.
struct Exchange {
  static constexpr size_t kKept = 4096;  // events kept for resumption, per stream

  explicit Exchange(std::string stream_id) : id(std::move(stream_id)) {}
  const std::string id;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<json> events;
  size_t first = 0;  // the number of events.front()
  bool done = false;
  bool reading = false;  // a connection is streaming it
  bool cut = false;      // the connection streaming it should end now (SSE polling)
  // A stateless request (2026-07-28): its stream has no event ids and cannot be resumed, and
  // the request's id, replaced by one of the server's own (`our_id`) so that clients cannot
  // collide, is given back in what the stream carries.
  bool resumable = true;
  json client_id;
  json our_id;

  size_t end() const { return first + events.size(); }
  void push(json message, bool last) {
    {
      std::lock_guard lock(mu);
      if (done) return;
      events.push_back(std::move(message));
      if (events.size() > kKept) {
        events.pop_front();
        ++first;
      }
      done = last;
    }
    cv.notify_all();
  }
  void finish() {
    {
      std::lock_guard lock(mu);
      done = true;
    }
    cv.notify_all();
  }
};

inline bool isResponse(const json& m) {
  return m.is_object() && m.contains("id") && (m.contains("result") || m.contains("error")) &&
         !m.contains("method");
}

// The result of a successful initialize, or null.
inline const json* resultOfInitialize(const json& m) {
  auto it = m.find("result");
  if (it == m.end() || !it->is_object() || !it->contains("protocolVersion") ||
      !it->contains("serverInfo")) {
    return nullptr;
  }
  return &*it;
}

// Routes what a session's dispatcher sends: a response to the POST that asked, a call's own
// notifications and questions to that call's POST, everything else to the GET stream.
class SessionTransport : public Transport {
 public:
  static constexpr size_t kStreamsKept = 64;  // finished streams kept for resumption

  // Frames come from the HTTP handlers (Server::onFrame), not from a read loop of the
  // transport's own: run() has nothing to read and stop() nothing to stop.
  Status run(MessageHandler&) override { return okStatus(); }
  void stop() override {}

  void send(const json& message) override {
    std::shared_ptr<Exchange> target;
    bool last = false;
    {
      std::lock_guard lock(mu_);
      if (legacy_) {
        target = standalone_;  // HTTP+SSE: everything travels on the one stream
      } else if (message.is_array() && batch_) {
        target = std::move(batch_);  // the answer to the batch in flight
        last = true;
      } else if (isResponse(message)) {
        if (const json* result = resultOfInitialize(message)) {
          version_ = result->value("protocolVersion", "");
        }
        auto it = pending_.find(message["id"].dump());
        if (it != pending_.end()) {
          target = std::move(it->second);
          pending_.erase(it);
          last = true;
        }
      } else if (const json* id = currentRequest()) {
        auto it = pending_.find(id->dump());
        if (it != pending_.end()) target = it->second;
      }
      if (!target && !last) target = standalone_;
    }
    if (!target) return;
    if (target->our_id.is_null()) {
      target->push(message, last);
    } else {
      target->push(withClientId(message, *target), last);
    }
  }

  // SSE polling (2025-11-25): the connection carrying request `id`'s stream ends after what it
  // has sent; the client resumes with Last-Event-ID from the priming event on.
  bool closeStream(const std::string& id) override {
    std::shared_ptr<Exchange> exchange;
    {
      std::lock_guard lock(mu_);
      if (legacy_ || !atLeast(version_, "2025-11-25")) return false;
      auto it = pending_.find(id);
      if (it == pending_.end()) return false;
      exchange = it->second;
    }
    {
      std::lock_guard lock(exchange->mu);
      exchange->cut = true;
    }
    exchange->cv.notify_all();
    return true;
  }

  // Where the answer to request `id` (serialized) will go.
  std::shared_ptr<Exchange> expect(const std::string& id) {
    std::lock_guard lock(mu_);
    auto exchange = std::make_shared<Exchange>("s" + std::to_string(++streams_made_));
    remember(exchange);
    pending_[id] = exchange;
    return exchange;
  }
  // Where the answer to a stateless request will go; `our_id` replaces the client's id.
  std::shared_ptr<Exchange> expectStateless(const json& our_id, const json& client_id) {
    auto exchange = std::make_shared<Exchange>("");
    exchange->resumable = false;
    exchange->our_id = our_id;
    exchange->client_id = client_id;
    std::lock_guard lock(mu_);
    pending_[our_id.dump()] = exchange;
    return exchange;
  }

 private:
  // Keeps `exchange` for resumption, forgetting the oldest finished streams beyond the last few.
  void remember(const std::shared_ptr<Exchange>& exchange) {
    streams_.push_back(exchange);
    auto finished = [](const std::shared_ptr<Exchange>& e) {
      std::lock_guard ex_lock(e->mu);
      return e->done && !e->reading;
    };
    size_t count = std::count_if(streams_.begin(), streams_.end(), finished);
    for (auto it = streams_.begin(); it != streams_.end() && count > kStreamsKept;) {
      if (finished(*it)) {
        it = streams_.erase(it);
        --count;
      } else {
        ++it;
      }
    }
  }

  // `message` as the client of a stateless request should see it: with its own request id,
  // also where a subscription names it.
  static json withClientId(const json& message, const Exchange& exchange) {
    json out = message;
    if (out.is_object() && out.contains("id") && out["id"] == exchange.our_id) {
      out["id"] = exchange.client_id;
    }
    const std::string key(stateless::kMetaSubscriptionId);
    for (const char* where : {"params", "result"}) {
      if (!out.is_object() || !out.contains(where) || !out[where].is_object()) continue;
      json& meta = out[where]["_meta"];
      if (meta.is_object() && meta.contains(key) && meta[key] == exchange.our_id) {
        meta[key] = exchange.client_id;
      }
      if (meta.is_null()) out[where].erase("_meta");
    }
    return out;
  }

 public:
  // Where the answer to the batch now being dispatched will go.
  std::shared_ptr<Exchange> expectBatch() {
    std::lock_guard lock(mu_);
    batch_ = std::make_shared<Exchange>("b");
    return batch_;
  }
  void unanswered(const std::string& id) override { abandon(id); }
  // The request will not be answered (it was cancelled): its POST ends empty.
  void abandon(const std::string& id) {
    std::shared_ptr<Exchange> exchange;
    {
      std::lock_guard lock(mu_);
      auto it = pending_.find(id);
      if (it == pending_.end()) return;
      exchange = std::move(it->second);
      pending_.erase(it);
    }
    exchange->finish();
  }
  // The stream an event id ("S:N") belongs to, or null.
  std::shared_ptr<Exchange> streamOf(const std::string& event_id) {
    const std::string stream = event_id.substr(0, event_id.find(':'));
    std::lock_guard lock(mu_);
    if (stream == standalone_->id) return standalone_;
    for (const auto& exchange : streams_) {
      if (exchange->id == stream) return exchange;
    }
    return nullptr;
  }
  std::shared_ptr<Exchange> standalone() {
    std::lock_guard lock(mu_);
    return standalone_;
  }
  // The protocol version the session's initialize settled on ("" before).
  std::string version() {
    std::lock_guard lock(mu_);
    return version_;
  }
  // The 2024-11-05 HTTP+SSE transport: answers go on the GET stream, not to the POSTs.
  void setLegacy() {
    std::lock_guard lock(mu_);
    legacy_ = true;
  }
  bool legacy() {
    std::lock_guard lock(mu_);
    return legacy_;
  }
  void endAll() {
    std::vector<std::shared_ptr<Exchange>> all;
    {
      std::lock_guard lock(mu_);
      for (auto& [id, exchange] : pending_) all.push_back(exchange);
      pending_.clear();
      if (batch_) all.push_back(std::move(batch_));
      all.insert(all.end(), streams_.begin(), streams_.end());
      all.push_back(standalone_);
    }
    for (auto& exchange : all) exchange->finish();
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Exchange>> pending_;  // by request id
  std::vector<std::shared_ptr<Exchange>> streams_;            // for resumption, oldest first
  std::shared_ptr<Exchange> standalone_ = std::make_shared<Exchange>("g");
  std::shared_ptr<Exchange> batch_;  // the batch in flight, if any
  uint64_t streams_made_ = 0;
  bool legacy_ = false;
  std::string version_;
};

// One MCP session over HTTP: its backend, its dispatcher and the routing of what it sends.
struct Session {
  std::string id;
  const Tenant* tenant = nullptr;  // whose it is (the server's tenants outlive it)
  std::string name;                // the name its client gave it, if any
  SessionBackend backend;
  SessionTransport transport;
  std::unique_ptr<Server> server;
  std::mutex frame_mu;  // the dispatcher takes one frame at a time
  std::mutex batch_mu;  // and one batch at a time
  std::atomic<int> open_requests{0};
  std::atomic<int64_t> last_used{0};  // Clock ticks
  int64_t created = std::chrono::steady_clock::now().time_since_epoch().count();

  void touch() { last_used = std::chrono::steady_clock::now().time_since_epoch().count(); }
  // Held while a POST waits for its answer: the session is not idle then, and its idle time
  // counts from the answer (a call may outlast --session-idle).
  struct Busy {
    explicit Busy(Session& s) : session(s) { ++session.open_requests; }
    ~Busy() {
      session.touch();
      --session.open_requests;
    }
    Busy(const Busy&) = delete;
    Busy& operator=(const Busy&) = delete;
    Session& session;
  };
  // Cancels what runs, wakes every waiting POST and stream, and stops the dispatcher.
  void end() {
    server->clientClosed();
    server->cancelAll();
    transport.endAll();
    server->drain([] { return true; });
  }
};

}  // namespace byd::mcp::http
