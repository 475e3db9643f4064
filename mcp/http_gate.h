#pragma once
// The HTTP transport's front door against slow and greedy clients, before any token is
// checked. cpp-httplib gives every connection a thread that blocks on its reads, each read
// bounded but not the request: a client sending a header line every few seconds held a thread
// for as long as it liked, and 64 such clients starved /healthz. Here:
// - each request (its headers and body) must arrive within one deadline from its first byte;
// - connections are served by threads made on demand up to a total cap, and counted per client
//   address: the excess is refused at once with 503, never queued behind the slow ones.
// GatedServer is an httplib::Server that serves its connections this way; thread-safe as
// httplib::Server is.

#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <map>
#include <mutex>
#include <string>

namespace byd::mcp {

// Whether a peer address (as cpp-httplib gives it: "127.0.0.1", "::1", "::ffff:127.0.0.1") is
// this machine's loopback: 127.0.0.0/8, ::1, or 127.0.0.0/8 mapped into IPv6.
bool isLoopbackAddress(const std::string& address);

struct GateOptions {
  std::chrono::milliseconds request_deadline{30000};  // --read-timeout
  size_t max_connections = 1024;                      // open at once, in total
  size_t max_connections_per_address = 256;           // open at once, from one address
};

// Threads made on demand, kept while work comes, up to a cap; past it, a task runs at once on
// the accepting thread, which GatedServer takes as "refuse this connection".
class ElasticTaskQueue : public httplib::TaskQueue {
 public:
  explicit ElasticTaskQueue(size_t max_threads) : max_threads_(max_threads) {}
  ~ElasticTaskQueue() override { shutdown(); }
  void enqueue(std::function<void()> fn) override;
  void shutdown() override;
  // True on the accepting thread while it runs a task it had no thread for.
  static bool overCapacity();

 private:
  void work();

  const size_t max_threads_;
  std::mutex mu_;
  std::condition_variable cv_, done_;
  std::vector<std::function<void()>> jobs_;
  size_t threads_ = 0, idle_ = 0;
  bool stopping_ = false;
};

class GatedServer : public httplib::Server {
 public:
  explicit GatedServer(GateOptions options) : options_(options) {}
  const GateOptions& gateOptions() const { return options_; }

 private:
  bool process_and_close_socket(socket_t sock) override;
  // Answers `status` with a short JSON-RPC error and closes, without reading the request.
  static void refuse(socket_t sock, int status, const char* why);
  bool admitAddress(const std::string& address);
  void releaseAddress(const std::string& address);

  const GateOptions options_;
  std::mutex mu_;
  std::map<std::string, size_t> per_address_;
};

}  // namespace byd::mcp
