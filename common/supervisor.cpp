#include "common/supervisor.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace byd {

Supervisor::Supervisor(SupervisorOptions options) : options_(std::move(options)) {}

void Supervisor::watch(int fd, short events, Handler handler) {
  watches_.push_back(Watch{fd, events, std::move(handler)});
}

void Supervisor::take(std::string_view data, Stream& stream, std::string& tail) {
  stream.bytes += data.size();
  const size_t cap = options_.max_output;
  const size_t room = stream.head.size() < cap ? cap - stream.head.size() : 0;
  stream.head.append(data.substr(0, room));
  if (data.size() > room) {
    const std::string_view past = data.substr(room);
    const size_t keep = cap / 2;
    if (past.size() >= keep) {
      stream.end.assign(past.substr(past.size() - keep));
    } else {
      stream.end.append(past);
      // Trimmed when twice what is kept, so that appending stays amortised O(1).
      if (stream.end.size() > 2 * keep) stream.end.erase(0, stream.end.size() - keep);
    }
  }
  if (!options_.on_progress) return;
  tail.append(data);
  if (const size_t nl = tail.rfind('\n'); nl != std::string::npos) {
    const size_t before = nl == 0 ? std::string::npos : tail.rfind('\n', nl - 1);
    const size_t begin = before == std::string::npos ? 0 : before + 1;
    latest_line_.assign(tail, begin, nl - begin);
    tail.erase(0, nl + 1);
  }
  if (tail.size() > 8192) tail.erase(0, tail.size() - 4096);  // a long line: its end will do
}

void Supervisor::skipped(bool to_err, uint64_t bytes) {
  Stream& stream = to_err ? err_ : out_;
  if (bytes == 0) return;
  stream.bytes += bytes;
  stream.gap = true;
  stream.end.clear();  // what came before the dropped bytes is not the stream's end
}

void Supervisor::seal(Stream& stream, std::string& out, std::string& end, uint64_t& bytes,
                      bool& truncated) {
  bytes = stream.bytes;
  const size_t keep = options_.max_output / 2;
  if (stream.bytes <= stream.head.size()) {  // whole
    out = std::move(stream.head);
    return;
  }
  truncated = true;
  if (stream.end.size() > keep) stream.end.erase(0, stream.end.size() - keep);
  if (!stream.gap && stream.end.size() < keep && stream.head.size() > keep) {
    // The end continues the head without a gap: it may take the head's last bytes.
    const size_t more = std::min(keep - stream.end.size(), stream.head.size() - keep);
    stream.end.insert(0, stream.head, stream.head.size() - more, more);
  }
  stream.head.resize(std::min(stream.head.size(), keep));
  out = std::move(stream.head);
  end = std::move(stream.end);
}

Captured& Supervisor::captured() {
  if (!sealed_) {
    sealed_ = true;
    seal(out_, captured_.out, captured_.out_end, captured_.out_bytes, captured_.out_truncated);
    seal(err_, captured_.err, captured_.err_end, captured_.err_bytes, captured_.err_truncated);
  }
  return captured_;
}

short Supervisor::readInto(int fd, bool to_err) {
  char buf[1 << 16];
  // A bounded number of reads, so that a command that writes without pause cannot hold the
  // loop away from its deadline.
  for (int round = 0; round < 16; ++round) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      (to_err ? err(std::string_view(buf, n)) : out(std::string_view(buf, n)));
      continue;
    }
    if (n == 0) return 0;
    if (errno == EINTR) continue;
    return errno == EAGAIN ? POLLIN : 0;
  }
  return POLLIN;
}

double Supervisor::elapsedMs() const {
  return std::chrono::duration<double, std::milli>(Clock::now() - options_.start).count();
}

bool Supervisor::run() {
  using std::chrono::milliseconds;
  constexpr milliseconds kMaxWait{50};  // how late a cancel may be seen
  const Clock::time_point deadline = options_.start + options_.timeout;
  Clock::time_point next_step = Clock::time_point::max();
  Clock::time_point next_progress = options_.start + std::chrono::seconds(1);
  std::vector<pollfd> fds;
  while (!watches_.empty()) {
    Clock::time_point now = Clock::now();
    if (now >= finish_at_) break;
    if (step_ == 0 && (now >= deadline || (options_.cancel && options_.cancel->cancelled()))) {
      const bool cancel = options_.cancel && options_.cancel->cancelled();
      (cancel ? captured_.cancelled : captured_.timed_out) = true;
      next_step = now;
    }
    if (now >= next_step) {
      ++step_;
      if (!options_.stop || !options_.stop(step_)) return false;
      next_step = now + options_.grace;
    }
    if (options_.on_progress && now >= next_progress) {
      options_.on_progress(latest_line_);
      next_progress = now + std::chrono::seconds(1);
    }
    Clock::time_point wake = std::min({now + kMaxWait, next_step, finish_at_});
    if (step_ == 0) wake = std::min(wake, deadline);
    if (options_.on_progress) wake = std::min(wake, next_progress);
    fds.clear();
    for (const Watch& w : watches_) fds.push_back(pollfd{w.fd, w.events, 0});
    const auto wait = std::chrono::ceil<milliseconds>(wake - now).count();
    if (poll(fds.data(), fds.size(), static_cast<int>(std::max<int64_t>(wait, 0))) <= 0) continue;
    // Handlers may watch more descriptors: those join the next round.
    const size_t polled = fds.size();
    for (size_t i = 0; i < polled; ++i) {
      if (fds[i].revents == 0) continue;
      watches_[i].events = watches_[i].handler(fds[i].revents);
    }
    watches_.erase(std::remove_if(watches_.begin(), watches_.end(),
                                  [](const Watch& w) { return w.events == 0; }),
                   watches_.end());
  }
  return true;
}

}  // namespace byd
