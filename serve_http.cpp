// The HTTP module's entry (see serve_http.h): the settings made into HttpOptions, the session
// factory behind the HTTP server, and serving until a stop signal.

#include "serve_http.h"

#include <cstdio>
#include <deque>
#include <string>

#include <spdlog/spdlog.h>

#include "mcp/http_server.h"
#include "session_factory.h"
#include "settings.h"

namespace {

constexpr int kUsageError = 2;

nlohmann::json limitsJson(const byd::Limits& l) {
  return {{"max_text_bytes", l.max_text_bytes},
          {"max_read_bytes", l.max_read_bytes},
          {"max_results", l.max_results},
          {"max_timeout_s", l.max_timeout_s},
          {"max_output_bytes", l.max_output_bytes}};
}

// What the operator's page shows of the policy: every setting and where it came from, the
// server's rules, each tenant's limits and rules, each runtime's image, ceilings and network.
nlohmann::json policyOf(const byd::Config& config, const byd::permissions::Guard& guard) {
  using nlohmann::json;
  json tenants = json::array();
  for (const byd::TenantSpec& t : config.tenants) {
    tenants.push_back({{"name", t.name},
                       {"max_sessions", t.max_sessions},
                       {"ruleset", t.ruleset ? t.ruleset->name() : guard.ruleset().name()},
                       {"rules", t.ruleset ? t.ruleset->json() : json(nullptr)},
                       {"limits", limitsJson(t.limits.value_or(config.limits))},
                       {"workspace_root", t.workspace_root},
                       {"runtimes", t.runtimes ? json(*t.runtimes) : json(nullptr)}});
  }
  json runtimes = json::array();
  for (const byd::RuntimeSpec& r : config.runtimes) {
    json one = {{"name", r.name}, {"description", r.description}, {"image", r.image}};
    if (r.recipe) {
      one["base_image"] = r.recipe->base_image;
      one["packages"] = {{"apt", r.recipe->apt}, {"pip", r.recipe->pip}, {"npm", r.recipe->npm}};
    }
    one["memory_bytes"] = r.memory_bytes ? json(*r.memory_bytes) : json(nullptr);
    one["cpus"] = r.cpus ? json(*r.cpus) : json(nullptr);
    one["pids"] = r.pids ? json(*r.pids) : json(nullptr);
    one["max_timeout_s"] = r.max_timeout_s ? json(*r.max_timeout_s) : json(nullptr);
    one["network"] = r.network;
    runtimes.push_back(std::move(one));
  }
  return {{"settings", byd::describeSettings(config, config.origins)},
          {"ruleset", {{"name", guard.ruleset().name()}, {"rules", guard.ruleset().json()}}},
          {"limits", limitsJson(config.limits)},
          {"tenants", std::move(tenants)},
          {"runtimes", std::move(runtimes)}};
}

int serve(const byd::Config& config, const byd::permissions::Guard& guard) {
  byd::mcp::blockStopSignals();

  // The tenants' own rules (kept here, beside the server, and past the factory's pools).
  std::deque<byd::permissions::Guard> tenant_guards;
  byd::SessionFactory sessions(config, guard);
  auto first = sessions.start();
  if (!first.ok()) {
    fprintf(stderr, "backyard-mcp: %s\n", first.status().message().c_str());
    return kUsageError;
  }
  const std::string description =
      config.workspace_root.empty()
          ? (*first)->description
          : "a fresh directory under " + config.workspace_root + " for each session";
  const byd::mcp::ServerOptions options = sessions.serverOptions(**first);
  const std::string tools = (*first)->tools;
  (*first)->warmUp();
  first->reset();  // the factory keeps it for the first session
  byd::mcp::SessionFactory factory = [&sessions, &config](const byd::mcp::Tenant& tenant,
                                                          const byd::mcp::SessionAsk& ask) {
    return sessions.next({.tenant = tenant.name,
                          .name = ask.name,
                          .workspace_root = tenant.workspace_root,
                          .guard = tenant.guard,
                          .max_named = std::min(tenant.max_sessions, config.max_sessions),
                          .runtime = ask.runtime,
                          .runtimes = tenant.runtimes ? &*tenant.runtimes : nullptr});
  };
  byd::mcp::HttpOptions http;
  http.host = config.listenHost();
  http.port = config.listenPort();
  http.allowed_hosts = config.allowed_hosts;
  http.token = config.token;
  http.admin_token = config.admin_token;
  http.ui = config.ui;
  if (config.ui) http.policy = policyOf(config, guard);
  // The tenants, each with its own rules where it has them, and what a pool of each makes.
  std::vector<byd::SessionFactory::Request> pooled;
  if (config.tenants.empty()) pooled.push_back({});
  for (const byd::TenantSpec& spec : config.tenants) {
    const byd::permissions::Guard* own = nullptr;
    if (spec.ruleset) own = &tenant_guards.emplace_back(*spec.ruleset, guard.askFallback());
    pooled.push_back({.tenant = spec.name,
                      .workspace_root = spec.workspace_root,
                      .guard = own,
                      .runtimes = spec.runtimes ? &*spec.runtimes : nullptr});
    http.tenants.push_back(byd::mcp::Tenant{.name = spec.name,
                                            .token_sha256 = spec.token_sha256,
                                            .max_sessions = spec.max_sessions,
                                            .guard = own,
                                            .limits = spec.limits,
                                            .workspace_root = spec.workspace_root,
                                            .runtimes = spec.runtimes});
  }
  // Stored workspaces, for /api/: each tenant its own, under its rules and read limit.
  const auto request = [](const byd::mcp::Tenant& tenant, const std::string& name) {
    return byd::SessionFactory::Request{.tenant = tenant.name,
                                        .name = name,
                                        .workspace_root = tenant.workspace_root,
                                        .guard = tenant.guard};
  };
  const auto limits = [&config](const byd::mcp::Tenant& tenant) {
    return tenant.limits.value_or(config.limits);
  };
  http.store = std::make_shared<byd::mcp::WorkspaceStore>(byd::mcp::WorkspaceStore{
      .sessions =
          [&sessions, request](const byd::mcp::Tenant& t) {
            return sessions.storedSessions(request(t, ""));
          },
      .list =
          [&sessions, request, limits](const byd::mcp::Tenant& t, const std::string& name,
                                       const std::string& path) {
            return sessions.storedList(request(t, name), path, limits(t).max_results);
          },
      .read =
          [&sessions, request, limits](const byd::mcp::Tenant& t, const std::string& name,
                                       const std::string& path) {
            return sessions.storedRead(request(t, name), path, limits(t).max_read_bytes);
          },
      .purge = [&sessions, request](
                   const byd::mcp::Tenant& t,
                   const std::string& name) { return sessions.purge(request(t, name)); },
  });
  // --workspace-ttl: where each tenant's sessions keep their directories.
  if (http.tenants.empty() && !config.workspace_root.empty()) {
    sessions.keepStore("default", config.workspace_root);
  }
  for (const byd::mcp::Tenant& tenant : http.tenants) {
    if (!tenant.workspace_root.empty()) sessions.keepStore(tenant.name, tenant.workspace_root);
  }
  http.max_body_bytes = config.max_message_bytes;
  http.max_sessions = config.max_sessions;
  http.session_idle = std::chrono::seconds(static_cast<int64_t>(config.session_idle_s));
  http.shutdown_grace = std::chrono::seconds(static_cast<int64_t>(config.shutdown_grace_s));
  http.read_timeout = std::chrono::seconds(static_cast<int64_t>(config.read_timeout_s));
  http.max_connections = config.max_connections;
  http.max_connections_per_address = config.max_connections_per_address;
  http.version = BYD_VERSION;
  // Stateless clients would share one workspace: not when each session must have its own.
  http.stateless =
      config.workspace_root.empty() && config.tenants.empty() && config.placement == "none";
  byd::mcp::HttpServer server(http, factory, config.limits, options, &guard);
  if (byd::Status s = server.bind(); !s.ok()) {
    fprintf(stderr, "backyard-mcp: %s\n", s.message().c_str());
    return 1;
  }
  sessions.startPools(std::move(pooled));
  const std::string host =
      http.host.find(':') != std::string::npos ? "[" + http.host + "]" : http.host;
  fprintf(stderr,
          "backyard-mcp %s: serving %s over HTTP at http://%s:%d/mcp with tools %s under %s%s.\n",
          BYD_VERSION, description.c_str(), host.c_str(), server.port(), tools.c_str(),
          config.backend == "remote" ? "the rules of each session's agent"
                                     : ("the '" + guard.ruleset().name() + "' ruleset").c_str(),
          !http.tenants.empty() ? ("; " + std::to_string(http.tenants.size()) +
                                   " tenant(s), each known by its bearer token")
                                      .c_str()
          : http.token.empty() ? ""
                               : "; clients must send the bearer token");
  bool signalled = false;
  byd::Status run = byd::mcp::runUntilStopSignal(server, &signalled);
  if (!run.ok()) {
    spdlog::error("{}", run.message());
    return 1;
  }
  spdlog::info("{}; bye", signalled ? "stopped by signal" : "stopped");
  return 0;
}

}  // namespace

extern "C" int byd_serve_http(const byd::Config* config, const byd::permissions::Guard* guard) {
  return serve(*config, *guard);
}
