// backyard-mcp: parses the configuration, opens the backend and serves MCP over stdio or HTTP.

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
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
#include "common/logging.h"
#include "common/text.h"
#include "config.h"
#include "mcp/http_server.h"
#include "mcp/server.h"
#include "mcp/transport_stdio.h"
#include "permissions/guard.h"
#include "tools/registry.h"

namespace {

constexpr int kUsageError = 2;

byd::mcp::Transport* g_transport = nullptr;
std::atomic<bool> g_signalled{false};

void onSignal(int) {
  g_signalled = true;
  if (g_transport) g_transport->stop();
}

// A workspace directory made for one backend, removed with it.
struct TempDir {
  std::string path;
  ~TempDir() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(path, ec);
  }
};

struct OpenedBackend {
  std::shared_ptr<TempDir> temp_dir;  // first: outlives the backend that works in it
  std::unique_ptr<byd::Backend> backend;
  byd::StateBackend* state = nullptr;  // set when the backend is State
  std::string description;
  std::string sandbox_note;  // said in instructions when commands run unsandboxed
  std::jthread verifier;     // last: joined before the backend it checks is destroyed
};

// The Docker backend: --root, or a fresh temporary directory owned by the container's user.
byd::Result<OpenedBackend> openDocker(const byd::Config& config, bool warm) {
  OpenedBackend out;
  byd::Config c = config;
  if (!c.sandbox_user.empty()) {
    BYD_ASSIGN_OR_RETURN(auto ids, byd::resolveSandboxUser(c.sandbox_user));
    c.docker.user = std::to_string(ids.first) + ":" + std::to_string(ids.second);
  }
  std::string workspace = c.root;
  if (!c.root_given) {
    out.temp_dir = std::make_shared<TempDir>();
    std::string dir = (std::filesystem::temp_directory_path() / "byd-workspace-XXXXXX").string();
    if (mkdtemp(dir.data()) == nullptr) {
      return byd::internalError("cannot make a workspace directory: " +
                                std::string(strerror(errno)));
    }
    out.temp_dir->path = dir;
    BYD_ASSIGN_OR_RETURN(byd::ContainerUser user, byd::parseContainerUser(c.docker.user));
    if (chown(dir.c_str(), user.uid, user.gid) != 0 && geteuid() == 0) {
      return byd::internalError("cannot give the workspace to the container's user: " +
                                std::string(strerror(errno)));
    }
    workspace = dir;
  } else if (struct stat st; stat(workspace.c_str(), &st) == 0) {
    BYD_ASSIGN_OR_RETURN(byd::ContainerUser user, byd::parseContainerUser(c.docker.user));
    // The rights of the user's class (owner, group or others), as the kernel would pick it.
    const mode_t rights = st.st_uid == user.uid   ? (st.st_mode >> 6) & 7
                          : st.st_gid == user.gid ? (st.st_mode >> 3) & 7
                                                  : st.st_mode & 7;
    const std::string owner = std::to_string(st.st_uid);
    if ((rights & 5) != 5) {
      char mode[8];
      snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
      return byd::failedPrecondition(
          "--root " + workspace + " (owner uid " + owner + ", mode " + mode +
          "): the container's user, uid " + std::to_string(user.uid) +
          ", cannot enter it, so every call would fail. Give it to that user (chown " +
          std::to_string(user.uid) + ":" + std::to_string(user.gid) + " " + workspace + ")" +
          (st.st_uid == 0 ? std::string(" or give others access (chmod o+rwx)")
                          : ", or run commands as its owner (--sandbox-user " + owner + ")"));
    }
    if (warm && !(rights & 2)) {
      spdlog::warn("docker: the container's user (uid {}) cannot write {} (owned by uid {}); {}",
                   user.uid, workspace, st.st_uid,
                   st.st_uid == 0 ? "give that uid write access to it"
                                  : "start with --sandbox-user " + std::to_string(st.st_uid) +
                                        " to run commands as its owner");
    }
  }
  BYD_ASSIGN_OR_RETURN(auto docker, byd::DockerBackend::open(workspace, c.docker));
  std::string runtime = "its runtime unknown until the engine answers";
  // The start-up line and the instructions say what isolates the container.
  if (auto r = docker->resolveRuntime(); r.ok()) {
    runtime = r->name == "runsc" ? "gVisor (runsc)" : "runc, without gVisor";
    if (!r->warning.empty() && warm) spdlog::warn("docker: {}", r->warning);
  } else if (warm) {
    spdlog::warn("docker: {}; file tools work, execute and run_python wait for the engine",
                 r.status().message());
  }
  out.description = "a Docker container (image " + c.docker.image + ", " + runtime + ", network " +
                    c.docker.network + ") whose /workspace is " + workspace;
  out.backend = std::move(docker);
  return out;
}

// `warm`: check the sandbox and start its helper and a spare Python kernel now, in the
// background (stdio, and the first HTTP session); otherwise when first needed (further HTTP
// sessions: an idle one then costs no processes).
byd::Result<OpenedBackend> openBackend(const byd::Config& c, bool warm = true) {
  OpenedBackend out;
  if (c.backend == "state") {
    BYD_ASSIGN_OR_RETURN(auto state, byd::StateBackend::open(c.state_file, c.state_sync));
    out.state = state.get();
    out.backend = std::move(state);
    out.description = "an in-memory workspace (State backend, root " + out.backend->root() + ")";
    if (!c.state_file.empty()) out.description += " backed by " + c.state_file;
    return out;
  }
  if (c.backend == "docker") return openDocker(c, warm);
  BYD_ASSIGN_OR_RETURN(auto local, byd::LocalBackend::open(c.root, c.allow));
  byd::SandboxOptions options;
  options.isolate = c.sandbox != "none";
  options.limits = c.sandbox_limits;
  options.user = c.sandbox_user;
  // Tests only: a comma-separated list of layers to leave out (see SandboxOptions::without).
  if (const char* without = getenv("BYD_TEST_SANDBOX_WITHOUT")) {
    options.without = byd::splitList(without, ',');
  }
  auto sandbox = byd::Sandbox::create(local->writableDirs(), options);
  byd::PythonOptions python = c.python;
  python.spare_at_start = warm;
  if (sandbox.ok() && warm) {
    // The kernel's answer comes in the background, so start-up does not wait for it.
    const byd::Sandbox* box = sandbox->get();
    out.verifier = std::jthread([box] {
      if (byd::Status s = box->verify(); s.ok()) {
        spdlog::info("sandbox: {}", box->layers());
      } else {
        spdlog::warn("execute and run_python are unavailable: {}", s.message());
      }
    });
  }
  if (sandbox.ok()) {
    if (!options.isolate) {
      if (warm) {
        spdlog::warn("--sandbox none: commands run WITHOUT ISOLATION, with this server's rights");
      }
      out.sandbox_note = " Commands run WITHOUT a sandbox (--sandbox none).";
    }
    local->setSandbox(std::move(*sandbox), "", python);
  } else {
    spdlog::warn("execute is unavailable: {}", sandbox.status().message());
    local->setSandbox(nullptr, sandbox.status().message());
  }
  out.backend = std::move(local);
  out.description = "the local directory " + out.backend->root();
  for (const std::string& dir : c.allow) out.description += " (also " + dir + ")";
  return out;
}

// The tools offered, as tools/list lists them.
std::string toolNames(const byd::Backend& backend, const byd::permissions::Guard& guard) {
  std::string names;
  for (const byd::Tool& tool : byd::allTools()) {
    if (!byd::mcp::toolOffered(tool, backend, &guard)) continue;
    names += (names.empty() ? "" : ", ") + std::string(tool.spec->name);
  }
  return names;
}

std::string instructions(const OpenedBackend& b, const byd::permissions::Guard& guard) {
  const byd::permissions::Ruleset& rules = guard.ruleset();
  return "This server gives you a console on " + b.description + ", under the '" + rules.name() +
         "' permission ruleset. " + rules.json().value("description", std::string()) +
         " Paths are relative to the workspace root (" + b.backend->root() +
         "); absolute paths inside it also work. Tools: " + toolNames(*b.backend, guard) +
         ". Use ls, glob and grep to explore, and read a file before you edit it." + b.sandbox_note;
}

byd::mcp::ServerOptions serverOptions(const byd::Config& config, const OpenedBackend& opened,
                                      const byd::permissions::Guard& guard) {
  byd::mcp::ServerOptions options;
  options.version = BYD_VERSION;
  options.instructions = instructions(opened, guard);
  options.workers = config.workers;
  options.ask_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(config.ask_timeout_s * 1000));
  return options;
}

// Serves MCP over HTTP until SIGTERM or SIGINT. Each session opens a backend of its own (its
// own sandbox and Python kernels); the one opened at start, which checks the configuration,
// serves the first session.
int serveHttp(const byd::Config& config, const byd::permissions::Guard& guard) {
  byd::mcp::blockStopSignals();

  auto first = openBackend(config);
  if (!first.ok()) {
    fprintf(stderr, "backyard-mcp: %s\n", first.status().message().c_str());
    return kUsageError;
  }
  const std::string description =
      config.workspace_root.empty()
          ? first->description
          : "a fresh directory under " + config.workspace_root + " for each session";
  const byd::mcp::ServerOptions options = serverOptions(config, *first, guard);
  const std::string tools = toolNames(*first->backend, guard);
  auto spare = std::make_shared<OpenedBackend>(std::move(*first));
  if (!config.workspace_root.empty()) spare.reset();  // sessions get directories of their own
  std::mutex spare_mu;
  byd::mcp::SessionFactory factory = [&]() -> byd::Result<byd::mcp::SessionBackend> {
    std::shared_ptr<OpenedBackend> opened;
    {
      std::lock_guard lock(spare_mu);
      opened = std::move(spare);
    }
    if (!opened) {
      byd::Config session_config = config;
      if (!config.workspace_root.empty()) {
        std::string dir = config.workspace_root + "/session-XXXXXX";
        if (mkdtemp(dir.data()) == nullptr) {
          return byd::internalError("cannot make a session directory under " +
                                    config.workspace_root + ": " + strerror(errno));
        }
        session_config.root = dir;
        session_config.root_given = true;
      }
      BYD_ASSIGN_OR_RETURN(OpenedBackend fresh, openBackend(session_config, /*warm=*/false));
      opened = std::make_shared<OpenedBackend>(std::move(fresh));
    }
    return byd::mcp::SessionBackend{opened->backend.get(), opened, instructions(*opened, guard)};
  };
  byd::mcp::HttpOptions http;
  http.host = config.listenHost();
  http.port = config.listenPort();
  http.allowed_hosts = config.allowed_hosts;
  http.token = config.token;
  http.max_body_bytes = config.max_message_bytes;
  http.max_sessions = config.max_sessions;
  http.session_idle = std::chrono::seconds(static_cast<int64_t>(config.session_idle_s));
  http.shutdown_grace = std::chrono::seconds(static_cast<int64_t>(config.shutdown_grace_s));
  http.read_timeout = std::chrono::seconds(static_cast<int64_t>(config.read_timeout_s));
  http.max_connections = config.max_connections;
  http.max_connections_per_address = config.max_connections_per_address;
  http.version = BYD_VERSION;
  // Stateless clients would share one workspace: not when each session must have its own.
  http.stateless = config.workspace_root.empty();
  byd::mcp::HttpServer server(http, factory, config.limits, options, &guard);
  if (byd::Status s = server.bind(); !s.ok()) {
    fprintf(stderr, "backyard-mcp: %s\n", s.message().c_str());
    return 1;
  }
  const std::string host =
      http.host.find(':') != std::string::npos ? "[" + http.host + "]" : http.host;
  fprintf(stderr,
          "backyard-mcp %s: serving %s over HTTP at http://%s:%d/mcp with tools %s under the "
          "'%s' ruleset%s.\n",
          BYD_VERSION, description.c_str(), host.c_str(), server.port(), tools.c_str(),
          guard.ruleset().name().c_str(),
          http.token.empty() ? "" : "; clients must send the bearer token");
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

int main(int argc, char** argv) {
  // The sandbox starts this binary again, inside it, as the launcher of its commands.
  if (auto helper = byd::runSandboxHelper(argc, argv)) return *helper;
  signal(SIGPIPE, SIG_IGN);
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

  if (config.transport == "http") return serveHttp(config, guard);

  auto opened = openBackend(config);
  if (!opened.ok()) {
    fprintf(stderr, "backyard-mcp: %s\n", opened.status().message().c_str());
    return kUsageError;
  }
  byd::mcp::StdioTransport transport(STDIN_FILENO, STDOUT_FILENO, config.max_message_bytes);
  byd::mcp::Server server(transport, *opened->backend, config.limits,
                          serverOptions(config, *opened, guard), &guard);

  g_transport = &transport;
  struct sigaction sa = {};
  sa.sa_handler = onSignal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);

  if (config.log_level != "off") {
    fprintf(stderr,
            "backyard-mcp %s: serving %s over stdio with tools %s under the '%s' ruleset. An "
            "MCP client connects by launching this command with pipes on stdin/stdout (see "
            "examples/ for Claude Desktop and Claude Code).\n",
            BYD_VERSION, opened->description.c_str(), toolNames(*opened->backend, guard).c_str(),
            guard.ruleset().name().c_str());
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
