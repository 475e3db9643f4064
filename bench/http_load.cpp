// A native load client for an MCP server over Streamable HTTP, so that the client is not what
// limits the measured rate: opens CLIENTS keep-alive connections to 127.0.0.1:PORT, gives each
// its own session (initialize, notifications/initialized), then has each send tools/call
// requests of TOOL on PATH one after another until TOTAL have been answered in all, and prints
// {"calls_per_s": ..., "p50_s": ..., "p99_s": ...}. Any answer that is not a 200 with a result
// free of isError stops it (exit 1).
//   http_load PORT TOOL PATH CLIENTS TOTAL
// Built and run by bench/transports.py; bench only, not part of the server.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "load_report.h"

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void die(const std::string& why) {
  fprintf(stderr, "http_load: %s\n", why.c_str());
  exit(1);
}

struct Response {
  int status = 0;
  std::string headers, lower;  // as sent, and lower-cased for lookups
  std::string body;
};

class Connection {
 public:
  explicit Connection(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) die("socket");
    const int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) die("connect");
    host_ = "127.0.0.1:" + std::to_string(port);
  }
  ~Connection() { close(fd_); }
  int fd() const { return fd_; }

  void send(const std::string& body) {
    std::string req = "POST /mcp HTTP/1.1\r\nHost: " + host_ +
                      "\r\nContent-Type: application/json\r\n"
                      "Accept: application/json, text/event-stream\r\n";
    if (!session_.empty()) {
      req += "Mcp-Session-Id: " + session_ + "\r\nMCP-Protocol-Version: 2025-06-18\r\n";
    }
    req += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    size_t at = 0;
    while (at < req.size()) {
      const ssize_t n = write(fd_, req.data() + at, req.size() - at);
      if (n <= 0) die("the server stopped reading");
      at += n;
    }
    sent_at_ = Clock::now();
  }

  // Reads what is there; true once a whole response has arrived (then in `out`).
  bool readSome(Response& out) {
    char chunk[1 << 16];
    const ssize_t n = read(fd_, chunk, sizeof chunk);
    if (n <= 0) die("the server closed a connection");
    buf_.append(chunk, n);
    return take(out);
  }

  // A whole response, blocking.
  Response roundTrip(const std::string& body) {
    send(body);
    Response r;
    while (!readSome(r)) {
    }
    return r;
  }

  void setSession(std::string id) { session_ = std::move(id); }
  Clock::time_point sentAt() const { return sent_at_; }

 private:
  bool take(Response& out) {
    const size_t end = buf_.find("\r\n\r\n");
    if (end == std::string::npos) return false;
    const std::string head = buf_.substr(0, end);
    std::string lower = head;
    for (char& c : lower) c = static_cast<char>(tolower(static_cast<unsigned char>(c)));
    const size_t at = lower.find("\r\ncontent-length:");
    if (at == std::string::npos) die("a response without Content-Length: " + head);
    const size_t length = strtoul(lower.c_str() + at + 17, nullptr, 10);
    if (buf_.size() < end + 4 + length) return false;
    out.status = atoi(head.c_str() + 9);  // "HTTP/1.1 200"
    out.headers = head;
    out.lower = std::move(lower);
    out.body = buf_.substr(end + 4, length);
    buf_.erase(0, end + 4 + length);
    return true;
  }

  int fd_ = -1;
  std::string host_, session_, buf_;
  Clock::time_point sent_at_;
};

// `name` in lower case.
std::string headerValue(const Response& r, const std::string& name) {
  const size_t at = r.lower.find("\r\n" + name + ":");
  if (at == std::string::npos) return "";
  size_t begin = at + name.size() + 3;
  while (begin < r.headers.size() && r.headers[begin] == ' ') ++begin;
  return r.headers.substr(begin, r.headers.find("\r\n", begin) - begin);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) die("usage: http_load PORT TOOL PATH CLIENTS TOTAL");
  const int port = atoi(argv[1]);
  const std::string tool = argv[2], path = argv[3];
  const long clients = atol(argv[4]), total = atol(argv[5]);
  if (path.find_first_of("\"\\") != std::string::npos) die("the path needs no JSON escapes");

  std::vector<Connection*> conns;
  for (long i = 0; i < clients; ++i) {
    auto* c = new Connection(port);
    const Response init = c->roundTrip(
        R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":)"
        R"("2025-06-18","capabilities":{},"clientInfo":{"name":"http_load","version":"1"}}})");
    const std::string id = headerValue(init, "mcp-session-id");
    if (init.status != 200 || id.empty()) die("initialize failed: " + init.body.substr(0, 300));
    c->setSession(id);
    const Response note = c->roundTrip(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
    if (note.status != 202) die("notifications/initialized: " + std::to_string(note.status));
    conns.push_back(c);
  }

  const std::string call = R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":")" +
                           tool + R"(","arguments":{"path":")" + path + "\"}}}";
  std::vector<double> latencies;
  latencies.reserve(total);
  long sent = 0, done = 0;
  const auto start = Clock::now();
  for (Connection* c : conns) {
    if (sent < total) {
      c->send(call);
      ++sent;
    }
  }
  std::vector<pollfd> fds(conns.size());
  while (done < total) {
    for (size_t i = 0; i < conns.size(); ++i) fds[i] = {conns[i]->fd(), POLLIN, 0};
    if (poll(fds.data(), fds.size(), 60000) <= 0) die("no answer within 60 s");
    for (size_t i = 0; i < conns.size(); ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Response r;
      if (!conns[i]->readSome(r)) continue;
      if (r.status != 200 || r.body.find("\"isError\":false") == std::string::npos) {
        die("an error answer: " + std::to_string(r.status) + " " + r.body.substr(0, 300));
      }
      latencies.push_back(std::chrono::duration<double>(Clock::now() - conns[i]->sentAt()).count());
      ++done;
      if (sent < total) {
        conns[i]->send(call);
        ++sent;
      }
    }
  }
  const double took = std::chrono::duration<double>(Clock::now() - start).count();
  for (Connection* c : conns) delete c;
  printLoadReport(std::move(latencies), total, took);
  return 0;
}
