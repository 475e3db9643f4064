#include "mcp/transport_stdio.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "mcp/json_rpc.h"

namespace byd::mcp {

StdioTransport::StdioTransport(int in_fd, int out_fd, size_t max_frame_bytes)
    : in_fd_(in_fd), out_fd_(out_fd), max_frame_bytes_(max_frame_bytes) {
  makePipe(wake_, O_CLOEXEC | O_NONBLOCK);  // without it, stop() waits for the input's end
}

StdioTransport::~StdioTransport() = default;

void StdioTransport::stop() {
  if (wake_.write.valid()) {
    const char byte = 1;
    [[maybe_unused]] ssize_t n = write(wake_.write.get(), &byte, 1);
  }
}

void StdioTransport::endLine(MessageHandler& handler) {
  if (discarding_) {
    handler.onOversizedFrame(discarded_);
    discarding_ = false;
    discarded_ = 0;
    return;
  }
  if (!line_.empty() && line_.back() == '\r') line_.pop_back();
  if (line_.find_first_not_of(" \t\r") != std::string::npos) handler.onFrame(line_);
  line_.clear();
}

void StdioTransport::consume(std::string_view data, MessageHandler& handler) {
  while (!data.empty()) {
    const size_t nl = data.find('\n');
    const std::string_view part = data.substr(0, nl);
    if (discarding_) {
      discarded_ += part.size();
    } else if (line_.size() + part.size() > max_frame_bytes_) {
      // Stop buffering: the rest of this line is counted, never stored.
      discarding_ = true;
      discarded_ = line_.size() + part.size();
      line_.clear();
      line_.shrink_to_fit();
    } else {
      line_.append(part);
    }
    if (nl == std::string_view::npos) return;
    endLine(handler);
    data.remove_prefix(nl + 1);
  }
}

Status StdioTransport::run(MessageHandler& handler) {
  char buf[1 << 16];
  while (true) {
    pollfd fds[2] = {{in_fd_, POLLIN, 0}, {wake_.read.get(), POLLIN, 0}};
    if (poll(fds, wake_.read.valid() ? 2 : 1, -1) < 0) {
      if (errno == EINTR) continue;
      return internalError("poll failed");
    }
    if (fds[1].revents & POLLIN) return okStatus();
    const ssize_t n = read(in_fd_, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return internalError("read from stdin failed");
    }
    if (n == 0) {
      // EOF, possibly in the middle of a message: hand over what arrived so the peer gets
      // an answer (a parse error if it was cut short).
      if (discarding_ || !line_.empty()) endLine(handler);
      return okStatus();
    }
    consume(std::string_view(buf, n), handler);
  }
}

void StdioTransport::send(const nlohmann::json& message) {
  std::string batch;
  std::unique_lock lock(write_mu_, std::defer_lock);
  if (const size_t hint = serializedSizeHint(message); hint < kStreamFrom) {
    // Room for it at once (most messages fit 4 KiB), not grown by doubling.
    batch.reserve(std::max<size_t>(4096, hint + 1));
    serializeReserved(message, batch);
    batch += '\n';
    lock.lock();
    drained_.wait(lock, [&] { return !writing_ || queued_.size() < kMaxQueuedBytes; });
    if (broken_) return;
    if (writing_) {
      queued_ += batch;  // the writing thread sends it right after its own
      return;
    }
    writing_ = true;
  } else {
    // A large message is written as it is serialized, a piece at a time: no buffer of its
    // size, and the peer reads its first bytes while the rest is still being written. This
    // thread waits to be the writer, and what others send meanwhile queues behind it.
    lock.lock();
    drained_.wait(lock, [&] { return !writing_; });
    if (broken_) return;
    writing_ = true;
    lock.unlock();
    bool sent = serializeInPieces(message, batch, kStreamPiece,
                                  [this](std::string_view piece) { return writeAll(piece); });
    batch += '\n';
    sent = sent && writeAll(batch);
    lock.lock();
    takeQueued(sent, batch);
  }
  while (!batch.empty()) {
    lock.unlock();
    const bool sent = writeAll(batch);
    lock.lock();
    takeQueued(sent, batch);
  }
  writing_ = false;
  // The queue's buffer is the last batch's; after a large one, let the memory go.
  if (queued_.capacity() > kMaxQueuedBytes / 4) std::string().swap(queued_);
  drained_.notify_all();
  if (after_first_send_) {
    std::function<void()> fn = std::move(after_first_send_);
    after_first_send_ = nullptr;
    lock.unlock();
    fn();
  }
}

void StdioTransport::takeQueued(bool sent, std::string& batch) {
  if (!sent) {
    broken_ = true;  // the peer has gone; nothing more to do
    queued_.clear();
  }
  batch.clear();
  batch.swap(queued_);
  drained_.notify_all();
}

bool StdioTransport::writeAll(std::string_view data) const {
  while (!data.empty()) {
    const ssize_t n = write(out_fd_, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace byd::mcp
