#pragma once
// Newline-delimited JSON-RPC over a pair of file descriptors (stdin/stdout). Only protocol
// messages are written to the output; logs go elsewhere. A line longer than the limit is
// skipped without being buffered and reported to the handler, so a hostile peer cannot make
// the server hold more than `max_frame_bytes`. send() is serialized by a mutex.

#include <mutex>

#include "mcp/transport.h"

namespace byd::mcp {

class StdioTransport : public Transport {
 public:
  StdioTransport(int in_fd, int out_fd, size_t max_frame_bytes);
  ~StdioTransport() override;

  Status run(MessageHandler& handler) override;
  void send(const nlohmann::json& message) override;
  void stop() override;

 private:
  void consume(std::string_view data, MessageHandler& handler);
  void endLine(MessageHandler& handler);

  const int in_fd_, out_fd_;
  const size_t max_frame_bytes_;
  int wake_[2] = {-1, -1};
  std::mutex write_mu_;
  // Reader state (run() thread only).
  std::string line_;
  bool discarding_ = false;
  size_t discarded_ = 0;
};

}  // namespace byd::mcp
