// backyard-mcp: parses the configuration, has the session factory make the backend, and serves
// MCP over stdio or HTTP.

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>

#include "backends/local/local_backend.h"
#include "backends/state/state_backend.h"
#include "batch.h"
#include "common/audit_log.h"
#include "common/logging.h"
#include "common/text.h"
#include "config.h"
#include "mcp/server.h"
#include "mcp/transport_stdio.h"
#include "permissions/guard.h"
#include "serve_http.h"
#include "session_factory.h"
#include "tools/registry.h"

namespace {

constexpr int kUsageError = 2;

byd::mcp::Transport* g_transport = nullptr;
std::atomic<bool> g_signalled{false};

void onSignal(int) {
  g_signalled = true;
  if (g_transport) g_transport->stop();
}

}  // namespace

int main(int argc, char** argv) {
  // The sandbox starts this binary again, inside it, as the launcher of its commands.
  if (auto helper = byd::runSandboxHelper(argc, argv)) return *helper;
  signal(SIGPIPE, SIG_IGN);
  if (argc > 1 && strcmp(argv[1], "batch") == 0) return byd::runBatch(argc - 1, argv + 1);
  auto parsed = byd::parseCommandLine(argc, argv, BYD_VERSION);
  if (!parsed.ok()) {
    fprintf(stderr, "backyard-mcp: %s\n", parsed.status().message().c_str());
    return kUsageError;
  }
  if (parsed->exit_now) return parsed->exit_code;
  const byd::Config& config = parsed->config;
  if (parsed->print_config) {
    printf("%s\n", byd::describeSettings(config, parsed->origins).dump(2).c_str());
    return 0;
  }
  auto rules = byd::loadRuleset(config);
  if (!rules.ok()) {
    fprintf(stderr, "backyard-mcp: %s\n", rules.status().message().c_str());
    return kUsageError;
  }
  if (config.print_ruleset) {
    printf("%s\n", rules->json().dump(2).c_str());
    return 0;
  }
  byd::setUpLogging("backyard-mcp", config.log_level);
  const auto fallback = config.ask_fallback == "allow" ? byd::permissions::AskFallback::kAllow
                                                       : byd::permissions::AskFallback::kDeny;
  if (fallback == byd::permissions::AskFallback::kAllow) {
    spdlog::warn(
        "--ask-fallback allow: operations the rules mark 'ask' RUN WITHOUT APPROVAL "
        "whenever the client cannot ask the user");
  }
  const byd::permissions::Guard guard(*rules, fallback);
  std::unique_ptr<byd::AuditLog> audit;
  if (!config.audit_log.empty()) {
    auto opened = byd::AuditLog::open(config.audit_log);
    if (!opened.ok()) {
      fprintf(stderr, "backyard-mcp: %s\n", opened.status().message().c_str());
      return kUsageError;
    }
    audit = std::move(*opened);
    byd::AuditLog::setGlobal(audit.get());
    struct sigaction hup = {};
    hup.sa_handler = [](int) { byd::AuditLog::reopenSoon(); };
    hup.sa_flags = SA_RESTART;
    sigaction(SIGHUP, &hup, nullptr);
  }
  // Calls still running when main returns write nowhere.
  struct Unset {
    ~Unset() { byd::AuditLog::setGlobal(nullptr); }
  } unset_audit;

  if (config.transport == "http") return byd::serveHttp(config, guard);

  byd::SessionFactory sessions(config, guard);
  auto started = sessions.start();
  if (!started.ok()) {
    fprintf(stderr, "backyard-mcp: %s\n", started.status().message().c_str());
    return kUsageError;
  }
  const std::shared_ptr<byd::SessionStack>& opened = *started;
  byd::mcp::StdioTransport transport(STDIN_FILENO, STDOUT_FILENO, config.max_message_bytes);
  // The sandbox is checked, and its helper and a spare kernel started, once the first answer
  // is out (on two cores that work would otherwise delay it by about 2 ms), or 50 ms after
  // start when no message has come (a person at a terminal sees the sandbox's report at once).
  transport.afterFirstSend([&opened] { opened->warmUp(); });
  std::jthread warm_timer([&opened](std::stop_token stop) {
    std::mutex mu;
    std::condition_variable_any never;
    std::unique_lock lock(mu);
    never.wait_for(lock, stop, std::chrono::milliseconds(50), [] { return false; });
    if (!stop.stop_requested()) opened->warmUp();
  });
  byd::mcp::Server server(transport, *opened->backend, config.limits,
                          sessions.serverOptions(*opened), &guard);

  g_transport = &transport;
  struct sigaction sa = {};
  sa.sa_handler = onSignal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);

  if (config.log_level != "off") {
    const std::string rules = opened->remote ? std::string("the remote service's rules")
                                             : "the '" + guard.ruleset().name() + "' ruleset";
    fprintf(stderr,
            "backyard-mcp %s: serving %s over stdio with tools %s under %s. An MCP client "
            "connects by launching this command with pipes on stdin/stdout (see examples/ for "
            "Claude Desktop and Claude Code).\n",
            BYD_VERSION, opened->description.c_str(), opened->tools.c_str(), rules.c_str());
  }
  byd::Status run = transport.run(server);
  server.clientClosed();
  if (g_signalled) server.cancelAll();
  // A signal that arrives while the last requests finish cancels them.
  server.drain([] { return g_signalled.load(); });
  g_transport = nullptr;
  if (opened->state) {
    if (byd::Status s = opened->state->save(); !s.ok()) {
      spdlog::error("saving the state file failed: {}", s.message());
      return 1;
    }
  }
  if (!run.ok()) {
    spdlog::error("{}", run.message());
    return 1;
  }
  spdlog::info("{}; bye", g_signalled ? "stopped by signal" : "stdin closed");
  return 0;
}
