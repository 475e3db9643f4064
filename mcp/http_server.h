#pragma once
// MCP over HTTP beside stdio: Streamable HTTP (revisions 2025-03-26 to 2025-11-25) at /mcp, and
// GET /healthz. Each MCP session has a dispatcher (mcp::Server) and a backend of its own, made
// when a client initializes and ended by DELETE, by the idle reaper or at shutdown, which stops
// its commands and Python kernels. A request is answered with JSON, or with an SSE stream when
// the call sends progress, log or elicitation messages before its result.
//
// Safety: Host and Origin must name an allowed host (loopback names by default) with the
// listening port, or the answer is 403 (DNS-rebinding protection); with a token, requests
// without "Authorization: Bearer <token>" get 401 (with tenants, each token names its tenant,
// which sees only its own sessions); bodies (413), sessions (429, also per tenant) and idle time
// are capped, and slow clients time out instead of holding a thread. No exception text ever
// reaches a response.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "common/result.h"
#include "mcp/server.h"
#include "permissions/guard.h"
#include "tools/tool.h"

namespace byd::mcp {

// Who a request comes from, known by its bearer token. A tenant's sessions are its own: no
// other tenant's request can reach them (they are "unknown" to it), and its own cap bounds how
// many it has open, below the server's.
struct Tenant {
  std::string name;
  std::string token_sha256;  // lowercase hex SHA-256 of its bearer token
  size_t max_sessions = SIZE_MAX;
  const permissions::Guard* guard = nullptr;  // its rules; null: the server's
  std::optional<Limits> limits;               // its limits; none: the server's
  std::string workspace_root;                 // for the session factory; "": the server's
  // The runtimes it may use (see kRuntimeMeta), for the session factory; none: every one.
  std::optional<std::vector<std::string>> runtimes;
};

// The stored workspaces of named sessions, which /api/ serves to their tenant (see
// serve_http.cpp); each function names the tenant and the session.
struct WorkspaceStore {
  std::function<Result<nlohmann::json>(const Tenant&)> sessions;
  std::function<Result<nlohmann::json>(const Tenant&, const std::string& name,
                                       const std::string& path)>
      list;
  std::function<Result<std::string>(const Tenant&, const std::string& name,
                                    const std::string& path)>
      read;
  std::function<Status(const Tenant&, const std::string& name)> purge;
};

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8765;                         // 0: any free port (see HttpServer::port())
  std::vector<std::string> allowed_hosts;  // accepted in Host and Origin beside loopback names
  std::string token;  // when set, every request but /healthz must carry it (tenant "default")
  // When not empty, every request but /healthz must carry the token of one of them (and
  // `token` is not used).
  std::vector<Tenant> tenants;
  // The operator's token: GET /metrics needs it when set, and answers loopback clients alone
  // when not.
  std::string admin_token;
  // Serves the operator's page at /ui (needs admin_token); `policy` is what its page shows of
  // tenants, runtimes, rules and settings.
  bool ui = false;
  nlohmann::json policy = nlohmann::json::object();
  // Serves GET /api/sessions, GET /api/sessions/NAME/ls?path=, GET /api/sessions/NAME/read?path=
  // and DELETE /api/sessions/NAME when set.
  std::shared_ptr<const WorkspaceStore> store;
  size_t max_body_bytes = 16 << 20;
  size_t max_sessions = 64;
  std::chrono::seconds session_idle{1800};
  std::chrono::seconds read_timeout{30};     // for a client to send each whole request
  size_t max_connections = 1024;             // open at once; the excess is refused with 503
  size_t max_connections_per_address = 256;  // open at once from one client address
  std::chrono::seconds shutdown_grace{10};   // for calls in flight at stop()
  std::string version;                       // reported by /healthz
  // Requests of the stateless revision (2026-07-28) are served, by one dispatcher and backend
  // shared by every such client. Off when each session must have a workspace of its own.
  bool stateless = true;
};

// The backend of one session, and whatever keeps it alive.
struct SessionBackend {
  Backend* backend = nullptr;
  std::shared_ptr<void> owner;
  std::string instructions;  // for this session's initialize, when it differs from the rest
  // Its rules, when they are not its tenant's (a runtime's network rules); kept by the factory.
  const permissions::Guard* guard = nullptr;
  // Its runtime ("": none) and the runtime's ceiling of a call's timeout_s, if it has one.
  std::string runtime;
  std::optional<int64_t> max_timeout_s;
  // Where its tasks are kept, shared by every session on the same backend (a named session's
  // connections); null: each session its own.
  std::shared_ptr<TaskStore> tasks;
  // Where its console tools run, when they run on an agent of its own (--placement); null:
  // the server's (ServerOptions::remote).
  std::shared_ptr<RemoteClient> remote;
};
// What a client asks of a new session.
struct SessionAsk {
  // The name the client gave it (see kSessionNameMeta), under which a later session of the
  // same tenant finds the same backend again; "": none.
  std::string name;
  std::string runtime;  // the runtime it asks for (see kRuntimeMeta); "": the default
};
// Makes the backend of a new session of `tenant`. An error InvalidArgument is the client's to
// mend (a runtime unknown or not its tenant's) and is answered 400 with its message.
using SessionFactory =
    std::function<Result<SessionBackend>(const Tenant& tenant, const SessionAsk& ask)>;

// Where a client names its session: the `_meta` key of its initialize request, or the header
// for clients that cannot set `_meta`.
inline constexpr const char* kSessionNameMeta = "io.backyard/session";
inline constexpr const char* kSessionNameHeader = "Backyard-Session";
// Where it asks for a runtime: the `_meta` key of its initialize request, or the query
// parameter of the endpoint's URL (/mcp?runtime=NAME, /sse?runtime=NAME).
inline constexpr const char* kRuntimeMeta = "io.backyard/runtime";
inline constexpr const char* kRuntimeParameter = "runtime";
// Session and runtime names are plainName()s (common/text.h).

class HttpServer {
 public:
  HttpServer(HttpOptions options, SessionFactory factory, Limits limits, ServerOptions server,
             const permissions::Guard* guard);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds the listening socket; port() is known afterwards.
  Status bind();
  int port() const;
  // Serves until stop(); then ends every session.
  Status run();
  // Makes run() return. Thread-safe (not async-signal-safe).
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// SIGTERM and SIGINT stop an HTTP server from one waiting thread (httplib's stop() is not
// async-signal-safe). blockStopSignals() must run before any thread starts, so that every
// thread inherits the mask; runUntilStopSignal() then serves until a signal or until run()
// ends on its own, and says whether a signal stopped it.
void blockStopSignals();
Status runUntilStopSignal(HttpServer& server, bool* signalled);

}  // namespace byd::mcp
