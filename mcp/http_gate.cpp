#include "mcp/http_gate.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <thread>

#include <spdlog/spdlog.h>

#include "common/unique_fd.h"

namespace byd::mcp {
namespace {

using Clock = std::chrono::steady_clock;

thread_local bool t_over_capacity = false;

int millisUntil(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() <= 0 ? 0 : static_cast<int>(std::min<int64_t>(left.count(), 1 << 30));
}

bool waitFor(int sock, short events, Clock::time_point deadline) {
  while (true) {
    pollfd p{sock, events, 0};
    const int n = ::poll(&p, 1, millisUntil(deadline));
    if (n > 0) return true;
    if (n == 0 || errno != EINTR) return false;
  }
}

void addressOf(const sockaddr_storage& addr, std::string& ip, int& port) {
  char text[INET6_ADDRSTRLEN] = "";
  if (addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &a->sin_addr, text, sizeof text);
    port = ntohs(a->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof text);
    port = ntohs(a->sin6_port);
  }
  ip = text;
}

// An answer's head (status line and headers, ending "\r\n\r\n") that says the connection
// ends: its Connection and Keep-Alive headers replaced by "Connection: close".
std::string closingHead(std::string_view head) {
  std::string out;
  size_t at = 0;
  while (at < head.size()) {
    size_t end = head.find("\r\n", at);
    if (end == std::string_view::npos) end = head.size();
    const std::string_view line = head.substr(at, end - at);
    at = end + 2;
    if (line.empty()) break;
    const auto named = [&](std::string_view name) {
      return line.size() > name.size() && line[name.size()] == ':' &&
             strncasecmp(line.data(), name.data(), name.size()) == 0;
    };
    if (named("Connection") || named("Keep-Alive")) continue;
    out.append(line).append("\r\n");
  }
  return out + "Connection: close\r\n\r\n";
}

// One connection as httplib reads and writes it. Reads wait no later than the deadline of the
// request being read: a client cannot stretch a request by sending it slowly.
class GateStream : public httplib::Stream {
 public:
  GateStream(int sock, std::chrono::seconds write_timeout)
      : sock_(sock), write_timeout_(write_timeout) {}
  void startRequest(Clock::time_point deadline) {
    deadline_ = deadline;
    status_ = 0;
  }
  // The request being read ran out of time: httplib answers 400, and the connection ends.
  bool expired() const { return expired_; }
  // The status of the answer to the current request (0 before it is written). After an error
  // the connection ends: a request refused before its body was read (a bad Host, no token)
  // leaves that body in the stream, where it would be read as the next request. The answer
  // says so (Connection: close), so that no client sends its next request on the connection
  // while it closes.
  int status() const { return status_; }

  bool is_readable() const override { return buffered() > 0 || waitFor(sock_, POLLIN, deadline_); }
  bool is_writable() const override {
    return waitFor(sock_, POLLOUT, Clock::now() + write_timeout_);
  }
  ssize_t read(char* ptr, size_t size) override {
    if (buffered() == 0) {
      if (!waitFor(sock_, POLLIN, deadline_)) {
        expired_ = true;
        return -1;
      }
      ssize_t n;
      do {
        n = ::recv(sock_, buf_, sizeof buf_, 0);
      } while (n < 0 && errno == EINTR);
      if (n <= 0) return n;
      begin_ = 0;
      end_ = static_cast<size_t>(n);
    }
    const size_t n = std::min(size, buffered());
    memcpy(ptr, buf_ + begin_, n);
    begin_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    if (status_ == 0 && size >= 12 && memcmp(ptr, "HTTP/1.", 7) == 0) {
      status_ = atoi(std::string(ptr + 9, 3).c_str());
      const std::string_view written(ptr, size);
      const size_t end = written.find("\r\n\r\n");
      if (status_ >= 400 && end != std::string_view::npos) {
        const std::string head = closingHead(written.substr(0, end + 4));
        if (!sendAll(head) || !sendAll(written.substr(end + 4))) return -1;
        return static_cast<ssize_t>(size);
      }
    }
    if (!is_writable()) return -1;
    ssize_t n;
    do {
      n = ::send(sock_, ptr, size, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n;
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    if (::getpeername(sock_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      addressOf(addr, ip, port);
    }
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    if (::getsockname(sock_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      addressOf(addr, ip, port);
    }
  }
  socket_t socket() const override { return sock_; }

 private:
  size_t buffered() const { return end_ - begin_; }
  // All of `data`, waiting for room up to the write timeout each time.
  bool sendAll(std::string_view data) {
    while (!data.empty()) {
      if (!is_writable()) return false;
      const ssize_t n = ::send(sock_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  const int sock_;
  const std::chrono::seconds write_timeout_;
  Clock::time_point deadline_ = Clock::now();
  bool expired_ = false;
  int status_ = 0;
  char buf_[16 * 1024];
  size_t begin_ = 0, end_ = 0;
};

}  // namespace

bool isLoopbackAddress(const std::string& address) {
  in_addr v4{};
  if (inet_pton(AF_INET, address.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, address.c_str(), &v6) != 1) return false;
  if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
  return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
}

bool ElasticTaskQueue::overCapacity() { return t_over_capacity; }

void ElasticTaskQueue::enqueue(std::function<void()> fn) {
  std::unique_lock lock(mu_);
  if (!stopping_ && idle_ > jobs_.size()) {
    jobs_.push_back(std::move(fn));
    cv_.notify_one();
    return;
  }
  if (!stopping_ && threads_ < max_threads_) {
    ++threads_;
    jobs_.push_back(std::move(fn));
    std::thread([this] { work(); }).detach();
    return;
  }
  lock.unlock();
  // No thread for it: it runs here, at once, and is refused (see GatedServer).
  t_over_capacity = true;
  fn();
  t_over_capacity = false;
}

void ElasticTaskQueue::work() {
  std::unique_lock lock(mu_);
  while (true) {
    ++idle_;
    // A thread with nothing to do for a while ends; the next burst makes new ones.
    const bool woken =
        cv_.wait_for(lock, std::chrono::seconds(2), [&] { return !jobs_.empty() || stopping_; });
    --idle_;
    if (jobs_.empty()) {
      if (stopping_ || !woken) break;
      continue;
    }
    std::function<void()> fn = std::move(jobs_.front());
    jobs_.erase(jobs_.begin());
    lock.unlock();
    fn();
    lock.lock();
  }
  --threads_;
  done_.notify_all();
}

void ElasticTaskQueue::shutdown() {
  std::unique_lock lock(mu_);
  stopping_ = true;
  cv_.notify_all();
  done_.wait(lock, [&] { return threads_ == 0; });
}

bool GatedServer::admitAddress(const std::string& address) {
  std::lock_guard lock(mu_);
  size_t& n = per_address_[address];
  if (n >= options_.max_connections_per_address) {
    if (n == 0) per_address_.erase(address);
    return false;
  }
  ++n;
  return true;
}

void GatedServer::releaseAddress(const std::string& address) {
  std::lock_guard lock(mu_);
  if (auto it = per_address_.find(address); it != per_address_.end() && --it->second == 0) {
    per_address_.erase(it);
  }
}

void GatedServer::refuse(socket_t sock, int status, const char* why) {
  const std::string body = std::string(R"({"jsonrpc":"2.0","id":null,"error":{"code":-32600,)") +
                           R"("message":")" + why + R"("}})";
  const std::string response = "HTTP/1.1 " + std::to_string(status) +
                               " Service Unavailable\r\nContent-Type: application/json\r\n"
                               "Retry-After: 1\r\nConnection: close\r\nContent-Length: " +
                               std::to_string(body.size()) + "\r\n\r\n" + body;
  [[maybe_unused]] ssize_t n =
      ::send(sock, response.data(), response.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  ::shutdown(sock, SHUT_RDWR);
}

bool GatedServer::process_and_close_socket(socket_t sock) {
  const UniqueFd owned(sock);  // this call closes it, whatever happens
  GateStream stream(sock, std::chrono::seconds(write_timeout_sec_));
  std::string address;
  int port = 0;
  stream.get_remote_ip_and_port(address, port);
  if (ElasticTaskQueue::overCapacity()) {
    spdlog::warn("http: refused a connection from {}: {} connections are open", address,
                 options_.max_connections);
    refuse(sock, 503, "too many connections: try again later");
    return false;
  }
  if (!admitAddress(address)) {
    spdlog::warn("http: refused a connection from {}: it has {} open", address,
                 options_.max_connections_per_address);
    refuse(sock, 503, "too many connections from this address: try again later");
    return false;
  }
  bool ok = false;
  for (size_t left = keep_alive_max_count_; left > 0 && is_running(); --left) {
    // The next request, or the end of an idle kept-alive connection.
    const auto idle_until = Clock::now() + std::chrono::seconds(keep_alive_timeout_sec_);
    bool ready = false;
    while (!ready && is_running() && Clock::now() < idle_until) {
      ready = waitFor(sock, POLLIN,
                      std::min(idle_until, Clock::now() + std::chrono::milliseconds(200)));
    }
    if (!ready) break;
    stream.startRequest(Clock::now() + options_.request_deadline);
    bool closed = false;
    ok = process_request(stream, left == 1, closed, nullptr);
    if (!ok || closed || stream.expired() || stream.status() >= 400) break;
  }
  releaseAddress(address);
  ::shutdown(sock, SHUT_RDWR);
  return ok;
}

}  // namespace byd::mcp
