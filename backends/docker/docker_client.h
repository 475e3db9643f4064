#pragma once
// A client of the Docker Engine API (and of Podman's compatible API) over its unix socket or
// plain TCP, with libcurl. JSON requests and replies; exec streams are taken over ("hijacked")
// into a raw connection whose output arrives multiplexed (StreamDemuxer). Every failure names
// what was asked and why: an engine that cannot be reached, an error the engine answered, a
// reply that is not JSON. Thread-safe: each call uses a connection of its own.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace byd::docker {

using nlohmann::json;

// Where the engine listens: "unix:///var/run/docker.sock" or "tcp://host:port".
struct Endpoint {
  std::string unix_path;  // set for unix://
  std::string base_url;   // "http://localhost" for a socket, "http://host:port" for tcp://
  std::string text;       // as given, for messages
};
// DOCKER_HOST syntax; an empty string means the default socket.
Result<Endpoint> parseHost(std::string_view host);

struct Reply {
  long status = 0;
  std::string body;
};

// The engine's raw, bidirectional connection after POST /exec/{id}/start was upgraded: write
// the process's stdin to fd(), read its multiplexed stdout and stderr from it.
class Hijacked {
 public:
  virtual ~Hijacked() = default;
  virtual int fd() const = 0;
  // Ends the process's stdin (shuts the writing half down).
  virtual void closeWrite() = 0;
};

class Client {
 public:
  explicit Client(Endpoint endpoint) : endpoint_(std::move(endpoint)) {}
  const Endpoint& endpoint() const { return endpoint_; }

  // One request; Unavailable when the engine cannot be reached in `timeout`.
  Result<Reply> call(std::string_view method, const std::string& path, std::string_view body = {},
                     std::string_view content_type = "application/json",
                     std::chrono::milliseconds timeout = std::chrono::seconds(60)) const;
  // Like call(), but a 2xx reply's body goes to `sink` as it arrives (`sink` returns false to
  // stop: then Cancelled); any other reply is an error with the engine's message, as request()
  // makes it.
  Status stream(std::string_view method, const std::string& path, std::string_view body,
                std::string_view content_type, std::chrono::milliseconds timeout,
                const std::function<bool(std::string_view)>& sink) const;
  // A JSON request whose reply must have a 2xx status; other statuses become errors with the
  // engine's message (404 NotFound, 409 AlreadyExists, others FailedPrecondition). The reply's
  // JSON, or null for an empty body.
  Result<json> request(std::string_view method, const std::string& path, const json& body = nullptr,
                       std::chrono::milliseconds timeout = std::chrono::seconds(60)) const;
  // POST /exec/{id}/start, upgraded to a raw connection.
  Result<std::unique_ptr<Hijacked>> startExec(const std::string& exec_id) const;

 private:
  Endpoint endpoint_;
};

// Splits the engine's multiplexed stream (8-byte headers: stream, 0, 0, 0, big-endian length)
// into stdout (1) and stderr (2) data. Feed it bytes as they come.
class StreamDemuxer {
 public:
  // Calls `sink(stream, data)` for each complete piece. False when the stream is malformed.
  template <typename Sink>
  bool feed(std::string_view bytes, Sink&& sink) {
    buf_.append(bytes);
    size_t at = 0;
    while (buf_.size() - at >= 8) {
      const auto* h = reinterpret_cast<const unsigned char*>(buf_.data() + at);
      if (h[0] > 2 || h[1] != 0 || h[2] != 0 || h[3] != 0) return false;
      const size_t n = size_t{h[4]} << 24 | size_t{h[5]} << 16 | size_t{h[6]} << 8 | h[7];
      if (buf_.size() - at - 8 < n) break;
      sink(static_cast<int>(h[0]), std::string_view(buf_.data() + at + 8, n));
      at += 8 + n;
    }
    buf_.erase(0, at);
    return true;
  }
  size_t pending() const { return buf_.size(); }

 private:
  std::string buf_;
};

// `s` for a URL's path or query: all but letters, digits and -_.~/ percent-encoded.
std::string urlEncode(std::string_view s);

// A tar archive (for PUT /containers/{id}/archive) of regular files, made with libarchive.
struct TarEntry {
  std::string path;  // relative, e.g. "kernel.py"
  std::string content;
  uint32_t mode = 0644;
};
Result<std::string> makeTar(const std::vector<TarEntry>& entries);

}  // namespace byd::docker
