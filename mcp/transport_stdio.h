#pragma once
// Newline-delimited JSON-RPC over a pair of file descriptors (stdin/stdout). Only protocol
// messages are written to the output; logs go elsewhere. A line longer than the limit is
// skipped without being buffered and reported to the handler, so a hostile peer cannot make
// the server hold more than `max_frame_bytes`. send() is thread-safe and keeps the order of
// its calls: while one thread writes, messages sent meanwhile queue up and go out together in
// its next write, so many answers ready at once cost one system call and one wake-up of the
// peer, not one each. A peer that stops reading blocks senders once kMaxQueuedBytes wait.

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>

#include "common/unique_fd.h"
#include "mcp/transport.h"

namespace byd::mcp {

class StdioTransport : public Transport {
 public:
  StdioTransport(int in_fd, int out_fd, size_t max_frame_bytes);
  ~StdioTransport() override;

  Status run(MessageHandler& handler) override;
  void send(const nlohmann::json& message) override;
  void stop() override;
  // Runs `fn` once, on the thread that sent it, right after the first message has been written
  // (the server's start-up work that can wait runs after the first answer, not against it).
  // Call before run().
  void afterFirstSend(std::function<void()> fn) { after_first_send_ = std::move(fn); }

 private:
  void consume(std::string_view data, MessageHandler& handler);
  void endLine(MessageHandler& handler);
  // After a write (write_mu_ held): `batch` becomes what queued meanwhile, which is dropped
  // when the write failed.
  void takeQueued(bool sent, std::string& batch);
  // Writes all of `data` to out_fd_; false when the peer has gone.
  bool writeAll(std::string_view data) const;

  const int in_fd_, out_fd_;
  const size_t max_frame_bytes_;
  PipeFds wake_;  // stop() writes to it to end a read that waits
  static constexpr size_t kMaxQueuedBytes = 4 << 20;
  // Messages of about this size and more are written while they are serialized, in pieces of
  // kStreamPiece (the size of a pipe's buffer).
  static constexpr size_t kStreamFrom = 256 << 10;
  static constexpr size_t kStreamPiece = 64 << 10;
  std::mutex write_mu_;
  std::condition_variable drained_;
  bool writing_ = false;  // a thread is in write(2); it takes queued_ when it is done
  bool broken_ = false;   // the peer has gone: nothing more is written
  std::string queued_;
  std::function<void()> after_first_send_;  // taken by the first send() that writes
  // Reader state (run() thread only).
  std::string line_;
  bool discarding_ = false;
  size_t discarded_ = 0;
};

}  // namespace byd::mcp
