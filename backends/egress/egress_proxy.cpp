#include "backends/egress/egress_proxy.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>

#include <spdlog/spdlog.h>

#include "backends/egress/address_policy.h"
#include "backends/egress/network_policy.h"

namespace byd::egress {
namespace {

constexpr size_t kMaxHead = 64 * 1024;
constexpr int kHeadTimeoutMs = 30'000;
constexpr int kConnectTimeoutMs = 10'000;
constexpr int kMaxConnections = 256;

struct Target {
  std::string host;  // lower-case; an IPv6 literal without brackets
  uint16_t port = 0;
  std::string text() const {
    return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
           std::to_string(port);
  }
};

// Waits until `fd` is ready for `events`; false when the proxy stops, the peer hangs up
// without data, or `timeout_ms` (-1: none) passes.
bool waitFor(int fd, short events, int stop, int timeout_ms) {
  pollfd p[2] = {{fd, events, 0}, {stop, POLLIN, 0}};
  while (true) {
    const int n = poll(p, 2, timeout_ms);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || p[1].revents != 0) return false;
    return true;
  }
}

bool writeAll(int fd, std::string_view data, int stop) {
  while (!data.empty()) {
    const ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN && waitFor(fd, POLLOUT, stop, kHeadTimeoutMs)) continue;
    return false;
  }
  return true;
}

// Reads more of what `fd` sends into `buf`; false at its end, on an error or a timeout.
bool readMore(int fd, std::string& buf, int stop, int timeout_ms) {
  char chunk[16384];
  while (true) {
    const ssize_t n = recv(fd, chunk, sizeof chunk, 0);
    if (n > 0) {
      buf.append(chunk, static_cast<size_t>(n));
      return true;
    }
    if (n == 0) return false;
    if (errno == EINTR) continue;
    if (errno != EAGAIN || !waitFor(fd, POLLIN, stop, timeout_ms)) return false;
  }
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(tolower(static_cast<unsigned char>(c)));
  return out;
}

// "host:port", "[v6]:port", or with `default_port` when it has none.
std::optional<Target> parseAuthority(std::string_view a, int default_port) {
  Target t;
  std::string_view port;
  if (a.starts_with('[')) {
    const size_t close = a.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    t.host = lower(a.substr(1, close - 1));
    const std::string_view rest = a.substr(close + 1);
    if (!rest.empty() && !rest.starts_with(':')) return std::nullopt;
    if (!rest.empty()) port = rest.substr(1);
  } else {
    const size_t colon = a.rfind(':');
    t.host = lower(a.substr(0, colon));
    if (colon != std::string_view::npos) port = a.substr(colon + 1);
  }
  if (t.host.empty() || t.host.size() > 253) return std::nullopt;
  for (char c : t.host) {
    if (!isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_' && c != ':') {
      return std::nullopt;
    }
  }
  if (port.empty()) {
    if (default_port < 0) return std::nullopt;
    t.port = static_cast<uint16_t>(default_port);
    return t;
  }
  unsigned long v = 0;
  for (char c : port) {
    if (!isdigit(static_cast<unsigned char>(c)) || port.size() > 5) return std::nullopt;
    v = v * 10 + static_cast<unsigned long>(c - '0');
  }
  if (v == 0 || v > 65535) return std::nullopt;
  t.port = static_cast<uint16_t>(v);
  return t;
}

// Connects to `address` within the timeout; invalid with errno set on failure.
UniqueFd connectAddress(const sockaddr_storage& address, int stop) {
  UniqueFd fd(socket(address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return fd;
  const socklen_t len = address.ss_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
  if (connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), len) == 0) return fd;
  if (errno != EINPROGRESS) return UniqueFd();
  if (!waitFor(fd.get(), POLLOUT, stop, kConnectTimeoutMs)) {
    errno = ETIMEDOUT;
    return UniqueFd();
  }
  int err = 0;
  socklen_t err_len = sizeof err;
  getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &err_len);
  if (err != 0) {
    errno = err;
    return UniqueFd();
  }
  return fd;
}

// Resolves `target` (the proxy's own lookup) and connects to the first address it may reach.
// Invalid, with `why` set, when none can be reached; `forbidden` then says whether every
// address it has is one the proxy never connects to.
UniqueFd reach(const Target& target, const Verdict& verdict, int stop, std::string& why,
               bool& forbidden) {
  forbidden = false;
  std::vector<sockaddr_storage> candidates;
  sockaddr_storage literal;
  if (parseAddress(target.host, target.port, literal)) {
    candidates.push_back(literal);
  } else {
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_ADDRCONFIG;
    addrinfo* found = nullptr;
    const std::string port = std::to_string(target.port);
    const int rc = getaddrinfo(target.host.c_str(), port.c_str(), &hints, &found);
    if (rc != 0) {
      why = "cannot resolve " + target.host + ": " + gai_strerror(rc);
      return UniqueFd();
    }
    for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
      sockaddr_storage s{};
      memcpy(&s, a->ai_addr, std::min<size_t>(a->ai_addrlen, sizeof s));
      candidates.push_back(s);
    }
    freeaddrinfo(found);
  }
  std::vector<std::string> refused;
  size_t special = 0;
  for (const sockaddr_storage& address : candidates) {
    if (auto no = Proxy::refuses(address, verdict)) {
      refused.push_back(*no);
      ++special;
      continue;
    }
    UniqueFd fd = connectAddress(address, stop);
    if (fd.valid()) return fd;
    refused.push_back(addressText(address) + ": " + strerror(errno));
  }
  forbidden = special == candidates.size();
  why = "cannot reach " + target.text() + " (";
  for (size_t i = 0; i < refused.size(); ++i) why += (i ? "; " : "") + refused[i];
  why += ")";
  return UniqueFd();
}

// Copies bytes both ways until both sides have finished or the proxy stops.
void relay(int a, int b, int stop) {
  bool open[2] = {true, true};  // a->b, b->a
  char buf[65536];
  while (open[0] || open[1]) {
    pollfd p[3] = {{open[0] ? a : -1, POLLIN, 0}, {open[1] ? b : -1, POLLIN, 0}, {stop, POLLIN, 0}};
    if (poll(p, 3, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (p[2].revents != 0) return;
    for (int dir = 0; dir < 2; ++dir) {
      if (!open[dir] || p[dir].revents == 0) continue;
      const int from = dir == 0 ? a : b, to = dir == 0 ? b : a;
      const ssize_t n = recv(from, buf, sizeof buf, 0);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (n <= 0 || !writeAll(to, std::string_view(buf, static_cast<size_t>(n)), stop)) {
        open[dir] = false;
        shutdown(to, SHUT_WR);
        if (n < 0) return;
      }
    }
  }
}

// `outcome`: why it was refused or could not be reached ("" once connected).
void logAttempt(const Target& t, const Verdict& v, bool refused, std::string_view outcome) {
  spdlog::info("network: {} {} ({}){}", refused ? "refused" : "allowed", t.text(), v.rule,
               outcome.empty() ? "" : ": " + std::string(outcome));
}

std::string httpAnswer(int code, std::string_view status, const std::string& body) {
  return "HTTP/1.1 " + std::to_string(code) + " " + std::string(status) +
         "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
}

}  // namespace

std::optional<std::string> Proxy::refuses(const sockaddr_storage& address, const Verdict& verdict) {
  const auto kind = specialAddress(address);
  if (!kind || verdict.names_literal) return std::nullopt;
  return addressText(address) + " is " + *kind + ", which only a rule naming that IP literal opens";
}

Proxy::Proxy(Judge judge) : judge_(std::move(judge)), stop_(eventfd(0, EFD_CLOEXEC)) {}

Proxy::~Proxy() {
  stopping_ = true;
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(stop_.get(), &one, sizeof one);
  for (std::thread& t : acceptors_) t.join();
  std::unique_lock lock(mu_);
  idle_.wait(lock, [this] { return active_.load() == 0; });
}

Status Proxy::serve(UniqueFd listener) {
  if (!stop_.valid()) return resourceExhausted("cannot make an eventfd for the proxy");
  const int fd = listener.get();
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  std::lock_guard lock(mu_);
  listeners_.push_back(std::move(listener));
  acceptors_.emplace_back([this, fd] { acceptLoop(fd); });
  return okStatus();
}

void Proxy::acceptLoop(int listener) {
  while (!stopping_) {
    if (!waitFor(listener, POLLIN, stop_.get(), -1)) return;
    UniqueFd client(accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!client.valid()) {
      if (errno == EINTR || errno == EAGAIN || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE) {
        usleep(100'000);
        continue;
      }
      spdlog::warn("network: the proxy stops accepting: {}", strerror(errno));
      return;
    }
    if (active_.load() >= kMaxConnections) continue;  // closed: the program sees a reset
    {
      std::lock_guard lock(mu_);
      ++active_;
    }
    std::thread([this, c = std::move(client)]() mutable {
      handle(std::move(c));
      std::lock_guard lock(mu_);
      if (--active_ == 0) idle_.notify_all();
    }).detach();
  }
}

void Proxy::handle(UniqueFd client) {
  std::string head;
  if (!readMore(client.get(), head, stop_.get(), kHeadTimeoutMs)) return;
  if (head[0] == 0x05) {
    socks5(client.get(), std::move(head));
  } else {
    http(client.get(), std::move(head));
  }
}

// SOCKS5: a greeting, then one CONNECT.
void Proxy::socks5(int client_fd, std::string head) {
  const int stop = stop_.get();
  while (head.size() < 2 || head.size() < size_t{2} + static_cast<unsigned char>(head[1])) {
    if (!readMore(client_fd, head, stop, kHeadTimeoutMs)) return;
  }
  const size_t methods = static_cast<unsigned char>(head[1]);
  const bool no_auth = head.substr(2, methods).find('\0') != std::string::npos;
  if (!writeAll(client_fd, std::string("\x05") + (no_auth ? '\0' : '\xff'), stop) || !no_auth) {
    return;
  }
  std::string req = head.substr(2 + methods);
  auto need = [&](size_t n) {
    while (req.size() < n) {
      if (!readMore(client_fd, req, stop, kHeadTimeoutMs)) return false;
    }
    return true;
  };
  auto reply = [&](char code) {
    return writeAll(client_fd,
                    std::string("\x05", 1) + code + std::string("\0\x01", 2) + std::string(6, '\0'),
                    stop);
  };
  if (!need(5)) return;
  if (req[1] != 0x01) {  // only CONNECT
    reply(0x07);
    return;
  }
  Target target;
  size_t end = 0;
  const char atyp = req[3];
  if (atyp == 0x01 || atyp == 0x04) {
    const size_t len = atyp == 0x01 ? 4 : 16;
    if (!need(4 + len + 2)) return;
    sockaddr_storage s{};
    if (atyp == 0x01) {
      auto& in = reinterpret_cast<sockaddr_in&>(s);
      in.sin_family = AF_INET;
      memcpy(&in.sin_addr, req.data() + 4, 4);
    } else {
      auto& in6 = reinterpret_cast<sockaddr_in6&>(s);
      in6.sin6_family = AF_INET6;
      memcpy(&in6.sin6_addr, req.data() + 4, 16);
    }
    target.host = addressText(s);
    end = 4 + len;
  } else if (atyp == 0x03) {
    const size_t len = static_cast<unsigned char>(req[4]);
    if (!need(5 + len + 2)) return;
    auto parsed = parseAuthority(req.substr(5, len), 1);
    if (!parsed) {
      reply(0x01);
      return;
    }
    target.host = parsed->host;
    end = 5 + len;
  } else {
    reply(0x08);
    return;
  }
  target.port = static_cast<uint16_t>((static_cast<unsigned char>(req[end]) << 8) |
                                      static_cast<unsigned char>(req[end + 1]));
  const Verdict verdict = judge_(target.host, target.port);
  if (!verdict.allow) {
    logAttempt(target, verdict, true, verdict.reason);
    reply(0x02);  // connection not allowed by ruleset
    return;
  }
  std::string why;
  bool forbidden = false;
  UniqueFd upstream = reach(target, verdict, stop, why, forbidden);
  logAttempt(target, verdict, forbidden, why);
  if (!upstream.valid()) {
    reply(forbidden ? 0x02 : 0x05);
    return;
  }
  if (!reply(0x00)) return;
  const std::string rest = req.substr(end + 2);
  if (!rest.empty() && !writeAll(upstream.get(), rest, stop)) return;
  relay(client_fd, upstream.get(), stop);
}

// HTTP: the request's head first.
void Proxy::http(int client_fd, std::string head) {
  const int stop = stop_.get();
  size_t head_end;
  while ((head_end = head.find("\r\n\r\n")) == std::string::npos) {
    if (head.size() > kMaxHead || !readMore(client_fd, head, stop, kHeadTimeoutMs)) return;
  }
  const auto answer = [&](int code, std::string_view status, const std::string& body) {
    writeAll(client_fd, httpAnswer(code, status, body), stop);
  };
  const size_t line_end = head.find("\r\n");
  const std::string line = head.substr(0, line_end);
  const size_t sp1 = line.find(' '), sp2 = line.rfind(' ');
  if (sp1 == std::string::npos || sp2 == sp1) {
    answer(400, "Bad Request", "backyard-mcp proxy: a malformed request line\n");
    return;
  }
  const std::string method = line.substr(0, sp1);
  const std::string uri = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string version = line.substr(sp2 + 1);
  const bool tunnel = method == "CONNECT";
  std::optional<Target> target;
  std::string path = "/";
  if (tunnel) {
    target = parseAuthority(uri, -1);
  } else if (lower(uri.substr(0, 7)) == "http://") {
    const size_t slash = uri.find('/', 7);
    target = parseAuthority(
        uri.substr(7, slash == std::string::npos ? std::string::npos : slash - 7), 80);
    if (slash != std::string::npos) path = uri.substr(slash);
  } else {
    answer(400, "Bad Request",
           "backyard-mcp proxy: ask for an absolute http:// URL, or CONNECT host:port (for "
           "https)\n");
    return;
  }
  if (!target) {
    answer(400, "Bad Request", "backyard-mcp proxy: not a host and port: " + uri + "\n");
    return;
  }
  const Verdict verdict = judge_(target->host, target->port);
  if (!verdict.allow) {
    logAttempt(*target, verdict, true, verdict.reason);
    answer(403, "Forbidden",
           "backyard-mcp: network denied for " + target->text() + ": " + verdict.reason + " (" +
               verdict.rule + ")\n");
    return;
  }
  std::string why;
  bool forbidden = false;
  UniqueFd upstream = reach(*target, verdict, stop, why, forbidden);
  logAttempt(*target, verdict, forbidden, why);
  if (!upstream.valid()) {
    answer(forbidden ? 403 : 502, forbidden ? "Forbidden" : "Bad Gateway",
           "backyard-mcp: network " + std::string(forbidden ? "denied" : "failed") + " for " +
               target->text() + ": " + why + "\n");
    return;
  }
  std::string rest = head.substr(head_end + 4);
  if (tunnel) {
    if (!writeAll(client_fd, "HTTP/1.1 200 Connection established\r\n\r\n", stop)) return;
  } else {
    // The request as the origin server expects it, one request per connection.
    std::string out = method + " " + path + " " + version + "\r\n";
    size_t at = line_end + 2;
    while (at < head_end) {
      size_t next = head.find("\r\n", at);
      const std::string header = head.substr(at, next - at);
      at = next + 2;
      const std::string name = lower(header.substr(0, header.find(':')));
      if (name.starts_with("proxy-") || name == "connection" || name == "keep-alive") continue;
      out += header + "\r\n";
    }
    out += "Connection: close\r\n\r\n";
    rest = out + rest;
  }
  if (!rest.empty() && !writeAll(upstream.get(), rest, stop)) return;
  relay(client_fd, upstream.get(), stop);
}

CallProxy::CallProxy()
    : proxy_([this](const std::string& host, uint16_t port) {
        std::shared_ptr<NetworkPolicy> policy;
        {
          std::lock_guard lock(mu_);
          policy = policy_;
        }
        if (!policy) return Verdict{false, "network", "no call has opened the network", false};
        return policy->judge(host, port);
      }) {}

void CallProxy::take(const std::shared_ptr<NetworkPolicy>& policy) {
  if (!policy) return;
  std::lock_guard lock(mu_);
  policy_ = policy;
}

std::vector<std::string> proxyEnvironment(uint16_t port) {
  const std::string http = "http://127.0.0.1:" + std::to_string(port);
  const std::string socks = "socks5h://127.0.0.1:" + std::to_string(port);
  return {"http_proxy=" + http,           "https_proxy=" + http,         "HTTP_PROXY=" + http,
          "HTTPS_PROXY=" + http,          "ALL_PROXY=" + socks,          "all_proxy=" + socks,
          "NO_PROXY=localhost,127.0.0.1", "no_proxy=localhost,127.0.0.1"};
}

}  // namespace byd::egress
