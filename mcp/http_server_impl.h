#pragma once
// The HTTP transport's insides, shared by its parts: http_server.cpp (admission, the session
// table, the server's life), http_routes.cpp (the routes of the session-era revisions:
// streamable HTTP and the 2024-11-05 SSE transport) and http_stateless_routes.cpp (the
// 2026-07-28 revision's requests). Not for use outside them.

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

#include "common/metrics.h"
#include "common/text.h"
#include "mcp/crypto.h"
#include "mcp/http_gate.h"
#include "mcp/http_session.h"
#include "mcp/json_rpc.h"
#include "mcp/protocol.h"
#include "mcp/stateless.h"

namespace byd::mcp {

using http::Exchange;
using http::isResponse;
using http::Session;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

inline constexpr const char* kSessionHeader = "Mcp-Session-Id";
inline constexpr const char* kVersionHeader = "MCP-Protocol-Version";
inline constexpr auto kKeepAlive = std::chrono::seconds(15);

inline std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// "host[:port]" into its parts; the host keeps IPv6 brackets.
inline std::pair<std::string, std::string> splitHostPort(const std::string& hostport) {
  const size_t colon = hostport.rfind(':');
  const size_t bracket = hostport.rfind(']');
  if (colon == std::string::npos || (bracket != std::string::npos && colon < bracket)) {
    return {lower(hostport), ""};
  }
  return {lower(hostport.substr(0, colon)), hostport.substr(colon + 1)};
}

inline void jsonError(httplib::Response& res, int status, int code, const std::string& message) {
  res.status = status;
  res.set_content(serialize(makeError(nullptr, code, message)), "application/json");
}

inline bool accepts(const httplib::Request& req, const char* type) {
  const std::string accept = lower(req.get_header_value("Accept"));
  return accept.find(type) != std::string::npos || accept.find("*/*") != std::string::npos;
}

inline std::string sseEvent(const json& message) {
  return "event: message\ndata: " + serialize(message) + "\n\n";
}

struct HttpServer::Impl {
  HttpOptions options;
  SessionFactory factory;
  Limits limits;
  ServerOptions server_options;
  const permissions::Guard* guard;
  GatedServer http;
  int port = -1;

  // Who may connect: the tenants of the options, or one tenant, "default", for the single
  // token or for a server that asks for none (then `open_tenant` is set).
  std::vector<Tenant> tenants;
  const Tenant* open_tenant = nullptr;

  mutable std::mutex mu;
  std::map<std::string, std::shared_ptr<Session>> sessions;
  std::map<const Tenant*, size_t> starting;  // sessions being made, per tenant and in all
  size_t total_starting = 0;
  // Requests of the stateless revision share one dispatcher and backend, made when the first
  // arrives; it is no session (no id, never reaped) and ends with the server.
  std::shared_ptr<Session> stateless;
  std::mutex stateless_mu;  // one thread makes it
  std::atomic<uint64_t> stateless_ids{0};
  std::condition_variable reaper_cv;
  bool stopping = false;
  // run() has decided to listen (under mu, with `stopping` false then), and its listening has
  // ended: stop() waits for the listening to begin before it ends it, since httplib's stop()
  // does nothing to a server that does not listen yet.
  bool listening = false;
  std::atomic<bool> listened{false};
  std::thread reaper;
  // /metrics' byd_sessions, read from `sessions` (last: gone before what it reads).
  std::unique_ptr<metrics::Gauge> sessions_gauge;

  Impl(HttpOptions o, SessionFactory f, Limits l, ServerOptions s, const permissions::Guard* g);
  // A name without a port stands for its scheme's default port (`default_port`; 0 where the
  // scheme has none), which must be the one this server listens on.
  bool hostAllowed(const std::string& host, const std::string& port_text, int default_port) const;
  // Host, Origin and the token; false with the response filled in when the request fails.
  bool admit(const httplib::Request& req, httplib::Response& res) const;
  // The tenant whose bearer token the request carries (`open_tenant` when the server asks
  // for none); null when it carries no token of a tenant. Every tenant's digest is compared,
  // each in constant time.
  const Tenant* tenantOf(const httplib::Request& req) const;
  // The session a request names; null with the response filled in when it does not (or when
  // it is another tenant's: unknown to this one).
  std::shared_ptr<Session> sessionOf(const httplib::Request& req, httplib::Response& res);
  // A session of `tenant`, as its client asks.
  Result<std::shared_ptr<Session>> newSession(const Tenant& tenant, const SessionAsk& ask);
  // What a request asks of its new session: its name (its initialize `_meta`, else the header)
  // and runtime (`_meta`, else the URL's parameter); false with the response filled in when
  // either is not a name.
  static bool sessionAsk(const httplib::Request& req, const json* initialize, SessionAsk* ask,
                         httplib::Response& res);
  // A backend from the factory and a dispatcher on it; `stateless`: for requests of the
  // stateless revision only.
  enum class SessionKind { kSession, kStateless };
  Result<std::shared_ptr<Session>> makeSession(SessionKind kind, const Tenant& tenant,
                                               const SessionAsk& ask = {});
  // The session with this id when it is `tenant`'s, or null.
  std::shared_ptr<Session> find(const std::string& id, const Tenant* tenant) const;
  void endStateless();
  void endSession(const std::string& id);
  // Hands one message to the session's dispatcher and answers the POST.
  void post(const std::shared_ptr<Session>& session, const json& message, httplib::Response& res);
  // JSON when the answer is the first and only message; otherwise an SSE stream.
  void respond(const std::shared_ptr<Session>& session, const std::shared_ptr<Exchange>& exchange,
               httplib::Response& res);
  // Streams `exchange` from event number `from` on, each event with its id; `preamble` goes out
  // first (the legacy transport's endpoint event). The caller has marked it as being read. A
  // legacy session lives as long as its stream.
  enum class StreamKind { kStreamable, kLegacy };
  void streamEvents(const std::shared_ptr<Session>& session,
                    const std::shared_ptr<Exchange>& exchange, httplib::Response& res, size_t from,
                    std::string preamble = "", StreamKind kind = StreamKind::kStreamable);
  // Marks `exchange` as read by one more connection; false when one already reads it.
  static bool startReading(const std::shared_ptr<Exchange>& exchange);
  // 2024-11-05: GET /sse starts a session and its stream, whose first event names the URL
  // the client posts to.
  void onLegacyStream(const httplib::Request& req, httplib::Response& res);
  // 2024-11-05: POST /messages?sessionId=... is answered 202; the answer travels on the stream.
  void onLegacyPost(const httplib::Request& req, httplib::Response& res);
  void failedSession(const Status& status, httplib::Response& res);
  // /api/: the tenant's stored workspaces (HttpOptions::store).
  void apiRoutes();
  // Ends every session of `tenant` named `name`.
  void endNamed(const Tenant& tenant, const std::string& name);
  bool refuseWhileStopping(httplib::Response& res);
  void onPost(const httplib::Request& req, httplib::Response& res);
  // The stateless revision (2026-07-28) is spoken by requests outside sessions that carry
  // its _meta, name a version of no session-era revision, or ask for server/discover.
  static bool isStateless(const httplib::Request& req, const json& message);
  Result<std::shared_ptr<Session>> statelessSession();
  static int statusForError(int code);
  // A request of the stateless revision: its headers are checked against its body, then it
  // goes to the shared dispatcher under an id of the server's own.
  void postStateless(const httplib::Request& req, const json& message, httplib::Response& res);
  // The client of a stateless request closed its stream before the answer: the request is
  // cancelled (a subscription ends).
  static void cancelStateless(const std::shared_ptr<Session>& session,
                              const std::shared_ptr<Exchange>& exchange);
  // A JSON-RPC batch, which only revision 2025-03-26 has: the dispatcher answers it with one
  // array, which is this POST's JSON answer (202 when it held no request).
  void postBatch(const httplib::Request& req, const json& batch, httplib::Response& res);
  // GET /mcp: the session's stream for messages that belong to no request, from now on; or,
  // with Last-Event-ID, any stream of the session resumed after that event.
  void onGet(const httplib::Request& req, httplib::Response& res);
  void onDelete(const httplib::Request& req, httplib::Response& res);
  // GET /metrics: Prometheus' text format, for the operator's token or a loopback client.
  void onMetrics(const httplib::Request& req, httplib::Response& res) const;
  // Whether the request carries the operator's token (compared in constant time).
  bool fromOperator(const httplib::Request& req) const;
  // The operator's page (--ui) and its API under /ui/api/, which needs the operator's token.
  void uiRoutes();
  // What the page shows live: capacity, and each open session.
  json uiState() const;
  // Each session's resource use as the page last sampled it (at most every few seconds: a
  // container's stats cost an engine request), by session id.
  struct UseSample {
    std::chrono::steady_clock::time_point at;
    std::optional<ResourceUse> use;
    std::optional<double> cpu_percent;  // over the time since the sample before
  };
  mutable std::mutex use_mu;
  mutable std::map<std::string, UseSample> use_samples;
  // The resource use of `session` for the page (JSON: memory and CPU against their ceilings).
  json sessionUse(const std::string& id, Backend& backend) const;
  void reap();
  void routes();
};

}  // namespace byd::mcp
