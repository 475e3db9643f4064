#include "backends/docker/docker_client.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>

#include <ctime>
#include <mutex>

#include "backends/docker/lazy_libs.h"

namespace byd::docker {
namespace {

using Handle = std::unique_ptr<CURL, void (*)(CURL*)>;

Handle newHandle(const CurlApi& c, const Endpoint& endpoint, const std::string& path) {
  Handle curl(c.easy_init(), c.easy_cleanup);
  if (!curl) return curl;
  if (!endpoint.unix_path.empty()) {
    c.easy_setopt(curl.get(), CURLOPT_UNIX_SOCKET_PATH, endpoint.unix_path.c_str());
  }
  const std::string url = endpoint.base_url + path;
  c.easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
  c.easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
  c.easy_setopt(curl.get(), CURLOPT_CONNECTTIMEOUT_MS, 5000L);
  return curl;
}

Status unreachable(const Endpoint& endpoint, const std::string& why) {
  return failedPrecondition("the Docker engine at " + endpoint.text + " is not reachable (" + why +
                            "): start it (dockerd, or podman system service) or point "
                            "--docker-host or DOCKER_HOST at it");
}

// The engine's error message from a reply body ({"message": ...}), or the body itself.
std::string engineMessage(const Reply& reply) {
  json doc = json::parse(reply.body, nullptr, false);
  if (doc.is_object() && doc.contains("message") && doc["message"].is_string()) {
    return doc["message"].get<std::string>();
  }
  std::string text = reply.body.substr(0, 300);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text.empty() ? "HTTP " + std::to_string(reply.status) : text;
}

class CurlHijacked : public Hijacked {
 public:
  CurlHijacked(Handle curl, int fd) : curl_(std::move(curl)), fd_(fd) {
    // libcurl made the socket non-blocking; its users write whole frames and wait with poll.
    const int flags = fcntl(fd_, F_GETFL);
    if (flags >= 0) fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK);
  }
  int fd() const override { return fd_; }
  void closeWrite() override { shutdown(fd_, SHUT_WR); }

 private:
  Handle curl_;  // owns the socket
  int fd_;
};

// Sends all of `data` on a connect-only handle.
Status sendAll(const CurlApi& c, CURL* curl, int fd, std::string_view data) {
  while (!data.empty()) {
    size_t sent = 0;
    const CURLcode rc = c.easy_send(curl, data.data(), data.size(), &sent);
    if (rc == CURLE_AGAIN) {
      pollfd p = {fd, POLLOUT, 0};
      if (poll(&p, 1, 10000) <= 0) return failedPrecondition("the engine stopped reading");
      continue;
    }
    if (rc != CURLE_OK) return failedPrecondition(c.easy_strerror(rc));
    data.remove_prefix(sent);
  }
  return okStatus();
}

la_ssize_t archiveAppend(struct archive*, void* out, const void* data, size_t n) {
  static_cast<std::string*>(out)->append(static_cast<const char*>(data), n);
  return static_cast<la_ssize_t>(n);
}

}  // namespace

Result<Endpoint> parseHost(std::string_view host) {
  Endpoint e;
  e.text = host.empty() ? "unix:///var/run/docker.sock" : std::string(host);
  std::string_view h = e.text;
  if (h.starts_with("unix://")) {
    e.unix_path = std::string(h.substr(7));
    if (e.unix_path.empty() || e.unix_path[0] != '/') {
      return invalidArgument("docker host " + e.text +
                             ": a unix:// address needs an absolute path");
    }
    e.base_url = "http://localhost";
    return e;
  }
  if (h.starts_with("tcp://")) {
    std::string_view rest = h.substr(6);
    while (rest.ends_with('/')) rest.remove_suffix(1);
    if (rest.empty() || rest.find_first_of("/?#@ ") != std::string_view::npos) {
      return invalidArgument("docker host " + e.text + ": expected tcp://HOST:PORT");
    }
    e.base_url = "http://" + std::string(rest);
    return e;
  }
  return invalidArgument("docker host " + e.text + ": expected unix:///PATH or tcp://HOST:PORT");
}

namespace {

// What a streaming reply's body goes to: the sink once the status is 2xx, else kept for the
// error.
struct StreamState {
  CURL* curl = nullptr;
  const CurlApi* api = nullptr;
  const std::function<bool(std::string_view)>* sink = nullptr;
  std::string* body = nullptr;  // non-2xx replies (and call()'s every reply)
  bool stopped = false;
};

size_t streamBody(char* data, size_t size, size_t n, void* out) {
  auto* st = static_cast<StreamState*>(out);
  long status = 0;
  st->api->easy_getinfo(st->curl, CURLINFO_RESPONSE_CODE, &status);
  if (st->sink == nullptr || status < 200 || status >= 300) {
    st->body->append(data, size * n);
    return size * n;
  }
  if (!(*st->sink)(std::string_view(data, size * n))) {
    st->stopped = true;
    return 0;  // libcurl ends the transfer
  }
  return size * n;
}

}  // namespace

// One request; the body goes to `sink` (when set and the status is 2xx) or into `reply.body`.
static Result<Reply> perform(const Endpoint& endpoint, std::string_view method,
                             const std::string& path, std::string_view body,
                             std::string_view content_type, std::chrono::milliseconds timeout,
                             const std::function<bool(std::string_view)>* sink) {
  BYD_ASSIGN_OR_RETURN(const CurlApi* c, curlApi());
  Handle curl = newHandle(*c, endpoint, path);
  if (!curl) return internalError("cannot make a libcurl handle");
  Reply reply;
  const std::string verb(method);
  c->easy_setopt(curl.get(), CURLOPT_CUSTOMREQUEST, verb.c_str());
  curl_slist* headers = nullptr;
  std::unique_ptr<curl_slist, void (*)(curl_slist*)> header_list(nullptr, c->slist_free_all);
  if (method == "POST" || method == "PUT") {
    headers = c->slist_append(headers, ("Content-Type: " + std::string(content_type)).c_str());
    header_list.reset(headers);
    c->easy_setopt(curl.get(), CURLOPT_HTTPHEADER, headers);
    c->easy_setopt(curl.get(), CURLOPT_POSTFIELDS, body.data());
    c->easy_setopt(curl.get(), CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  }
  StreamState state{curl.get(), c, sink, &reply.body};
  c->easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, streamBody);
  c->easy_setopt(curl.get(), CURLOPT_WRITEDATA, &state);
  c->easy_setopt(curl.get(), CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
  const CURLcode rc = c->easy_perform(curl.get());
  if (state.stopped) return Status(Code::kCancelled, verb + " " + path + " stopped");
  if (rc == CURLE_OPERATION_TIMEDOUT) {
    return Status(Code::kDeadlineExceeded, "the Docker engine did not answer " + verb + " " + path +
                                               " within " + std::to_string(timeout.count() / 1000) +
                                               " s");
  }
  if (rc != CURLE_OK) return unreachable(endpoint, c->easy_strerror(rc));
  c->easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &reply.status);
  return reply;
}

Result<Reply> Client::call(std::string_view method, const std::string& path, std::string_view body,
                           std::string_view content_type, std::chrono::milliseconds timeout) const {
  return perform(endpoint_, method, path, body, content_type, timeout, nullptr);
}

// A reply's status as request() judges it.
static Status judged(std::string_view method, const std::string& path, const Reply& reply) {
  if (reply.status >= 200 && reply.status < 300) return okStatus();
  const std::string what =
      std::string(method) + " " + path.substr(0, path.find('?')) + ": " + engineMessage(reply);
  if (reply.status == 404) return Status(Code::kNotFound, what);
  if (reply.status == 409) return Status(Code::kAlreadyExists, what);
  return failedPrecondition("the Docker engine refused " + what);
}

Status Client::stream(std::string_view method, const std::string& path, std::string_view body,
                      std::string_view content_type, std::chrono::milliseconds timeout,
                      const std::function<bool(std::string_view)>& sink) const {
  BYD_ASSIGN_OR_RETURN(Reply reply,
                       perform(endpoint_, method, path, body, content_type, timeout, &sink));
  return judged(method, path, reply);
}

Result<json> Client::request(std::string_view method, const std::string& path, const json& body,
                             std::chrono::milliseconds timeout) const {
  BYD_ASSIGN_OR_RETURN(Reply reply, call(method, path, body.is_null() ? std::string() : body.dump(),
                                         "application/json", timeout));
  BYD_RETURN_IF_ERROR(judged(method, path, reply));
  if (reply.body.empty()) return json();
  json doc = json::parse(reply.body, nullptr, false);
  if (doc.is_discarded()) {
    return internalError("the Docker engine's answer to " + std::string(method) + " " + path +
                         " is not JSON");
  }
  return doc;
}

Result<std::unique_ptr<Hijacked>> Client::startExec(const std::string& exec_id) const {
  const std::string path = "/exec/" + exec_id + "/start";
  BYD_ASSIGN_OR_RETURN(const CurlApi* c, curlApi());
  Handle curl = newHandle(*c, endpoint_, path);
  if (!curl) return internalError("cannot make a libcurl handle");
  c->easy_setopt(curl.get(), CURLOPT_CONNECT_ONLY, 1L);
  if (CURLcode rc = c->easy_perform(curl.get()); rc != CURLE_OK) {
    return unreachable(endpoint_, c->easy_strerror(rc));
  }
  curl_socket_t fd = CURL_SOCKET_BAD;
  c->easy_getinfo(curl.get(), CURLINFO_ACTIVESOCKET, &fd);
  if (fd == CURL_SOCKET_BAD) return internalError("no socket to the Docker engine");
  const std::string body = R"({"Detach":false,"Tty":false})";
  const std::string host = endpoint_.unix_path.empty() ? endpoint_.base_url.substr(7) : "docker";
  const std::string head = "POST " + path + " HTTP/1.1\r\nHost: " + host +
                           "\r\nContent-Type: application/json\r\nConnection: Upgrade\r\n"
                           "Upgrade: tcp\r\nContent-Length: " +
                           std::to_string(body.size()) + "\r\n\r\n" + body;
  if (Status s = sendAll(*c, curl.get(), fd, head); !s.ok()) {
    return failedPrecondition("starting exec " + exec_id + ": " + s.message());
  }
  // Read the reply's head, and not a byte more: what follows is the process's output.
  std::string reply;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (reply.find("\r\n\r\n") == std::string::npos) {
    if (reply.size() > 16384 || std::chrono::steady_clock::now() > deadline) {
      return failedPrecondition("the Docker engine sent no reply to exec start");
    }
    pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 1000) <= 0) continue;
    char buf[1024];
    const ssize_t peeked = recv(fd, buf, sizeof buf, MSG_PEEK);
    if (peeked <= 0) return failedPrecondition("the Docker engine closed the exec connection");
    const std::string_view seen(buf, peeked);
    const std::string joined = reply + std::string(seen);
    const size_t end = joined.find("\r\n\r\n");
    const size_t take = end == std::string::npos ? peeked : end + 4 - reply.size();
    const ssize_t got = recv(fd, buf, take, 0);
    if (got <= 0) return failedPrecondition("the Docker engine closed the exec connection");
    reply.append(buf, got);
  }
  const std::string status_line = reply.substr(0, reply.find("\r\n"));
  if (status_line.find(" 101 ") == std::string::npos &&
      status_line.find(" 200 ") == std::string::npos) {
    return failedPrecondition("the Docker engine refused exec start: " + status_line);
  }
  return std::unique_ptr<Hijacked>(new CurlHijacked(std::move(curl), fd));
}

std::string urlEncode(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
      out += static_cast<char>(c);
    } else {
      char buf[4];
      snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

Result<std::string> makeTar(const std::vector<TarEntry>& entries) {
  BYD_ASSIGN_OR_RETURN(const ArchiveApi* t, archiveApi());
  std::string out;
  std::unique_ptr<struct archive, int (*)(struct archive*)> a(t->write_new(), t->write_free);
  if (!a) return internalError("cannot make a tar writer");
  t->write_set_format_pax_restricted(a.get());
  if (t->write_open(a.get(), &out, nullptr, archiveAppend, nullptr) != ARCHIVE_OK) {
    return internalError(std::string("tar: ") + t->error_string(a.get()));
  }
  for (const TarEntry& e : entries) {
    std::unique_ptr<archive_entry, void (*)(archive_entry*)> entry(t->entry_new(), t->entry_free);
    t->entry_set_pathname(entry.get(), e.path.c_str());
    t->entry_set_size(entry.get(), static_cast<la_int64_t>(e.content.size()));
    t->entry_set_filetype(entry.get(), AE_IFREG);
    t->entry_set_perm(entry.get(), e.mode);
    t->entry_set_mtime(entry.get(), time(nullptr), 0);
    if (t->write_header(a.get(), entry.get()) != ARCHIVE_OK ||
        t->write_data(a.get(), e.content.data(), e.content.size()) !=
            static_cast<la_ssize_t>(e.content.size())) {
      return internalError(std::string("tar: ") + t->error_string(a.get()));
    }
  }
  if (t->write_close(a.get()) != ARCHIVE_OK) {
    return internalError(std::string("tar: ") + t->error_string(a.get()));
  }
  return out;
}

}  // namespace byd::docker
