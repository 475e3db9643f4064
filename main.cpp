// backyard-mcp: parses the configuration, opens the backend and serves MCP over stdio.

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <memory>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "backends/local/local_backend.h"
#include "backends/state/state_backend.h"
#include "config.h"
#include "mcp/server.h"
#include "mcp/transport_stdio.h"
#include "tools/registry.h"

namespace {

constexpr int kUsageError = 2;

byd::mcp::Transport* g_transport = nullptr;
std::atomic<bool> g_signalled{false};

void onSignal(int) {
  g_signalled = true;
  if (g_transport) g_transport->stop();
}

void setUpLogging(const std::string& level) {
  // Logs go to stderr only: stdout carries nothing but protocol messages.
  auto logger = spdlog::stderr_logger_mt("backyard-mcp");
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  logger->set_level(spdlog::level::from_str(level));
  spdlog::set_default_logger(logger);
}

struct OpenedBackend {
  std::unique_ptr<byd::Backend> backend;
  byd::StateBackend* state = nullptr;  // set when the backend is State
  std::string description;
};

byd::Result<OpenedBackend> openBackend(const byd::Config& c) {
  OpenedBackend out;
  if (c.backend == "state") {
    BYD_ASSIGN_OR_RETURN(auto state, byd::StateBackend::open(c.state_file, c.state_sync));
    out.state = state.get();
    out.backend = std::move(state);
    out.description = "an in-memory workspace (State backend, root " + out.backend->root() + ")";
    if (!c.state_file.empty()) out.description += " backed by " + c.state_file;
    return out;
  }
  BYD_ASSIGN_OR_RETURN(auto local, byd::LocalBackend::open(c.root, c.allow));
  out.backend = std::move(local);
  out.description = "the local directory " + out.backend->root();
  for (const std::string& dir : c.allow) out.description += " (also " + dir + ")";
  return out;
}

std::string toolNames() {
  std::string names;
  for (const byd::Tool& tool : byd::allTools()) {
    names += (names.empty() ? "" : ", ") + std::string(tool.spec->name);
  }
  return names;
}

std::string instructions(const OpenedBackend& b) {
  return "This server gives you a console on " + b.description +
         ". Paths are relative to the workspace root (" + b.backend->root() +
         "); absolute paths inside it also work. Tools: " + toolNames() +
         ". Use ls, glob and grep to explore, read_file before edit_file, and edit_file for "
         "changes to existing files.";
}

}  // namespace

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  auto parsed = byd::parseCommandLine(argc, argv, BYD_VERSION);
  if (!parsed.ok()) {
    fprintf(stderr, "backyard-mcp: %s\n", parsed.status().message().c_str());
    return kUsageError;
  }
  if (parsed->exit_now) return parsed->exit_code;
  const byd::Config& config = parsed->config;
  setUpLogging(config.log_level);

  auto opened = openBackend(config);
  if (!opened.ok()) {
    fprintf(stderr, "backyard-mcp: %s\n", opened.status().message().c_str());
    return kUsageError;
  }
  byd::mcp::StdioTransport transport(STDIN_FILENO, STDOUT_FILENO, config.max_message_bytes);
  byd::mcp::ServerOptions options;
  options.version = BYD_VERSION;
  options.instructions = instructions(*opened);
  options.workers = config.workers;
  byd::mcp::Server server(transport, *opened->backend, config.limits, options);

  g_transport = &transport;
  struct sigaction sa = {};
  sa.sa_handler = onSignal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);

  if (config.log_level != "off") {
    fprintf(stderr,
            "backyard-mcp %s: serving %s over stdio with tools %s. An MCP client connects by "
            "launching this command with pipes on stdin/stdout (see examples/ for Claude "
            "Desktop and Claude Code).\n",
            BYD_VERSION, opened->description.c_str(), toolNames().c_str());
  }
  byd::Status run = transport.run(server);
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
