#include "mcp/remote_client.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include "backends/docker/lazy_libs.h"
#include "common/text.h"
#include "mcp/json_rpc.h"

namespace byd::mcp {

namespace {

using Clock = std::chrono::steady_clock;
using docker::CurlApi;

constexpr const char* kProtocolVersion = "2025-11-25";
constexpr size_t kMaxBody = 64 << 20;  // of an answer, JSON or an SSE event
constexpr size_t kIdleConnections = 8;
constexpr std::chrono::seconds kShortExchange{10};

// A string member of a remote's object, "" when it is missing or of another type.
std::string stringIn(const json& object, const char* key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

// What the remote's JSON-RPC error code stands for here.
Status remoteError(const json& error) {
  if (!error.is_object()) return internalError("the remote answered an error that is no object");
  const int code =
      error.contains("code") && error["code"].is_number_integer() ? error["code"].get<int>() : 0;
  std::string message = error.contains("message") && error["message"].is_string()
                            ? error["message"].get<std::string>()
                            : "error " + std::to_string(code);
  Status s = code == rpc::kInvalidParams      ? invalidArgument(message)
             : code == rpc::kMethodNotFound   ? unimplemented(message)
             : code == rpc::kInvalidRequest   ? failedPrecondition(message)
             : code == rpc::kResourceNotFound ? notFound(message)
                                              : internalError(message);
  return std::move(s).withDetail(kRemoteErrorDetail, error.dump());
}

// A 401 or 403: the token, or the name the service was reached by (its DNS-rebinding guard
// takes only the names it was given, on the port it listens on).
Status refusedToken(const std::string& where, const std::string& error) {
  if (error.find("Host not allowed") != std::string::npos) {
    return permissionDenied(where + " refused the host name it was reached by (" + error +
                            "): start it with --allow-host naming the host of --remote-url, "
                            "whose port must be the one it listens on");
  }
  return permissionDenied(where + " refused this server's token (" + error + "): see --token-file");
}

bool startsWithNoCase(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() &&
         std::equal(prefix.begin(), prefix.end(), s.begin(),
                    [](char a, char b) { return std::tolower(a) == std::tolower(b); });
}

std::string trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == '\r' || s.back() == '\n' || s.back() == ' ')) {
    s.remove_suffix(1);
  }
  return std::string(s);
}

}  // namespace

// What one POST came to.
struct RemoteClient::Reply {
  enum class Kind {
    kAnswer,       // `message` holds the response (or nothing for an accepted notification)
    kUnreachable,  // never delivered: no connection could be made
    kDropped,      // sent, and the connection ended before the answer
    kUnknownSession,
    kRefused,  // an HTTP error other than the above
    kCancelled,
  };
  Kind kind = Kind::kAnswer;
  json message;
  std::string session;  // Mcp-Session-Id the remote gave
  std::string error;    // what went wrong, for the messages
  long status = 0;
};

namespace {

// libcurl's CURLOPT_SOCKOPTFUNCTION: a connection whose sent bytes go unacknowledged this long
// (TCP_USER_TIMEOUT, counting keep-alive probes) is given up.
int deadPeerTimeout(void* data, curl_socket_t fd, curlsocktype purpose) {
  if (purpose != CURLSOCKTYPE_IPCXN) return CURL_SOCKOPT_OK;
  const auto* limit = static_cast<const std::chrono::milliseconds*>(data);
  const unsigned int ms = static_cast<unsigned int>(limit->count());
  setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof ms);  // best effort (not Unix sockets)
  return CURL_SOCKOPT_OK;
}

// A transfer's state, filled by libcurl's callbacks.
struct Transfer {
  const CurlApi* api = nullptr;
  CURL* easy = nullptr;
  std::string content_type, session;
  std::string body;            // a JSON answer, or the text of an HTTP error
  std::string buffer;          // SSE: the part of a line not yet ended
  std::string data;            // SSE: the data lines of the event being read
  std::vector<json> messages;  // SSE: events read and not yet handled
  bool too_large = false;
  size_t received = 0;

  bool sse() const { return startsWithNoCase(content_type, "text/event-stream"); }

  void line(std::string_view l) {
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    if (l.empty()) {
      if (!data.empty()) {
        json m = json::parse(data, nullptr, false);
        if (!m.is_discarded()) messages.push_back(std::move(m));
        data.clear();
      }
      return;
    }
    if (l.starts_with("data:")) {
      l.remove_prefix(5);
      if (!l.empty() && l.front() == ' ') l.remove_prefix(1);
      if (!data.empty()) data += '\n';
      data.append(l);
      if (data.size() > kMaxBody) too_large = true;
    }
    // id:, event:, retry: and comments (keep-alives) change nothing here.
  }

  static size_t onBody(char* ptr, size_t size, size_t n, void* user) {
    auto* t = static_cast<Transfer*>(user);
    const size_t len = size * n;
    t->received += len;
    if (!t->sse()) {
      if (t->body.size() + len > kMaxBody) {
        t->too_large = true;
        return 0;
      }
      t->body.append(ptr, len);
      return len;
    }
    t->buffer.append(ptr, len);
    size_t start = 0;
    for (size_t nl; (nl = t->buffer.find('\n', start)) != std::string::npos; start = nl + 1) {
      t->line(std::string_view(t->buffer).substr(start, nl - start));
    }
    t->buffer.erase(0, start);
    return t->too_large ? 0 : len;
  }

  static size_t onHeader(char* ptr, size_t size, size_t n, void* user) {
    auto* t = static_cast<Transfer*>(user);
    const std::string_view h(ptr, size * n);
    if (startsWithNoCase(h, "content-type:")) t->content_type = trimmed(h.substr(13));
    if (startsWithNoCase(h, "mcp-session-id:")) t->session = trimmed(h.substr(15));
    return size * n;
  }
};

bool undelivered(CURLcode rc) {
  return rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST ||
         rc == CURLE_COULDNT_RESOLVE_PROXY;
}

}  // namespace

RemoteClient::RemoteClient(RemoteOptions options) : options_(std::move(options)) {}

RemoteClient::~RemoteClient() {
  std::string session;
  {
    std::lock_guard lock(mu_);
    session = session_id_;
  }
  if (!session.empty()) end(session);
  auto api = docker::curlApi();
  if (!api.ok()) return;
  for (const Connection& conn : idle_) {
    (*api)->multi_cleanup(static_cast<CURLM*>(conn.multi));
    (*api)->easy_cleanup(static_cast<CURL*>(conn.easy));
  }
}

std::optional<RemoteClient::Connection> RemoteClient::take() {
  {
    std::lock_guard lock(mu_);
    if (!idle_.empty()) {
      Connection conn = idle_.back();
      idle_.pop_back();
      return conn;
    }
  }
  auto api = docker::curlApi();
  if (!api.ok()) return std::nullopt;
  Connection conn{(*api)->multi_init(), (*api)->easy_init()};
  if (conn.multi != nullptr && conn.easy != nullptr) return conn;
  giveBack(conn, false);
  return std::nullopt;
}

void RemoteClient::giveBack(Connection conn, bool reusable) {
  if (reusable) {
    std::lock_guard lock(mu_);
    if (idle_.size() < kIdleConnections) {
      idle_.push_back(conn);
      return;
    }
  }
  const CurlApi& c = **docker::curlApi();
  if (conn.multi != nullptr) c.multi_cleanup(static_cast<CURLM*>(conn.multi));
  if (conn.easy != nullptr) c.easy_cleanup(static_cast<CURL*>(conn.easy));
}

RemoteClient::Reply RemoteClient::post(const json& message, std::optional<int64_t> id,
                                       const std::string& session, const RemoteCall* call) {
  Reply reply;
  auto api = docker::curlApi();
  if (!api.ok()) {
    reply.kind = Reply::Kind::kRefused;
    reply.error = api.status().message();
    return reply;
  }
  const CurlApi& c = **api;
  const std::optional<Connection> conn = take();
  if (!conn) {
    reply.kind = Reply::Kind::kRefused;
    reply.error = "cannot make a libcurl handle";
    return reply;
  }
  // What the transfer reads and writes outlives the handles, which stop it first.
  const std::string body = message.dump(-1, ' ', false, json::error_handler_t::replace);
  Transfer t;
  // The handles go back with their connection when the exchange ended cleanly.
  struct Held {
    RemoteClient* self;
    const CurlApi& c;
    Connection conn;
    CURLM* multi = static_cast<CURLM*>(conn.multi);
    CURL* easy = static_cast<CURL*>(conn.easy);
    curl_slist* headers = nullptr;
    bool added = false, reusable = false;
    ~Held() {
      if (added) c.multi_remove_handle(multi, easy);
      if (headers) c.slist_free_all(headers);
      self->giveBack(conn, reusable);
    }
  } h{this, c, *conn};
  c.easy_reset(h.easy);
  std::vector<std::string> lines = {"Content-Type: application/json",
                                    "Accept: application/json, text/event-stream"};
  for (std::string& l : sessionHeaders(session)) lines.push_back(std::move(l));
  for (const std::string& l : lines) h.headers = c.slist_append(h.headers, l.c_str());
  t.api = &c;
  t.easy = h.easy;
  c.easy_setopt(h.easy, CURLOPT_URL, options_.url.c_str());
  c.easy_setopt(h.easy, CURLOPT_NOSIGNAL, 1L);
  c.easy_setopt(h.easy, CURLOPT_CONNECTTIMEOUT_MS,
                static_cast<long>(options_.connect_timeout.count()));
  c.easy_setopt(h.easy, CURLOPT_HTTPHEADER, h.headers);
  c.easy_setopt(h.easy, CURLOPT_POSTFIELDS, body.data());
  c.easy_setopt(h.easy, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  c.easy_setopt(h.easy, CURLOPT_WRITEFUNCTION, &Transfer::onBody);
  c.easy_setopt(h.easy, CURLOPT_WRITEDATA, &t);
  c.easy_setopt(h.easy, CURLOPT_HEADERFUNCTION, &Transfer::onHeader);
  c.easy_setopt(h.easy, CURLOPT_HEADERDATA, &t);
  c.easy_setopt(h.easy, CURLOPT_TCP_KEEPALIVE, 1L);
  c.easy_setopt(h.easy, CURLOPT_TCP_KEEPIDLE, 5L);
  c.easy_setopt(h.easy, CURLOPT_TCP_KEEPINTVL, 2L);
  c.easy_setopt(h.easy, CURLOPT_SOCKOPTFUNCTION, &deadPeerTimeout);
  c.easy_setopt(h.easy, CURLOPT_SOCKOPTDATA, &options_.dead_peer_timeout);
  if (call == nullptr) {
    // An exchange nobody waits on (initialize, a notification, an answer): bounded, so a
    // remote that accepts and never answers cannot hold a call, or the session's opening.
    c.easy_setopt(h.easy, CURLOPT_TIMEOUT_MS,
                  static_cast<long>((options_.connect_timeout + kShortExchange).count()));
  }
  c.multi_add_handle(h.multi, h.easy);
  h.added = true;

  std::optional<Clock::time_point> cancelled_at, answered_at;
  std::optional<json> answer;
  CURLcode done = CURLE_OK;
  bool running = true;
  while (running) {
    int still = 0;
    c.multi_perform(h.multi, &still);
    // What the remote sent before its answer, in order.
    for (size_t i = 0; i < t.messages.size(); ++i) {
      json& m = t.messages[i];
      if (!m.is_object()) continue;
      const bool has_id = m.contains("id") && !m["id"].is_null();
      if (has_id && !m.contains("method")) {
        if (id && m["id"] == *id) answer = std::move(m);
        continue;
      }
      if (call != nullptr && !answer) relay(m, *call, session);
    }
    t.messages.clear();
    int queued = 0;
    while (CURLMsg* msg = c.multi_info_read(h.multi, &queued)) {
      if (msg->msg == CURLMSG_DONE) {
        done = msg->data.result;
        running = false;
      }
    }
    if (!running) break;
    if (answer) {
      // The stream ends after the answer; waited for briefly, so its connection can serve again.
      if (!answered_at) answered_at = Clock::now();
      if (Clock::now() - *answered_at > std::chrono::seconds(1)) break;
    } else if (call != nullptr && call->cancel.cancelled()) {
      const auto now = Clock::now();
      if (!cancelled_at) {
        cancelled_at = now;
        // The remote stops the call and answers nothing more; the stream then ends.
        if (id) {
          send({{"jsonrpc", "2.0"},
                {"method", "notifications/cancelled"},
                {"params", {{"requestId", *id}, {"reason", "cancelled by the client"}}}},
               session);
        }
      } else if (now - *cancelled_at > options_.cancel_grace) {
        break;
      }
    }
    int fds = 0;
    c.multi_poll(h.multi, nullptr, 0, 50, &fds);
  }
  c.easy_getinfo(h.easy, CURLINFO_RESPONSE_CODE, &reply.status);
  reply.session = t.session;
  // A transfer left mid-stream would leave its connection with the rest of the stream.
  h.reusable = !running && done == CURLE_OK;
  if (answer) {
    reply.message = std::move(*answer);
    return reply;
  }
  if (cancelled_at) {
    reply.kind = Reply::Kind::kCancelled;
    return reply;
  }
  if (done != CURLE_OK) {
    long sent = 0;  // bytes of the request that went out
    c.easy_getinfo(h.easy, CURLINFO_REQUEST_SIZE, &sent);
    reply.kind = undelivered(done) || sent == 0 ? Reply::Kind::kUnreachable : Reply::Kind::kDropped;
    reply.error = t.too_large ? "its answer is larger than " + humanSize(kMaxBody)
                              : std::string(c.easy_strerror(done));
    return reply;
  }
  if (reply.status == 404 && !session.empty()) {
    reply.kind = Reply::Kind::kUnknownSession;
    return reply;
  }
  if (reply.status < 200 || reply.status >= 300) {
    reply.kind = Reply::Kind::kRefused;
    std::string text = trimmed(t.body.substr(0, 300));
    json as_json = json::parse(t.body, nullptr, false);
    if (as_json.is_object() && as_json.contains("error") && as_json["error"].is_object()) {
      text = as_json["error"].value("message", text);
    }
    reply.error = "HTTP " + std::to_string(reply.status) + (text.empty() ? "" : ": " + text);
    return reply;
  }
  if (!t.sse() && !t.body.empty()) {
    json m = json::parse(t.body, nullptr, false);
    if (m.is_object() && (!id || (m.contains("id") && m["id"] == *id))) {
      reply.message = std::move(m);
      return reply;
    }
  }
  if (id) {
    reply.kind = Reply::Kind::kDropped;
    reply.error = "the answer ended without the call's result";
  }
  return reply;
}

void RemoteClient::relay(const json& m, const RemoteCall& call, const std::string& session) {
  const std::string method = stringIn(m, "method");
  const json params =
      m.contains("params") && m["params"].is_object() ? m["params"] : json::object();
  if (!m.contains("id") || m["id"].is_null()) {
    if (method == "notifications/progress" && call.progress) {
      std::optional<double> total;
      if (params.contains("total") && params["total"].is_number()) total = params["total"];
      const double progress = params.contains("progress") && params["progress"].is_number()
                                  ? params["progress"].get<double>()
                                  : 0.0;
      call.progress(progress, total, stringIn(params, "message"));
    } else if (method == "notifications/message" && call.log) {
      call.log(params);
    }
    return;
  }
  // A request of the remote to the client: the client's answer, sent back in the session.
  Result<json> result = method == "ping" ? Result<json>(json::object())
                        : call.ask       ? call.ask(method, params)
                                         : unimplemented("the client does not answer " + method);
  json response = {{"jsonrpc", "2.0"}, {"id", m["id"]}};
  if (result.ok()) {
    response["result"] = std::move(*result);
  } else {
    const bool unknown = result.status().code() == Code::kUnimplemented;
    response["error"] = {{"code", unknown ? rpc::kMethodNotFound : rpc::kInternalError},
                         {"message", result.status().message()}};
  }
  send(response, session);
}

std::vector<std::string> RemoteClient::sessionHeaders(const std::string& session) {
  std::vector<std::string> lines;
  if (!options_.token.empty()) lines.push_back("Authorization: Bearer " + options_.token);
  if (session.empty()) return lines;
  lines.push_back("Mcp-Session-Id: " + session);
  std::lock_guard lock(mu_);
  if (!protocol_version_.empty()) lines.push_back("MCP-Protocol-Version: " + protocol_version_);
  return lines;
}

void RemoteClient::send(const json& message, const std::string& session) {
  const Reply r = post(message, std::nullopt, session, nullptr);
  if (r.kind != Reply::Kind::kAnswer) {
    spdlog::warn("remote {}: sending {} failed: {}", options_.url,
                 message.value("method", "a response"), r.error);
  }
}

void RemoteClient::end(const std::string& session) {
  auto api = docker::curlApi();
  if (!api.ok()) return;
  const CurlApi& c = **api;
  const std::optional<Connection> conn = take();
  if (!conn) return;
  CURL* easy = static_cast<CURL*>(conn->easy);
  c.easy_reset(easy);
  curl_slist* headers = nullptr;
  for (const std::string& l : sessionHeaders(session)) headers = c.slist_append(headers, l.c_str());
  c.easy_setopt(easy, CURLOPT_URL, options_.url.c_str());
  c.easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
  c.easy_setopt(easy, CURLOPT_CUSTOMREQUEST, "DELETE");
  c.easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
  c.easy_setopt(easy, CURLOPT_TIMEOUT_MS, 2000L);
  c.easy_setopt(
      easy, CURLOPT_WRITEFUNCTION, +[](char*, size_t size, size_t n, void*) { return size * n; });
  // Alone, not in its multi handle: the connection it opens ends with it.
  const CURLcode rc = c.easy_perform(easy);
  if (rc != CURLE_OK) {
    spdlog::debug("remote {}: ending the session failed: {}", options_.url, c.easy_strerror(rc));
  }
  c.slist_free_all(headers);
  giveBack(*conn, false);
}

void RemoteClient::forget(const std::string& id) {
  std::lock_guard lock(mu_);
  if (session_id_ == id) {
    session_id_.clear();
    tools_.reset();
  }
}

Result<std::string> RemoteClient::session(const RemoteCall& call) {
  {
    std::lock_guard lock(mu_);
    if (!session_id_.empty()) return session_id_;
  }
  std::lock_guard opening(open_mu_);
  {
    std::lock_guard lock(mu_);
    if (!session_id_.empty()) return session_id_;  // another call opened it meanwhile
  }
  json capabilities = json::object();
  for (const char* name : {"elicitation", "roots"}) {
    if (call.capabilities.is_object() && call.capabilities.contains(name)) {
      capabilities[name] = call.capabilities[name];
    }
  }
  const json params = {
      {"protocolVersion", kProtocolVersion},
      {"capabilities", capabilities},
      {"clientInfo", {{"name", "backyard-mcp"}, {"version", options_.client_version}}}};
  const int64_t id = next_id_++;
  const json init = {{"jsonrpc", "2.0"}, {"id", id}, {"method", "initialize"}, {"params", params}};
  Reply r;
  auto wait = options_.backoff;
  for (int attempt = 1;; ++attempt) {
    r = post(init, id, "", nullptr);
    if (r.kind != Reply::Kind::kUnreachable || attempt >= options_.attempts ||
        call.cancel.cancelled()) {
      break;
    }
    std::this_thread::sleep_for(wait);
    wait *= 2;
  }
  const std::string where = "the remote service at " + options_.url;
  switch (r.kind) {
    case Reply::Kind::kAnswer:
      break;
    case Reply::Kind::kUnreachable:
      return failedPrecondition(where + " is not reachable: " + r.error + " (tried " +
                                std::to_string(options_.attempts) + " times)");
    case Reply::Kind::kCancelled:
      return cancelled("cancelled");
    default:
      if (r.status == 401 || r.status == 403) return refusedToken(where, r.error);
      return failedPrecondition(where + " did not open a session: " + r.error);
  }
  if (r.message.contains("error")) return remoteError(r.message["error"]);
  if (r.session.empty()) {
    return failedPrecondition(where + " gave no Mcp-Session-Id: it keeps no sessions");
  }
  const json result = r.message.contains("result") && r.message["result"].is_object()
                          ? r.message["result"]
                          : json::object();
  {
    std::lock_guard lock(mu_);
    protocol_version_ = stringIn(result, "protocolVersion");
    if (protocol_version_.empty()) protocol_version_ = kProtocolVersion;
    session_id_ = r.session;
    tools_.reset();
  }
  send({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}, r.session);
  const json info = result.contains("serverInfo") ? result["serverInfo"] : json::object();
  spdlog::info("remote {}: session opened ({} {})", options_.url, stringIn(info, "name"),
               stringIn(info, "version"));
  return r.session;
}

Result<json> RemoteClient::request(const std::string& method, json params, const RemoteCall& call) {
  const std::string where = "the remote service at " + options_.url;
  auto wait = options_.backoff;
  bool renewed = false;
  for (int attempt = 1;;) {
    BYD_ASSIGN_OR_RETURN(const std::string session_id, session(call));
    const int64_t id = next_id_++;
    const json message = {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}};
    Reply r = post(message, id, session_id, &call);
    switch (r.kind) {
      case Reply::Kind::kAnswer:
        if (r.message.contains("error")) return remoteError(r.message["error"]);
        if (!r.message.contains("result") || !r.message["result"].is_object()) {
          return failedPrecondition(where + " answered " + method + " without a result object");
        }
        return r.message["result"];
      case Reply::Kind::kCancelled:
        return cancelled("cancelled");
      case Reply::Kind::kUnknownSession:
        // It had not run the request: a new session runs it, once.
        forget(session_id);
        if (renewed) return failedPrecondition(where + " forgot its session again");
        renewed = true;
        spdlog::warn(
            "remote {}: the session was lost (the service restarted or ended it); "
            "opening a new one",
            options_.url);
        continue;
      case Reply::Kind::kUnreachable:
        if (attempt < options_.attempts && !call.cancel.cancelled()) {
          ++attempt;
          std::this_thread::sleep_for(wait);
          wait *= 2;
          continue;
        }
        return failedPrecondition(where + " is not reachable: " + r.error + " (tried " +
                                  std::to_string(attempt) + " times)");
      case Reply::Kind::kDropped:
        return failedPrecondition("the connection to " + where + " was lost during " + method +
                                  " (" + r.error + "); it may have run there, so it is not " +
                                  "sent again");
      case Reply::Kind::kRefused:
        if (r.status == 401 || r.status == 403) return refusedToken(where, r.error);
        return failedPrecondition(where + " refused " + method + " (" + r.error + ")");
    }
  }
}

Result<json> RemoteClient::callTool(const std::string& name, const json& arguments,
                                    const RemoteCall& call, bool structured) {
  json params = {{"name", name}, {"arguments", arguments}};
  // The remote's progress is relayed under the front's own token; ours only has to be unique.
  if (call.progress) params["_meta"] = {{"progressToken", "p" + std::to_string(next_id_++)}};
  Result<json> result = request("tools/call", std::move(params), call);
  if (!result.ok()) {
    const Status& s = result.status();
    if (s.detail(kRemoteErrorDetail) || s.code() == Code::kCancelled) return result;
    // The service, not the call, failed: the model reads why, as it reads any tool's failure.
    return json{{"content", {{{"type", "text"}, {"text", s.message()}}}}, {"isError", true}};
  }
  if (!structured) result->erase("structuredContent");
  return result;
}

Result<json> RemoteClient::tools(const RemoteCall& call) {
  {
    std::lock_guard lock(mu_);
    if (tools_) return *tools_;
  }
  json all = json::array();
  json cursor;
  std::set<std::string> seen;  // a remote that repeats a cursor ends the listing
  do {
    json params = json::object();
    if (!cursor.is_null()) params["cursor"] = cursor;
    BYD_ASSIGN_OR_RETURN(json page, request("tools/list", std::move(params), call));
    if (page.contains("tools") && page["tools"].is_array()) {
      for (json& tool : page["tools"]) {
        if (tool.is_object()) all.push_back(std::move(tool));
      }
    }
    cursor = page.contains("nextCursor") ? page["nextCursor"] : json();
  } while (cursor.is_string() && !cursor.get<std::string>().empty() &&
           seen.insert(cursor.get<std::string>()).second);
  std::lock_guard lock(mu_);
  tools_ = all;
  return all;
}

}  // namespace byd::mcp
