#include "mcp/http_server.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include <httplib.h>
#include <spdlog/spdlog.h>

#include "common/text.h"
#include "mcp/http_gate.h"
#include "mcp/http_session.h"
#include "mcp/json_rpc.h"
#include "mcp/protocol.h"
#include "mcp/stateless.h"

namespace byd::mcp {
namespace {

using http::Exchange;
using http::isResponse;
using http::Session;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr const char* kSessionHeader = "Mcp-Session-Id";
constexpr const char* kVersionHeader = "MCP-Protocol-Version";
constexpr auto kKeepAlive = std::chrono::seconds(15);

bool equalConstantTime(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < b.size(); ++i) diff |= (i < a.size() ? a[i] : 0) ^ b[i];
  return diff == 0;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// "host[:port]" into its parts; the host keeps IPv6 brackets.
std::pair<std::string, std::string> splitHostPort(const std::string& hostport) {
  const size_t colon = hostport.rfind(':');
  const size_t bracket = hostport.rfind(']');
  if (colon == std::string::npos || (bracket != std::string::npos && colon < bracket)) {
    return {lower(hostport), ""};
  }
  return {lower(hostport.substr(0, colon)), hostport.substr(colon + 1)};
}

void jsonError(httplib::Response& res, int status, int code, const std::string& message) {
  res.status = status;
  res.set_content(serialize(makeError(nullptr, code, message)), "application/json");
}

bool accepts(const httplib::Request& req, const char* type) {
  const std::string accept = lower(req.get_header_value("Accept"));
  return accept.find(type) != std::string::npos || accept.find("*/*") != std::string::npos;
}

std::string sseEvent(const json& message) {
  return "event: message\ndata: " + serialize(message) + "\n\n";
}

}  // namespace

struct HttpServer::Impl {
  HttpOptions options;
  SessionFactory factory;
  Limits limits;
  ServerOptions server_options;
  const permissions::Guard* guard;
  GatedServer http;
  int port = -1;

  mutable std::mutex mu;
  std::map<std::string, std::shared_ptr<Session>> sessions;
  // Requests of the stateless revision share one dispatcher and backend, made when the first
  // arrives; it is no session (no id, never reaped) and ends with the server.
  std::shared_ptr<Session> stateless;
  std::mutex stateless_mu;  // one thread makes it
  std::atomic<uint64_t> stateless_ids{0};
  std::condition_variable reaper_cv;
  bool stopping = false;
  std::thread reaper;

  Impl(HttpOptions o, SessionFactory f, Limits l, ServerOptions s, const permissions::Guard* g)
      : options(std::move(o)),
        factory(std::move(f)),
        limits(l),
        server_options(std::move(s)),
        guard(g),
        http(
            GateOptions{std::chrono::duration_cast<std::chrono::milliseconds>(options.read_timeout),
                        options.max_connections, options.max_connections_per_address}) {}

  // A name without a port stands for its scheme's default port (`default_port`; 0 where the
  // scheme has none), which must be the one this server listens on.
  bool hostAllowed(const std::string& host, const std::string& port_text, int default_port) const {
    if (port_text.empty() ? default_port != port : port_text != std::to_string(port)) return false;
    if (host == "localhost" || host == "127.0.0.1" || host == "[::1]") return true;
    for (const std::string& allowed : options.allowed_hosts) {
      if (lower(allowed) == host) return true;
    }
    return false;
  }

  // Host, Origin and the token; false with the response filled in when the request fails.
  bool admit(const httplib::Request& req, httplib::Response& res) const {
    const auto [host, host_port] = splitHostPort(req.get_header_value("Host"));
    if (!hostAllowed(host, host_port, 80)) {
      jsonError(res, 403, rpc::kInvalidRequest, "Host not allowed");
      return false;
    }
    if (req.has_header("Origin")) {
      const std::string origin = req.get_header_value("Origin");
      const size_t scheme = origin.find("://");
      const auto [o_host, o_port] =
          splitHostPort(scheme == std::string::npos ? "" : origin.substr(scheme + 3));
      const std::string scheme_name = lower(origin.substr(0, scheme));
      const int default_port = scheme_name == "http" ? 80 : scheme_name == "https" ? 443 : 0;
      if (!hostAllowed(o_host, o_port, default_port)) {
        jsonError(res, 403, rpc::kInvalidRequest, "Origin not allowed");
        return false;
      }
    }
    if (!options.token.empty() && req.path != "/healthz") {
      const std::string auth = req.get_header_value("Authorization");
      const std::string prefix = "Bearer ";
      if (auth.size() <= prefix.size() || lower(auth.substr(0, prefix.size())) != "bearer " ||
          !equalConstantTime(auth.substr(prefix.size()), options.token)) {
        res.set_header("WWW-Authenticate", "Bearer realm=\"backyard-mcp\"");
        jsonError(res, 401, rpc::kInvalidRequest, "missing or wrong bearer token");
        return false;
      }
    }
    return true;
  }

  // The session a request names; null with the response filled in when it does not.
  std::shared_ptr<Session> sessionOf(const httplib::Request& req, httplib::Response& res) {
    if (!req.has_header(kSessionHeader)) {
      jsonError(res, 400, rpc::kInvalidRequest, "missing Mcp-Session-Id header");
      return nullptr;
    }
    std::shared_ptr<Session> session = find(req.get_header_value(kSessionHeader));
    if (!session) {
      jsonError(res, 404, rpc::kInvalidRequest, "unknown or ended session");
      return nullptr;
    }
    if (req.has_header(kVersionHeader)) {
      const std::string version = req.get_header_value(kVersionHeader);
      if (std::find(kProtocolVersions.begin(), kProtocolVersions.end(), version) ==
          kProtocolVersions.end()) {
        jsonError(res, 400, rpc::kInvalidRequest, "unsupported MCP-Protocol-Version " + version);
        return nullptr;
      }
    }
    session->touch();
    return session;
  }

  Result<std::shared_ptr<Session>> newSession() {
    {
      std::lock_guard lock(mu);
      if (sessions.size() >= options.max_sessions) {
        return resourceExhausted("too many sessions");
      }
    }
    BYD_ASSIGN_OR_RETURN(std::shared_ptr<Session> session, makeSession(/*stateless=*/false));
    session->id = randomHex(16);
    session->touch();
    std::lock_guard lock(mu);
    sessions[session->id] = session;
    return session;
  }

  // A backend from the factory and a dispatcher on it; `stateless`: for requests of the
  // stateless revision only.
  Result<std::shared_ptr<Session>> makeSession(bool stateless_only) {
    BYD_ASSIGN_OR_RETURN(SessionBackend backend, factory());
    auto session = std::make_shared<Session>();
    session->backend = std::move(backend);
    ServerOptions options = server_options;
    options.stateless_only = stateless_only;
    if (!session->backend.instructions.empty())
      options.instructions = session->backend.instructions;
    session->server = std::make_unique<Server>(session->transport, *session->backend.backend,
                                               limits, options, guard);
    return session;
  }

  // The session with this id, or null.
  std::shared_ptr<Session> find(const std::string& id) const {
    std::lock_guard lock(mu);
    auto it = sessions.find(id);
    return it == sessions.end() ? nullptr : it->second;
  }

  void endStateless() {
    std::shared_ptr<Session> session;
    {
      std::lock_guard lock(mu);
      session = std::move(stateless);
    }
    if (session) session->end();
  }

  void endSession(const std::string& id) {
    std::shared_ptr<Session> session;
    {
      std::lock_guard lock(mu);
      auto it = sessions.find(id);
      if (it == sessions.end()) return;
      session = std::move(it->second);
      sessions.erase(it);
    }
    session->end();
    spdlog::info("http: session {}… ended", id.substr(0, 8));
  }

  // Hands one message to the session's dispatcher and answers the POST.
  void post(const std::shared_ptr<Session>& session, const json& message, const std::string& body,
            httplib::Response& res) {
    const bool request = message.contains("method") && message.contains("id");
    std::shared_ptr<Exchange> exchange;
    if (request) exchange = session->transport.expect(message["id"].dump());
    if (message.value("method", "") == "notifications/cancelled" && message.contains("params") &&
        message["params"].is_object() && message["params"].contains("requestId")) {
      session->transport.abandon(message["params"]["requestId"].dump());
    }
    {
      std::lock_guard lock(session->frame_mu);
      session->server->onFrame(body);
    }
    if (!request) {
      res.status = 202;
      return;
    }
    respond(session, exchange, res);
  }

  // JSON when the answer is the first and only message; otherwise an SSE stream.
  void respond(const std::shared_ptr<Session>& session, const std::shared_ptr<Exchange>& exchange,
               httplib::Response& res) {
    std::unique_lock lock(exchange->mu);
    exchange->cv.wait(lock,
                      [&] { return !exchange->events.empty() || exchange->done || exchange->cut; });
    if (exchange->events.empty() && exchange->done) {  // cancelled: no answer comes
      res.status = 204;
      return;
    }
    if (exchange->done && exchange->events.size() == 1) {
      res.set_content(serialize(exchange->events.front()), "application/json");
      return;
    }
    exchange->reading = true;
    lock.unlock();
    streamEvents(session, exchange, res, 0);
  }

  // Streams `exchange` from event number `from` on, each event with its id; `preamble` goes out
  // first (the legacy transport's endpoint event). The caller has marked it as being read. A
  // legacy session lives as long as its stream.
  void streamEvents(const std::shared_ptr<Session>& session,
                    const std::shared_ptr<Exchange>& exchange, httplib::Response& res, size_t from,
                    std::string preamble = "", bool legacy = false) {
    ++session->open_requests;
    res.set_header("Cache-Control", "no-cache");
    if (!legacy && exchange->resumable && atLeast(session->transport.version(), "2025-11-25")) {
      // 2025-11-25: a priming event (an id, no data) lets the client resume from the start,
      // and `retry` says how soon to reconnect.
      preamble += "id: " + exchange->id + ":" + std::to_string(from) + "\nretry: 1000\ndata: \n\n";
    }
    auto first = std::make_shared<std::string>(std::move(preamble));
    auto cursor = std::make_shared<size_t>(from);
    res.set_chunked_content_provider(
        "text/event-stream",
        [exchange, first, cursor](size_t, httplib::DataSink& sink) {
          if (!first->empty()) {
            const bool ok = sink.write(first->data(), first->size());
            first->clear();
            if (!ok) return false;
          }
          std::unique_lock lock(exchange->mu);
          exchange->cv.wait_for(lock, kKeepAlive, [&] {
            return exchange->end() > *cursor || exchange->done || exchange->cut;
          });
          std::string out;
          *cursor = std::max(*cursor, exchange->first);  // what fell out of the log is gone
          for (; *cursor < exchange->end(); ++*cursor) {
            if (exchange->resumable) {
              out += "id: " + exchange->id + ":" + std::to_string(*cursor + 1) + "\n";
            }
            out += sseEvent(exchange->events[*cursor - exchange->first]);
          }
          // Ends with the answer, the session, or when the call asked to end the connection;
          // then a client may resume it at once.
          const bool finished = exchange->done || std::exchange(exchange->cut, false);
          if (finished) exchange->reading = false;
          lock.unlock();
          if (out.empty() && !finished) out = ": keep-alive\n\n";
          if (!out.empty() && !sink.write(out.data(), out.size())) return false;
          if (finished) sink.done();  // the answer went out, or the session ended
          return true;
        },
        [this, session, exchange, legacy](bool) {
          bool unanswered;
          {
            std::lock_guard lock(exchange->mu);
            exchange->reading = false;
            unanswered = !exchange->done;
          }
          --session->open_requests;
          session->touch();
          if (legacy) endSession(session->id);
          // A stateless request whose client closed its stream is cancelled (2026-07-28).
          if (unanswered && !exchange->resumable) cancelStateless(session, exchange);
        });
  }

  // Marks `exchange` as read by one more connection; false when one already reads it.
  static bool startReading(const std::shared_ptr<Exchange>& exchange) {
    std::lock_guard lock(exchange->mu);
    if (exchange->reading) return false;
    exchange->reading = true;
    return true;
  }

  // 2024-11-05: GET /sse starts a session and its stream, whose first event names the URL
  // the client posts to.
  void onLegacyStream(const httplib::Request& req, httplib::Response& res) {
    if (refuseWhileStopping(res)) return;
    if (!accepts(req, "text/event-stream")) {
      jsonError(res, 406, rpc::kInvalidRequest, "Accept must offer text/event-stream");
      return;
    }
    auto made = newSession();
    if (!made.ok()) {
      failedSession(made.status(), res);
      return;
    }
    std::shared_ptr<Session> session = std::move(*made);
    session->transport.setLegacy();
    auto stream = session->transport.standalone();
    startReading(stream);
    spdlog::info("http: session {}… started (HTTP+SSE)", session->id.substr(0, 8));
    streamEvents(session, stream, res, 0,
                 "event: endpoint\ndata: /messages?sessionId=" + session->id + "\n\n",
                 /*legacy=*/true);
  }

  // 2024-11-05: POST /messages?sessionId=... is answered 202; the answer travels on the stream.
  void onLegacyPost(const httplib::Request& req, httplib::Response& res) {
    std::shared_ptr<Session> session = find(req.get_param_value("sessionId"));
    if (!session) {
      jsonError(res, 404, rpc::kInvalidRequest, "unknown or ended session");
      return;
    }
    json message = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
    if (message.is_discarded() || !message.is_object()) {
      jsonError(res, 400, rpc::kParseError, "the body must be one JSON-RPC message");
      return;
    }
    session->touch();
    {
      std::lock_guard lock(session->frame_mu);
      session->server->onFrame(req.body);
    }
    res.status = 202;
  }

  void failedSession(const Status& status, httplib::Response& res) {
    if (status.code() == Code::kResourceExhausted) {
      res.set_header("Retry-After", "30");
      jsonError(res, 429, rpc::kInvalidRequest, status.message());
    } else {
      spdlog::error("http: cannot start a session: {}", status.message());
      jsonError(res, 500, rpc::kInternalError, "cannot start a session");
    }
  }

  bool refuseWhileStopping(httplib::Response& res) {
    std::lock_guard lock(mu);
    if (!stopping) return false;
    res.set_header("Retry-After", "5");
    jsonError(res, 503, rpc::kInvalidRequest, "the server is shutting down");
    return true;
  }

  void onPost(const httplib::Request& req, httplib::Response& res) {
    if (refuseWhileStopping(res)) return;
    const std::string type = lower(req.get_header_value("Content-Type"));
    if (type.rfind("application/json", 0) != 0) {
      jsonError(res, 415, rpc::kInvalidRequest, "Content-Type must be application/json");
      return;
    }
    if (!accepts(req, "application/json") || !accepts(req, "text/event-stream")) {
      jsonError(res, 406, rpc::kInvalidRequest,
                "Accept must offer both application/json and text/event-stream");
      return;
    }
    json message = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
    if (message.is_discarded()) {
      jsonError(res, 400, rpc::kParseError, "parse error: the body is not JSON");
      return;
    }
    if (message.is_array()) {
      postBatch(req, message, res);
      return;
    }
    if (!message.is_object() || message.value("jsonrpc", "") != "2.0" ||
        !(message.contains("method") || isResponse(message)) ||
        (message.contains("method") && !message["method"].is_string())) {
      jsonError(res, 400, rpc::kInvalidRequest, "the body must be one JSON-RPC 2.0 message");
      return;
    }
    if (message.contains("id") && !message["id"].is_string() &&
        !message["id"].is_number_integer()) {
      jsonError(res, 400, rpc::kInvalidRequest, "\"id\" must be a string or an integer");
      return;
    }
    if (!req.has_header(kSessionHeader) && isStateless(req, message)) {
      postStateless(req, message, res);
      return;
    }
    std::shared_ptr<Session> session;
    if (message.value("method", "") == "initialize") {
      auto made = newSession();
      if (!made.ok()) {
        failedSession(made.status(), res);
        return;
      }
      session = std::move(*made);
      res.set_header(kSessionHeader, session->id);
      spdlog::info("http: session {}… started", session->id.substr(0, 8));
    } else {
      session = sessionOf(req, res);
      if (!session) return;
    }
    post(session, message, req.body, res);
  }

  // The stateless revision (2026-07-28) is spoken by requests outside sessions that carry
  // its _meta, name a version of no session-era revision, or ask for server/discover.
  static bool isStateless(const httplib::Request& req, const json& message) {
    if (stateless::hasModernMeta(message.value("params", json()))) return true;
    const std::string method = message.value("method", "");
    if (method == "server/discover") return true;
    if (method == "initialize") return false;  // a session-era client, whatever its header says
    if (!req.has_header(kVersionHeader)) return false;
    const std::string version = req.get_header_value(kVersionHeader);
    return std::find(kProtocolVersions.begin(), kProtocolVersions.end(), version) ==
           kProtocolVersions.end();
  }

  Result<std::shared_ptr<Session>> statelessSession() {
    std::lock_guard lock(stateless_mu);
    {
      std::lock_guard state_lock(mu);
      if (stateless) return stateless;
    }
    BYD_ASSIGN_OR_RETURN(std::shared_ptr<Session> session, makeSession(/*stateless=*/true));
    std::lock_guard state_lock(mu);
    stateless = session;
    return session;
  }

  static int statusForError(int code) {
    switch (code) {
      case rpc::kMethodNotFound:
        return 404;
      case rpc::kInternalError:
        return 500;
      case stateless::kHeaderMismatch:
      case stateless::kMissingCapability:
      case stateless::kUnsupportedVersion:
      case rpc::kInvalidParams:
      case rpc::kInvalidRequest:
      case rpc::kParseError:
        return 400;
      default:
        return 200;
    }
  }

  // A request of the stateless revision: its headers are checked against its body, then it
  // goes to the shared dispatcher under an id of the server's own.
  void postStateless(const httplib::Request& req, const json& message, httplib::Response& res) {
    const bool request = message.contains("method") && message.contains("id");
    if (!request) {  // the revision defines no client notifications over HTTP
      res.status = 202;
      return;
    }
    const json& id = message["id"];
    if (!options.stateless) {
      // A modern client that gets no modern error falls back to initialize.
      jsonError(res, 400, rpc::kInvalidRequest,
                "this server keeps a workspace per session (--workspace-root), which stateless "
                "requests would have to share: send initialize");
      return;
    }
    auto mismatch = [&](const std::string& why) {
      res.status = 400;
      res.set_content(
          serialize(makeError(id, stateless::kHeaderMismatch, "header mismatch: " + why)),
          "application/json");
    };
    if (!req.has_header(kVersionHeader)) {
      mismatch("the MCP-Protocol-Version header is required");
      return;
    }
    const json params = message.value("params", json::object());
    const std::string header_version = req.get_header_value(kVersionHeader);
    if (params.is_object() && params.contains("_meta") && params["_meta"].is_object()) {
      auto body = params["_meta"].find(stateless::kMetaVersion);
      if (body != params["_meta"].end() && body->is_string() && *body != header_version) {
        mismatch("MCP-Protocol-Version " + header_version + " differs from _meta's " +
                 body->get<std::string>());
        return;
      }
    }
    auto session = statelessSession();
    if (!session.ok()) {
      failedSession(session.status(), res);
      return;
    }
    json header_params = json::object();
    if (message.value("method", "") == "tools/call" && params.is_object()) {
      if (const json* tool = (*session)->server->catalogToolDefinition(params.value("name", ""))) {
        header_params = stateless::headerParams(tool->value("inputSchema", json::object()));
      }
    }
    const Status headers = stateless::checkHeaders(
        message,
        [&req](std::string_view name) -> std::optional<std::string> {
          const std::string key(name);
          if (!req.has_header(key)) return std::nullopt;
          return req.get_header_value(key);
        },
        header_params);
    if (!headers.ok()) {
      mismatch(headers.message());
      return;
    }
    const json our_id = "h" + std::to_string(++stateless_ids);
    json rewritten = message;
    rewritten["id"] = our_id;
    auto exchange = (*session)->transport.expectStateless(our_id, id);
    {
      std::lock_guard lock((*session)->frame_mu);
      (*session)->server->onFrame(rewritten.dump());
    }
    // A quick answer goes out as JSON; after a second the answer comes as a stream, whose
    // keep-alives notice a client that went away (which cancels the request).
    std::unique_lock lock(exchange->mu);
    exchange->cv.wait_for(lock, std::chrono::seconds(1),
                          [&] { return !exchange->events.empty() || exchange->done; });
    if (exchange->events.empty() && exchange->done) {  // cancelled: no answer comes
      res.status = 204;
      return;
    }
    if (exchange->done && exchange->events.size() == 1) {
      const json& answer = exchange->events.front();
      if (answer.contains("error")) res.status = statusForError(answer["error"].value("code", 0));
      res.set_content(serialize(answer), "application/json");
      return;
    }
    exchange->reading = true;
    lock.unlock();
    res.set_header("X-Accel-Buffering", "no");
    streamEvents(*session, exchange, res, 0);
  }

  // The client of a stateless request closed its stream before the answer: the request is
  // cancelled (a subscription ends).
  static void cancelStateless(const std::shared_ptr<Session>& session,
                              const std::shared_ptr<Exchange>& exchange) {
    session->transport.abandon(exchange->our_id.dump());
    const json cancel = {{"jsonrpc", "2.0"},
                         {"method", "notifications/cancelled"},
                         {"params", {{"requestId", exchange->our_id}}}};
    std::lock_guard lock(session->frame_mu);
    session->server->onFrame(cancel.dump());
  }

  // A JSON-RPC batch, which only revision 2025-03-26 has: the dispatcher answers it with one
  // array, which is this POST's JSON answer (202 when it held no request).
  void postBatch(const httplib::Request& req, const json& batch, httplib::Response& res) {
    auto session = sessionOf(req, res);
    if (!session) return;
    if (session->transport.version() != "2025-03-26") {
      jsonError(res, 400, rpc::kInvalidRequest,
                "batches exist only at protocol version 2025-03-26");
      return;
    }
    const bool has_request = std::any_of(batch.begin(), batch.end(), [](const json& m) {
      return m.is_object() && m.contains("method") && m.contains("id");
    });
    std::lock_guard batch_lock(session->batch_mu);  // one batch in flight per session
    std::shared_ptr<Exchange> exchange = has_request ? session->transport.expectBatch() : nullptr;
    {
      std::lock_guard lock(session->frame_mu);
      session->server->onFrame(req.body);
    }
    if (!exchange) {
      res.status = 202;
      return;
    }
    // When every request of it is cancelled, no answer comes: once the session runs no call
    // (a call's answer goes out before it stops counting), the POST ends with 204.
    std::unique_lock lock(exchange->mu);
    while (!exchange->cv.wait_for(lock, std::chrono::milliseconds(100),
                                  [&] { return exchange->done; })) {
      lock.unlock();
      const bool idle = session->server->activeCalls() == 0;
      lock.lock();
      if (idle && !exchange->done) break;
    }
    if (exchange->events.empty()) {
      res.status = 204;
      return;
    }
    res.set_content(serialize(exchange->events.back()), "application/json");
  }

  // GET /mcp: the session's stream for messages that belong to no request, from now on; or,
  // with Last-Event-ID, any stream of the session resumed after that event.
  void onGet(const httplib::Request& req, httplib::Response& res) {
    if (!accepts(req, "text/event-stream")) {
      jsonError(res, 406, rpc::kInvalidRequest, "Accept must offer text/event-stream");
      return;
    }
    auto session = sessionOf(req, res);
    if (!session) return;
    std::shared_ptr<Exchange> stream;
    size_t from = 0;
    if (req.has_header("Last-Event-ID")) {
      const std::string last = req.get_header_value("Last-Event-ID");
      const size_t colon = last.find(':');
      stream = session->transport.streamOf(last);
      const std::string number = colon == std::string::npos ? "" : last.substr(colon + 1);
      if (!stream || number.empty() || number.size() > 18 ||
          number.find_first_not_of("0123456789") != std::string::npos) {
        jsonError(res, 404, rpc::kInvalidRequest, "no stream to resume at event " + last);
        return;
      }
      from = std::stoull(number);  // event K has the id S:K, counted from 1
    } else {
      stream = session->transport.standalone();
      std::lock_guard lock(stream->mu);
      from = stream->end();
    }
    if (!startReading(stream)) {
      jsonError(res, 409, rpc::kInvalidRequest, "that stream is already open");
      return;
    }
    streamEvents(session, stream, res, from);
  }

  void onDelete(const httplib::Request& req, httplib::Response& res) {
    auto session = sessionOf(req, res);
    if (!session) return;
    endSession(session->id);
    res.status = 200;
  }

  void reap() {
    std::unique_lock lock(mu);
    while (!stopping) {
      reaper_cv.wait_for(
          lock, std::min<std::chrono::seconds>(options.session_idle / 4, std::chrono::seconds(10)) +
                    std::chrono::milliseconds(100));
      const int64_t now = Clock::now().time_since_epoch().count();
      const int64_t idle =
          std::chrono::duration_cast<Clock::duration>(options.session_idle).count();
      std::vector<std::string> expired;
      for (const auto& [id, s] : sessions) {
        // Idle means nothing running either: a call whose client went away still counts.
        if (s->open_requests == 0 && s->server->activeCalls() == 0 && now - s->last_used > idle) {
          expired.push_back(id);
        }
      }
      lock.unlock();
      for (const std::string& id : expired) endSession(id);
      lock.lock();
    }
  }

  void routes() {
    http.set_payload_max_length(options.max_body_bytes);
    http.set_read_timeout(options.read_timeout);
    // Answers go out at once (no Nagle delay between headers and body), and a client keeps
    // its connection for many requests.
    http.set_tcp_nodelay(true);
    http.set_keep_alive_timeout(5);  // also how long stop() may wait for an idle connection
    http.set_keep_alive_max_count(100000);
    const size_t max_connections = options.max_connections;
    http.new_task_queue = [max_connections] { return new ElasticTaskQueue(max_connections); };
    http.set_exception_handler(
        [](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
          jsonError(res, 500, rpc::kInternalError, "internal error");
        });
    http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      return admit(req, res) ? httplib::Server::HandlerResponse::Unhandled
                             : httplib::Server::HandlerResponse::Handled;
    });
    http.Get("/healthz", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(json{{"status", "ok"}, {"version", options.version}}.dump(),
                      "application/json");
    });
    http.Post("/mcp", [this](const httplib::Request& q, httplib::Response& r) { onPost(q, r); });
    http.Get("/mcp", [this](const httplib::Request& q, httplib::Response& r) { onGet(q, r); });
    http.Delete("/mcp",
                [this](const httplib::Request& q, httplib::Response& r) { onDelete(q, r); });
    auto not_allowed = [](const httplib::Request&, httplib::Response& res) {
      res.set_header("Allow", "GET, POST, DELETE");
      jsonError(res, 405, rpc::kInvalidRequest, "method not allowed");
    };
    http.Get("/sse",
             [this](const httplib::Request& q, httplib::Response& r) { onLegacyStream(q, r); });
    http.Post("/messages",
              [this](const httplib::Request& q, httplib::Response& r) { onLegacyPost(q, r); });
    http.Put("/mcp", not_allowed);
    http.Patch("/mcp", not_allowed);
    http.set_error_handler([](const httplib::Request&, httplib::Response& res) {
      if (!res.body.empty()) return;
      // httplib's own refusals: a request it could not read (in time), or no such route.
      const std::string message = res.status == 404   ? "not found"
                                  : res.status == 400 ? "malformed or incomplete HTTP request"
                                  : res.status == 413 ? "request too large"
                                                      : "HTTP " + std::to_string(res.status);
      jsonError(res, res.status, rpc::kInvalidRequest, message);
    });
  }
};

HttpServer::HttpServer(HttpOptions options, SessionFactory factory, Limits limits,
                       ServerOptions server, const permissions::Guard* guard)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(factory), limits,
                                   std::move(server), guard)) {
  impl_->routes();
}

HttpServer::~HttpServer() {
  stop();
  if (impl_->reaper.joinable()) impl_->reaper.join();
}

Status HttpServer::bind() {
  const HttpOptions& o = impl_->options;
  impl_->port = o.port == 0 ? impl_->http.bind_to_any_port(o.host)
                            : (impl_->http.bind_to_port(o.host, o.port) ? o.port : -1);
  if (impl_->port < 0) {
    return failedPrecondition("cannot listen on " + o.host + ":" + std::to_string(o.port));
  }
  return okStatus();
}

int HttpServer::port() const { return impl_->port; }

Status HttpServer::run() {
  impl_->reaper = std::thread([this] { impl_->reap(); });
  const bool ok = impl_->http.listen_after_bind();
  std::vector<std::string> ids;
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
    for (const auto& [id, s] : impl_->sessions) ids.push_back(id);
  }
  impl_->reaper_cv.notify_all();
  for (const std::string& id : ids) impl_->endSession(id);
  impl_->endStateless();
  return ok ? okStatus() : internalError("the HTTP server stopped with an error");
}

void HttpServer::stop() {
  std::vector<std::string> ids;
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
    for (const auto& [id, s] : impl_->sessions) ids.push_back(id);
  }
  impl_->reaper_cv.notify_all();
  // Calls in flight finish (their POSTs are answered) for up to the grace period; what still
  // runs then is cancelled. Then the sessions end, and with them their streams, which the HTTP
  // server's own stop waits for.
  const auto deadline = Clock::now() + impl_->options.shutdown_grace;
  std::shared_ptr<Session> stateless;
  {
    std::lock_guard lock(impl_->mu);
    stateless = impl_->stateless;
  }
  for (const std::string& id : ids) {
    if (std::shared_ptr<Session> session = impl_->find(id))
      session->server->drain([&] { return Clock::now() >= deadline; });
  }
  if (stateless) stateless->server->drain([&] { return Clock::now() >= deadline; });
  for (const std::string& id : ids) impl_->endSession(id);
  impl_->endStateless();
  impl_->http.stop();
}

namespace {
sigset_t stopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}
}  // namespace

void blockStopSignals() {
  const sigset_t set = stopSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

Status runUntilStopSignal(HttpServer& server, bool* signalled) {
  std::atomic<bool> by_signal = false;
  std::thread waiter([&] {
    const sigset_t set = stopSignals();
    int sig = 0;
    sigwait(&set, &sig);
    by_signal = sig != 0;
    server.stop();
  });
  Status run = server.run();
  // run() ended on its own: wake the waiter with a signal only it is waiting for.
  if (!by_signal) pthread_kill(waiter.native_handle(), SIGTERM);
  waiter.join();
  if (signalled != nullptr) *signalled = by_signal;
  return run;
}

}  // namespace byd::mcp
