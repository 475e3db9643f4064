#include "mcp/http_server_impl.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace byd::mcp {

// Connections a burst may leave waiting for the accept loop (the kernel holds it to
// net.core.somaxconn).
constexpr int kListenBacklog = 1024;

HttpServer::Impl::Impl(HttpOptions o, SessionFactory f, Limits l, ServerOptions s,
                       const permissions::Guard* g)
    : options(std::move(o)),
      factory(std::move(f)),
      limits(l),
      server_options(std::move(s)),
      guard(g),
      http(GateOptions{std::chrono::duration_cast<std::chrono::milliseconds>(options.read_timeout),
                       options.max_connections, options.max_connections_per_address}) {
  tenants = options.tenants;
  if (tenants.empty()) {
    // One tenant: the single token's (compared as it is), or all comers'.
    tenants.push_back(Tenant{.name = "default"});
    if (options.token.empty()) open_tenant = &tenants.front();
  }
  sessions_gauge = std::make_unique<metrics::Gauge>("byd_sessions", [this] {
    std::map<std::string, double> by_tenant;
    for (const Tenant& t : tenants) by_tenant[t.name] = 0;
    std::lock_guard lock(mu);
    for (const auto& [id, s] : sessions) by_tenant[s->tenant->name] += 1;
    metrics::GaugeSamples samples;
    for (const auto& [name, n] : by_tenant) samples.push_back({{name}, n});
    return samples;
  });
}

namespace {

// The token of the request's "Authorization: Bearer TOKEN" header (the scheme in any case).
std::optional<std::string> bearerOf(const httplib::Request& req) {
  const std::string auth = req.get_header_value("Authorization");
  const std::string prefix = "bearer ";
  if (auth.size() <= prefix.size() || lower(auth.substr(0, prefix.size())) != prefix) {
    return std::nullopt;
  }
  return auth.substr(prefix.size());
}

}  // namespace

bool HttpServer::Impl::fromOperator(const httplib::Request& req) const {
  const std::optional<std::string> given = bearerOf(req);
  return !options.admin_token.empty() && given && equalConstantTime(*given, options.admin_token);
}

void HttpServer::Impl::onMetrics(const httplib::Request& req, httplib::Response& res) const {
  if (!options.admin_token.empty()) {
    if (!fromOperator(req)) {
      res.set_header("WWW-Authenticate", "Bearer realm=\"backyard-mcp metrics\"");
      jsonError(res, 401, rpc::kInvalidRequest, "/metrics needs the operator's bearer token");
      return;
    }
  } else if (!isLoopbackAddress(req.remote_addr) || req.has_header("Forwarded") ||
             req.has_header("X-Forwarded-For")) {  // a proxy on this machine speaks for others
    jsonError(res, 403, rpc::kInvalidRequest,
              "/metrics answers loopback clients alone unless --admin-token-file is set");
    return;
  }
  res.set_content(metrics::exposition(), "text/plain; version=0.0.4; charset=utf-8");
}

// A name without a port stands for its scheme's default port (`default_port`; 0 where the
// scheme has none), which must be the one this server listens on. An allowed name that begins
// with a dot (".svc.cluster.local") stands for every name beneath it, not for itself: an agent
// reached by its sandbox's own name, which no one knows before the sandbox exists.
bool HttpServer::Impl::hostAllowed(const std::string& given, const std::string& port_text,
                                   int default_port) const {
  if (port_text.empty() ? default_port != port : port_text != std::to_string(port)) return false;
  // A fully qualified name may end in the root's dot ("a.svc.cluster.local."): the same name.
  // One dot only, and not a name of nothing but dots.
  const bool rooted = given.size() > 1 && given.back() == '.' && given[given.size() - 2] != '.';
  const std::string host = rooted ? given.substr(0, given.size() - 1) : given;
  if (host == "localhost" || host == "127.0.0.1" || host == "[::1]") return true;
  for (const std::string& allowed : options.allowed_hosts) {
    const std::string name = lower(allowed);
    if (name.empty()) continue;
    if (name.front() != '.') {
      if (name == host) return true;
    } else if (name.size() > 1 && host.size() > name.size() && host.ends_with(name)) {
      return true;
    }
  }
  return false;
}

// Host, Origin and the token; false with the response filled in when the request fails.
bool HttpServer::Impl::admit(const httplib::Request& req, httplib::Response& res) const {
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
  // /metrics answers to the operator's token (or to loopback clients), never to a tenant's.
  const bool operators =
      req.path == "/metrics" || req.path == "/ui" || req.path.rfind("/ui/", 0) == 0;
  if (req.path != "/healthz" && !operators && tenantOf(req) == nullptr) {
    res.set_header("WWW-Authenticate", "Bearer realm=\"backyard-mcp\"");
    jsonError(res, 401, rpc::kInvalidRequest, "missing or wrong bearer token");
    return false;
  }
  return true;
}

const Tenant* HttpServer::Impl::tenantOf(const httplib::Request& req) const {
  if (open_tenant != nullptr) return open_tenant;
  const std::optional<std::string> bearer = bearerOf(req);
  if (!bearer) return nullptr;
  const std::string& given = *bearer;
  if (options.tenants.empty()) {
    return equalConstantTime(given, options.token) ? &tenants.front() : nullptr;
  }
  auto digest = sha256Hex(given);
  if (!digest.ok()) {
    spdlog::error("http: cannot check a bearer token: {}", digest.status().message());
    return nullptr;
  }
  const Tenant* found = nullptr;
  for (const Tenant& tenant : tenants) {  // all of them: the time says nothing of which
    if (equalConstantTime(*digest, tenant.token_sha256)) found = &tenant;
  }
  return found;
}

// The session a request names; null with the response filled in when it does not.
std::shared_ptr<Session> HttpServer::Impl::sessionOf(const httplib::Request& req,
                                                     httplib::Response& res) {
  if (!req.has_header(kSessionHeader)) {
    jsonError(res, 400, rpc::kInvalidRequest, "missing Mcp-Session-Id header");
    return nullptr;
  }
  std::shared_ptr<Session> session = find(req.get_header_value(kSessionHeader), tenantOf(req));
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

bool HttpServer::Impl::sessionAsk(const httplib::Request& req, const json* initialize,
                                  SessionAsk* ask, httplib::Response& res) {
  const json* meta = nullptr;
  if (initialize != nullptr) {
    const auto params = initialize->find("params");
    if (params != initialize->end() && params->is_object()) {
      const auto m = params->find("_meta");
      if (m != params->end() && m->is_object()) meta = &*m;
    }
  }
  // One name from `_meta` key `key`, else from the request (`fallback`).
  const auto take = [&](const char* key, const char* what, const std::string& fallback_source,
                        bool has_fallback, const std::string& fallback, std::string* into) {
    std::string source = fallback_source;
    const auto given = meta != nullptr ? meta->find(key) : json::const_iterator();
    if (meta != nullptr && given != meta->end()) {
      source = std::string("_meta \"") + key + "\"";
      if (!given->is_string()) {
        jsonError(res, 400, rpc::kInvalidParams, source + " must be a string");
        return false;
      }
      *into = given->get<std::string>();
    } else {
      if (!has_fallback) return true;
      *into = fallback;
    }
    if (!plainName(*into)) {
      jsonError(res, 400, rpc::kInvalidParams,
                source + ": a " + what + " name is " + std::string(kPlainNameRule));
      return false;
    }
    return true;
  };
  return take(kSessionNameMeta, "session", kSessionNameHeader, req.has_header(kSessionNameHeader),
              req.get_header_value(kSessionNameHeader), &ask->name) &&
         take(kRuntimeMeta, "runtime", std::string("the URL's ") + kRuntimeParameter + "=",
              req.has_param(kRuntimeParameter), req.get_param_value(kRuntimeParameter),
              &ask->runtime);
}

Result<std::shared_ptr<Session>> HttpServer::Impl::newSession(const Tenant& tenant,
                                                              const SessionAsk& ask) {
  {
    std::lock_guard lock(mu);
    // Those being made count too: parallel initializes cannot pass the cap together.
    const size_t open = starting[&tenant] +
                        std::count_if(sessions.begin(), sessions.end(),
                                      [&](const auto& s) { return s.second->tenant == &tenant; });
    if (sessions.size() + total_starting >= options.max_sessions) {
      return resourceExhausted("too many sessions");
    }
    if (open >= tenant.max_sessions) {
      return resourceExhausted("tenant '" + tenant.name + "' has " + std::to_string(open) +
                               " sessions open, as many as it may; end one first");
    }
    ++starting[&tenant];
    ++total_starting;
  }
  Result<std::shared_ptr<Session>> made = makeSession(SessionKind::kSession, tenant, ask);
  std::lock_guard lock(mu);
  --starting[&tenant];
  --total_starting;
  if (!made.ok()) return made.status();
  std::shared_ptr<Session> session = std::move(*made);
  session->id = randomHex(16);
  session->server->setSessionId(session->id);
  session->touch();
  sessions[session->id] = session;
  return session;
}

// A backend from the factory and a dispatcher on it; `stateless`: for requests of the
// stateless revision only.
Result<std::shared_ptr<Session>> HttpServer::Impl::makeSession(SessionKind kind,
                                                               const Tenant& tenant,
                                                               const SessionAsk& ask) {
  BYD_ASSIGN_OR_RETURN(SessionBackend backend, factory(tenant, ask));
  auto session = std::make_shared<Session>();
  session->tenant = &tenant;
  session->name = ask.name;
  session->backend = std::move(backend);
  ServerOptions options = server_options;
  options.stateless_only = kind == SessionKind::kStateless;
  options.transport_name = "http";
  options.tenant = tenant.name;
  options.session_name = ask.name;
  options.keep_activity = this->options.ui;
  if (!session->backend.instructions.empty()) options.instructions = session->backend.instructions;
  if (session->backend.tasks) options.tasks = session->backend.tasks;
  if (session->backend.remote) options.remote = session->backend.remote;
  Limits own = tenant.limits.value_or(limits);
  if (tenant.limits) own.max_timeout_from = "the limits of tenant " + tenant.name;
  if (const auto ceiling = session->backend.max_timeout_s) {
    // The runtime's ceiling; a tenant's own limits hold it below theirs.
    if (!tenant.limits || *ceiling < own.max_timeout_s) {
      own.max_timeout_s = *ceiling;
      own.max_timeout_from = "the max_timeout_s of runtime " + session->backend.runtime;
    }
  }
  const permissions::Guard* rules = session->backend.guard != nullptr ? session->backend.guard
                                    : tenant.guard != nullptr         ? tenant.guard
                                                                      : guard;
  session->server =
      std::make_unique<Server>(session->transport, *session->backend.backend, own, options, rules);
  return session;
}

// The session with this id when it is `tenant`'s, or null.
std::shared_ptr<Session> HttpServer::Impl::find(const std::string& id, const Tenant* tenant) const {
  std::lock_guard lock(mu);
  auto it = sessions.find(id);
  return it == sessions.end() || it->second->tenant != tenant ? nullptr : it->second;
}

void HttpServer::Impl::endStateless() {
  std::shared_ptr<Session> session;
  {
    std::lock_guard lock(mu);
    session = std::move(stateless);
  }
  if (session) session->end();
}

void HttpServer::Impl::endSession(const std::string& id) {
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

void HttpServer::Impl::reap() {
  std::unique_lock lock(mu);
  while (!stopping) {
    reaper_cv.wait_for(
        lock, std::min<std::chrono::seconds>(options.session_idle / 4, std::chrono::seconds(10)) +
                  std::chrono::milliseconds(100));
    const int64_t now = Clock::now().time_since_epoch().count();
    const int64_t idle = std::chrono::duration_cast<Clock::duration>(options.session_idle).count();
    std::vector<std::string> expired;
    for (const auto& [id, s] : sessions) {
      // Idle means nothing running either: a call whose client went away still counts, and
      // so does a task (its client may come back for the result).
      if (s->open_requests == 0 && s->server->activeCalls() == 0 &&
          s->server->runningTasks() == 0 && now - s->last_used > idle) {
        expired.push_back(id);
      }
    }
    lock.unlock();
    for (const std::string& id : expired) endSession(id);
    lock.lock();
  }
}

void HttpServer::Impl::routes() {
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
  http.Get("/metrics",
           [this](const httplib::Request& q, httplib::Response& r) { onMetrics(q, r); });
  http.Post("/mcp", [this](const httplib::Request& q, httplib::Response& r) { onPost(q, r); });
  http.Get("/mcp", [this](const httplib::Request& q, httplib::Response& r) { onGet(q, r); });
  http.Delete("/mcp", [this](const httplib::Request& q, httplib::Response& r) { onDelete(q, r); });
  auto not_allowed = [](const httplib::Request&, httplib::Response& res) {
    res.set_header("Allow", "GET, POST, DELETE");
    jsonError(res, 405, rpc::kInvalidRequest, "method not allowed");
  };
  http.Get("/sse",
           [this](const httplib::Request& q, httplib::Response& r) { onLegacyStream(q, r); });
  http.Post("/messages",
            [this](const httplib::Request& q, httplib::Response& r) { onLegacyPost(q, r); });
  if (options.store) apiRoutes();
  if (options.ui) uiRoutes();
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

namespace {

int httpStatusOf(const Status& status) {
  switch (status.code()) {
    case Code::kNotFound:
      return 404;
    case Code::kInvalidArgument:
      return 400;
    case Code::kPermissionDenied:
      return 403;
    case Code::kOutOfRange:
      return 413;
    case Code::kFailedPrecondition:
      return 409;
    case Code::kResourceExhausted:
      return 429;
    default:
      return 500;
  }
}

void apiError(httplib::Response& res, const Status& status) {
  res.status = httpStatusOf(status);
  res.set_content(json{{"error", res.status == 500 ? "internal error" : status.message()}}.dump(),
                  "application/json");
  if (res.status == 500) spdlog::error("http: /api/: {}", status.message());
}

}  // namespace

void HttpServer::Impl::endNamed(const Tenant& tenant, const std::string& name) {
  std::vector<std::string> ids;
  {
    std::lock_guard lock(mu);
    for (const auto& [id, s] : sessions) {
      if (s->tenant == &tenant && s->name == name) ids.push_back(id);
    }
  }
  for (const std::string& id : ids) endSession(id);
}

void HttpServer::Impl::apiRoutes() {
  // A route on one named session: its tenant and name checked, then `serve` answers.
  using Serve = std::function<void(const httplib::Request&, httplib::Response&, const Tenant&,
                                   const std::string& name)>;
  const auto onSession = [this](Serve serve) {
    return [this, serve = std::move(serve)](const httplib::Request& req, httplib::Response& res) {
      const Tenant* tenant = tenantOf(req);
      if (tenant == nullptr) return;  // admit() answered already
      const std::string name = req.matches.size() > 1 ? std::string(req.matches[1]) : "";
      if (!plainName(name))
        return apiError(res, invalidArgument("'" + name + "' is no session name"));
      serve(req, res, *tenant, name);
    };
  };
  const auto answer = [](httplib::Response& res, const Result<json>& value) {
    if (!value.ok()) return apiError(res, value.status());
    res.set_content(value->dump(), "application/json");
  };
  http.Get("/api/sessions", [this, answer](const httplib::Request& req, httplib::Response& res) {
    answer(res, options.store->sessions(*tenantOf(req)));
  });
  http.Get(R"(/api/sessions/([^/]+)/ls)",
           onSession([this, answer](const httplib::Request& req, httplib::Response& res,
                                    const Tenant& tenant, const std::string& name) {
             const std::string path = req.has_param("path") ? req.get_param_value("path") : ".";
             answer(res, options.store->list(tenant, name, path));
           }));
  http.Get(R"(/api/sessions/([^/]+)/read)",
           onSession([this](const httplib::Request& req, httplib::Response& res,
                            const Tenant& tenant, const std::string& name) {
             if (!req.has_param("path")) {
               return apiError(res, invalidArgument("?path= names the file to read"));
             }
             auto bytes = options.store->read(tenant, name, req.get_param_value("path"));
             if (!bytes.ok()) return apiError(res, bytes.status());
             res.set_content(std::move(*bytes), "application/octet-stream");
           }));
  http.Delete(R"(/api/sessions/([^/]+))",
              onSession([this, answer](const httplib::Request&, httplib::Response& res,
                                       const Tenant& tenant, const std::string& name) {
                endNamed(tenant, name);
                if (Status s = options.store->purge(tenant, name); !s.ok()) {
                  return apiError(res, s);
                }
                spdlog::info("http: session '{}' of tenant '{}' purged", name, tenant.name);
                answer(res, json{{"purged", name}});
              }));
}

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
  // The library listens with a backlog of 5 (built into Debian's libcpp-httplib), so the kernel
  // resets most of a burst of clients connecting at once. The socket is noted as it is made
  // and listened on again, with a queue as deep as the system allows.
  int listener = -1;
  impl_->http.set_socket_options([&listener](socket_t sock) {
    httplib::default_socket_options(sock);
    listener = sock;
  });
  impl_->port = o.port == 0 ? impl_->http.bind_to_any_port(o.host)
                            : (impl_->http.bind_to_port(o.host, o.port) ? o.port : -1);
  impl_->http.set_socket_options(httplib::default_socket_options);
  if (impl_->port < 0) {
    return failedPrecondition("cannot listen on " + o.host + ":" + std::to_string(o.port));
  }
  if (listener >= 0 && ::listen(listener, kListenBacklog) != 0) {
    return failedPrecondition("cannot listen on " + o.host + ":" + std::to_string(impl_->port) +
                              ": " + strerror(errno));
  }
  return okStatus();
}

int HttpServer::port() const { return impl_->port; }

Status HttpServer::run() {
  impl_->reaper = std::thread([this] { impl_->reap(); });
  {
    // A stop() that came first (a signal right after bind()) leaves nothing to listen for.
    std::lock_guard lock(impl_->mu);
    impl_->listening = !impl_->stopping;
  }
  const bool ok = impl_->listening ? impl_->http.listen_after_bind() : true;
  impl_->listened = true;
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
  bool listening = false;
  {
    std::lock_guard lock(impl_->mu);
    listening = impl_->listening;
  }
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
    std::shared_ptr<Session> session;
    {
      std::lock_guard lock(impl_->mu);
      if (auto it = impl_->sessions.find(id); it != impl_->sessions.end()) session = it->second;
    }
    if (session) session->server->drain([&] { return Clock::now() >= deadline; });
  }
  if (stateless) stateless->server->drain([&] { return Clock::now() >= deadline; });
  for (const std::string& id : ids) impl_->endSession(id);
  impl_->endStateless();
  if (listening) {
    while (!impl_->http.is_running() && !impl_->listened) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
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
