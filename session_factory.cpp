#include "session_factory.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "backends/docker/docker_backend.h"
#include "backends/local/fork_rendezvous.h"
#include "backends/local/local_backend.h"
#include "backends/local/sandbox_identity.h"
#include "common/container.h"
#include "common/text.h"
#include "mcp/crypto.h"
#include "permissions/guarded_backend.h"
#include "placement/kubernetes.h"
#include "placement/swarm.h"
#include "tools/registry.h"

namespace byd {
namespace {

// Why the packages directory may not be `dir`: it lies in, or holds, a directory that code or
// the file tools may write ("" when it does not).
std::string overlapsWorkspace(const std::string& dir, const std::vector<std::string>& writable) {
  std::error_code ec;
  const std::filesystem::path packages = std::filesystem::weakly_canonical(dir, ec);
  for (const std::string& w : writable) {
    const std::filesystem::path root = std::filesystem::weakly_canonical(w, ec);
    const auto inside = [](const std::filesystem::path& a, const std::filesystem::path& b) {
      auto rel = a.lexically_relative(b);
      return !rel.empty() && *rel.begin() != "..";
    };
    if (inside(packages, root) || inside(root, packages)) {
      return "--python-packages " + dir + " overlaps the workspace " + w +
             ", which code and the file tools may write: choose a directory outside it";
    }
  }
  return "";
}

// The Docker backend: --root, or a fresh temporary directory owned by the container's user.
Result<SessionStack> openDocker(const Config& config, bool warm, const permissions::Guard& guard) {
  SessionStack out;
  Config c = config;
  if (!c.sandbox_user.empty()) {
    BYD_ASSIGN_OR_RETURN(auto ids, resolveSandboxUser(c.sandbox_user));
    c.docker.user = std::to_string(ids.first) + ":" + std::to_string(ids.second);
  }
  c.docker.open_files = c.sandbox_limits.open_files;
  c.docker.write_sync = c.write_sync;
  c.docker.processes = c.sandbox_limits.processes;
  // The server's proxy, when the rules may let anything out of a container with no network.
  c.docker.proxy =
      c.docker.network == "none" && !guard.ruleset().alwaysDenied(permissions::Operation::kNetwork);
  // Tests only: BYD_TEST_SANDBOX_WITHOUT=masks leaves the file rules' masks out.
  if (const char* without = getenv("BYD_TEST_SANDBOX_WITHOUT")) {
    for (const std::string& layer : splitList(without, ',')) {
      if (layer == "masks") c.docker.test_without_masks = true;
    }
  }
  std::string workspace = c.root;
  if (!c.root_given) {
    out.temp_dir = std::make_shared<TempDir>();
    std::string dir = (std::filesystem::temp_directory_path() / "byd-workspace-XXXXXX").string();
    if (mkdtemp(dir.data()) == nullptr) {
      return internalError("cannot make a workspace directory: " + std::string(strerror(errno)));
    }
    out.temp_dir->path = dir;
    BYD_ASSIGN_OR_RETURN(ContainerUser user, parseContainerUser(c.docker.user));
    if (chown(dir.c_str(), user.uid, user.gid) != 0 && geteuid() == 0) {
      return internalError("cannot give the workspace to the container's user: " +
                           std::string(strerror(errno)));
    }
    workspace = dir;
  } else if (struct stat st; stat(workspace.c_str(), &st) == 0) {
    BYD_ASSIGN_OR_RETURN(ContainerUser user, parseContainerUser(c.docker.user));
    // The rights of the user's class (owner, group or others), as the kernel would pick it.
    const mode_t rights = st.st_uid == user.uid   ? (st.st_mode >> 6) & 7
                          : st.st_gid == user.gid ? (st.st_mode >> 3) & 7
                                                  : st.st_mode & 7;
    const std::string owner = std::to_string(st.st_uid);
    if ((rights & 5) != 5) {
      char mode[8];
      snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
      return failedPrecondition(
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
  // Packages on demand: a directory per image (the Python inside decides what fits),
  // read-only in the containers of code, written by an installer backend of its own.
  std::unique_ptr<PackageInstaller> installer;
  if (!c.python.packages_dir.empty()) {
    std::string dir = c.python.packages_dir + "/docker-";
    for (char ch : c.docker.image) dir += isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    BYD_ASSIGN_OR_RETURN(ContainerUser user, parseContainerUser(c.docker.user));
    if (std::string overlap = overlapsWorkspace(dir, {workspace}); !overlap.empty()) {
      spdlog::warn("run_python installs no packages: {}", overlap);
    } else if (ec || (geteuid() == 0 && chown(dir.c_str(), user.uid, user.gid) != 0)) {
      spdlog::warn("run_python installs no packages: cannot make {} for uid {}: {}", dir, user.uid,
                   ec ? ec.message() : strerror(errno));
    } else {
      c.docker.packages_dir = dir;
    }
  }
  if (!c.docker.packages_dir.empty() &&
      !guard.ruleset().alwaysDenied(permissions::Operation::kInstall)) {
    DockerOptions pip = c.docker;
    pip.packages_dir.clear();
    pip.container_name.clear();
    pip.network = "none";
    pip.proxy = true;
    pip.test_without_masks = false;
    auto box = DockerBackend::open(c.docker.packages_dir, pip);
    auto index = parsePackageIndex(c.python.package_index);
    if (box.ok() && index.ok()) {
      installer =
          dockerPackageInstaller(std::move(*box), c.docker.packages_dir, *index, c.docker.python);
    }
  }
  BYD_ASSIGN_OR_RETURN(auto docker, DockerBackend::open(workspace, c.docker));
  docker->setInstaller(std::move(installer));
  std::string runtime = "its runtime unknown until the engine answers";
  // The start-up line and the instructions say what isolates the container.
  if (auto r = docker->resolveRuntime(); r.ok()) {
    runtime = r->name == "runsc" ? "gVisor (runsc)" : "runc, without gVisor";
    if (!r->warning.empty() && warm) spdlog::warn("docker: {}", r->warning);
  } else if (warm) {
    spdlog::warn("docker: {}; file tools work, execute and run_python wait for the engine",
                 r.status().message());
  }
  const std::string network =
      c.docker.proxy ? "only the server's proxy (127.0.0.1:3128 inside)" : c.docker.network;
  const std::string masks = c.docker.test_without_masks ? "the workspace unmasked (TEST: masks off)"
                                                        : "the file rules masked inside";
  out.description = "a Docker container (image " + c.docker.image + ", " + runtime + ", network " +
                    network + ", " + masks + ") whose /workspace is " + workspace;
  out.backend = std::move(docker);
  return out;
}

// --backend remote's stand-in for a backend: the files are the remote's, and every tool call
// goes there (ServerOptions::remote) without reaching this.
class RemoteWorkspace final : public Backend {
 public:
  explicit RemoteWorkspace(std::string url) : url_(std::move(url)) {}
  std::string_view kind() const override { return "remote"; }
  std::string root() const override { return url_; }
  Result<std::string> normalize(std::string_view path) const override {
    return lexicalNormalize(path);
  }
  Result<FileInfo> stat(const std::string&) const override { return elsewhere(); }
  Result<std::vector<FileInfo>> list(const std::string&) const override { return elsewhere(); }
  Result<std::string> read(const std::string&, uint64_t, uint64_t) const override {
    return elsewhere();
  }
  Result<WriteOutcome> write(const std::string&, std::string_view, WriteMode) override {
    return elsewhere();
  }
  Result<bool> makeDir(const std::string&) override { return elsewhere(); }
  Result<MoveOutcome> move(const std::string&, const std::string&, bool) override {
    return elsewhere();
  }
  Result<RemoveOutcome> remove(const std::string&, bool) override { return elsewhere(); }

 private:
  Status elsewhere() const {
    return unimplemented("the workspace is the remote service's, at " + url_);
  }
  const std::string url_;
};

// A client of the backyard-mcp at `url`, sent `token`.
std::shared_ptr<mcp::RemoteClient> remoteClient(const std::string& url, const std::string& token) {
  mcp::RemoteOptions remote;
  remote.url = url;
  remote.token = token;
  remote.client_version = BYD_VERSION;
  return std::make_shared<mcp::RemoteClient>(std::move(remote));
}

// This machine's (a container's, a pod's) host name: what a front labels its sandboxes with.
std::string hostName() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return host;
}

// What the instructions of a runtime's session add.
std::string runtimeSentence(const RuntimeSpec& runtime) {
  return " It runs the runtime '" + runtime.name + "'" +
         (runtime.description.empty() ? "" : ": " + runtime.description) +
         (runtime.description.ends_with('.') ? "" : ".");
}

// What a session placed in a sandbox of its own is told; `which` names the sandbox.
std::string placedInstructions(const std::string& which) {
  return "This server gives you a console on a sandbox of your own" + which +
         ", made for this session and removed when it ends: your tool calls run there, under its "
         "permission rules. Paths are relative to its workspace root. Use ls, glob and grep to "
         "explore, and read a file before you edit it.";
}

// `warm`: the stack can be warmed up (SessionStack::warmUp: stdio, and the first HTTP
// session); otherwise the sandbox is checked and its helper and kernels started when first
// needed (further HTTP sessions: an idle one then costs no processes).
Result<SessionStack> openStack(const Config& c, bool warm, const permissions::Guard& guard) {
  SessionStack out;
  if (c.backend == "state") {
    BYD_ASSIGN_OR_RETURN(auto state, StateBackend::open(c.state_file, c.state_sync));
    out.state = state.get();
    out.backend = std::move(state);
    out.description = "an in-memory workspace (State backend, root " + out.backend->root() + ")";
    if (!c.state_file.empty()) out.description += " backed by " + c.state_file;
    return out;
  }
  if (c.backend == "docker") return openDocker(c, warm, guard);
  if (c.backend == "remote" && c.placement != "none") {
    // The front's own stack: each session's is placed (SessionFactory::placed).
    out.backend = std::make_unique<RemoteWorkspace>("a sandbox of its own");
    return out;
  }
  if (c.backend == "remote") {
    out.remote = remoteClient(c.remote_url, c.token);
    out.backend = std::make_unique<RemoteWorkspace>(c.remote_url);
    out.description = "the workspace of the remote backyard-mcp service at " + c.remote_url;
    return out;
  }
  BYD_ASSIGN_OR_RETURN(auto local, LocalBackend::open(c.root, c.allow));
  local->setWriteSync(c.write_sync);
  SandboxOptions options;
  options.isolate = c.sandbox == "bwrap";
  options.container = c.sandbox == "container";
  options.limits = c.sandbox_limits;
  options.user = c.sandbox_user;
  // The proxy's port inside the sandbox, when the rules may let anything out.
  if (!guard.ruleset().alwaysDenied(permissions::Operation::kNetwork)) options.proxy_port = 3128;
  // Tests only: a comma-separated list of layers to leave out (see SandboxOptions::without).
  if (const char* without = getenv("BYD_TEST_SANDBOX_WITHOUT")) {
    options.without = splitList(without, ',');
  }
  // Packages installed on demand: read-only here, written by an installer of their own.
  PythonOptions python = c.python;
  std::unique_ptr<PackageInstaller> installer;
  if (options.isolate) {
    std::error_code ec;
    std::filesystem::create_directories(python.packages_dir, ec);
    if (std::string overlap = overlapsWorkspace(python.packages_dir, local->writableDirs());
        !overlap.empty()) {
      spdlog::warn("run_python installs no packages: {}", overlap);
      python.packages_dir.clear();
    } else if (ec) {
      spdlog::warn("run_python installs no packages: cannot make {}: {}", python.packages_dir,
                   ec.message());
      python.packages_dir.clear();
    } else {
      options.readonly.push_back(python.packages_dir);
    }
  } else {
    python.packages_dir.clear();
  }
  // Where a session's forks reach the server (fork_rendezvous.h).
  if (auto forks = ForkRendezvous::dir(); options.isolate && forks.ok()) {
    options.readonly.push_back(*forks);
  } else if (options.isolate) {
    spdlog::warn("run_python sessions cannot fork: {}", forks.status().message());
    python.fork_sessions = false;
  }
  if (!python.packages_dir.empty() &&
      !guard.ruleset().alwaysDenied(permissions::Operation::kInstall)) {
    SandboxOptions pip = options;
    pip.readonly.clear();
    pip.proxy_port = 3128;
    pip.without.clear();
    auto pip_sandbox = Sandbox::create({python.packages_dir}, pip);
    auto index = parsePackageIndex(python.package_index);
    if (pip_sandbox.ok() && index.ok()) {
      installer = PackageInstaller::local(std::move(*pip_sandbox), python.packages_dir, *index,
                                          python.python);
    }
  }
  auto sandbox = Sandbox::create(local->writableDirs(), options);
  if (sandbox.ok() && warm) {
    // The kernel's answer comes in the background, so start-up does not wait for it.
    const Sandbox* box = sandbox->get();
    LocalBackend* backend = local.get();
    out.warm_up = [box, backend] {
      return std::jthread([box, backend] {
        if (Status s = box->verify(); s.ok()) {
          spdlog::info("sandbox: {}", box->layers());
          backend->warmPython();
        } else {
          spdlog::warn("execute and run_python are unavailable: {}", s.message());
        }
      });
    };
  }
  if (sandbox.ok()) {
    if (options.container) {
      if (warm) {
        spdlog::info(
            "--sandbox container: commands and Python run without a nested sandbox; the "
            "container this server runs in ({}) is the boundary",
            containerEvidence());
      }
      out.sandbox_note =
          " Commands and Python run in the container this server runs in, without a sandbox "
          "of their own (--sandbox container): the container is the boundary.";
    } else if (!options.isolate) {
      if (warm) {
        spdlog::warn("--sandbox none: commands run WITHOUT ISOLATION, with this server's rights");
      }
      out.sandbox_note = " Commands run WITHOUT a sandbox (--sandbox none).";
    }
    local->setSandbox(std::move(*sandbox), "", python);
    local->setInstaller(std::move(installer));
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
std::string offeredTools(Backend& backend, const permissions::Guard& guard) {
  std::string names;
  for (const Tool& tool : allTools()) {
    if (!mcp::toolOffered(tool, backend, &guard)) continue;
    names += (names.empty() ? "" : ", ") + std::string(tool.spec->name);
  }
  return names;
}

std::string instructionsFor(const SessionStack& b, const permissions::Guard& guard) {
  const permissions::Ruleset& rules = guard.ruleset();
  return "This server gives you a console on " + b.description + ", under the '" + rules.name() +
         "' permission ruleset. " + rules.json().value("description", std::string()) +
         " Paths are relative to the workspace root (" + b.backend->root() +
         "); absolute paths inside it also work. Tools: " + offeredTools(*b.backend, guard) +
         ". Use ls, glob and grep to explore, and read a file before you edit it." + b.sandbox_note;
}

}  // namespace

TempDir::~TempDir() {
  std::error_code ec;
  if (!path.empty()) std::filesystem::remove_all(path, ec);
}

SessionFactory::SessionFactory(const Config& config, const permissions::Guard& guard)
    : config_(config), guard_(guard) {}

Result<SessionStack> SessionFactory::open(const Config& config, bool warm,
                                          const permissions::Guard& guard) const {
  BYD_ASSIGN_OR_RETURN(SessionStack stack, openStack(config, warm, guard));
  if (stack.remote || config.placement != "none") {
    stack.tools = "those the remote service offers";
    stack.instructions =
        "This server gives you a console on " + stack.description +
        ": your tool calls run there, under that service's permission rules and sandbox. Paths "
        "are relative to its workspace root. Use ls, glob and grep to explore, and read a file "
        "before you edit it.";
    return stack;
  }
  stack.tools = offeredTools(*stack.backend, guard);
  stack.instructions = instructionsFor(stack, guard);
  return stack;
}

Result<std::shared_ptr<SessionStack>> SessionFactory::start() {
  if (config_.placement == "kubernetes") {
    placement::KubernetesOptions options;
    if (config_.kubernetes_api.empty()) {
      BYD_ASSIGN_OR_RETURN(options, placement::inClusterOptions());
    } else {
      options.api_server = config_.kubernetes_api;
      options.token_file = config_.kubernetes_token_file;
      options.ca_file = config_.kubernetes_ca_file;
    }
    if (!config_.kubernetes_namespace.empty()) options.namespace_ = config_.kubernetes_namespace;
    if (options.namespace_.empty()) {
      return invalidArgument(
          "--placement kubernetes with --kubernetes-api needs --kubernetes-namespace");
    }
    options.warm_pool = config_.kubernetes_warm_pool;
    options.workspace_size = config_.kubernetes_workspace_size;
    options.agent_port = config_.agent_port;
    options.front = hostName();  // in a pod, its name
    auto k8s = std::make_shared<placement::KubernetesPlacement>(std::move(options));
    if (auto orphans = k8s->releaseOrphans(); !orphans.ok()) {
      spdlog::warn("the claims earlier or replaced fronts left: {}", orphans.status().message());
    }
    placement_ = std::move(k8s);
  } else if (config_.placement == "docker-swarm") {
    placement::SwarmOptions options;
    options.docker_host = config_.docker.host;
    options.network = config_.swarm_network;
    options.image = config_.agent_image;
    options.token = config_.agent_token;
    options.agent_port = config_.agent_port;
    options.memory_bytes = config_.docker.memory_bytes;
    options.cpus = config_.docker.cpus;
    options.pids = config_.docker.pids;
    options.front = hostName();
    BYD_ASSIGN_OR_RETURN(placement_, placement::SwarmPlacement::open(std::move(options)));
  }
  BYD_ASSIGN_OR_RETURN(SessionStack first, open(config_, /*warm=*/true, guard_));
  auto stack = std::make_shared<SessionStack>(std::move(first));
  if (placement_) {
    stack->description = "a sandbox of its own for each session: " + placement_->describe();
    stack->instructions = placedInstructions("");
    std::lock_guard lock(mu_);
    if (config_.workspace_ttl_s > 0) startReaper();  // the kept workspaces of earlier runs too
    return stack;  // not a session's: each is placed when it begins
  }
  std::lock_guard lock(mu_);
  if (config_.workspace_root.empty()) spare_ = stack;  // else sessions get directories of their own
  return stack;
}

Result<const RuntimeSpec*> SessionFactory::runtimeOf(const Request& request) const {
  const auto allowed = [&](const std::string& name) {
    return request.runtimes == nullptr ||
           std::ranges::find(*request.runtimes, name) != request.runtimes->end();
  };
  const auto choices = [&] {
    std::vector<std::string> names;
    for (const RuntimeSpec& rt : config_.runtimes) {
      if (allowed(rt.name)) names.push_back(rt.name);
    }
    return names.empty() ? std::string("none") : joinComma(names);
  };
  if (request.runtime.empty()) {
    if (request.runtimes == nullptr || request.runtimes->empty()) return nullptr;
    return findRuntime(config_, request.runtimes->front());
  }
  if (config_.runtimes.empty()) {
    return invalidArgument("runtime '" + request.runtime +
                           "': this server offers no runtimes (no --runtimes file)");
  }
  const RuntimeSpec* runtime = findRuntime(config_, request.runtime);
  if (runtime == nullptr) {
    return invalidArgument("unknown runtime '" + request.runtime +
                           "'; runtimes you may use: " + choices());
  }
  if (!allowed(runtime->name)) {
    return invalidArgument("runtime '" + request.runtime + "' is not one tenant '" +
                           request.tenant + "' may use; it may use: " + choices());
  }
  return runtime;
}

Result<const permissions::Guard*> SessionFactory::guardFor(const permissions::Guard& base,
                                                           const RuntimeSpec& runtime) {
  if (runtime.network.is_null()) return &base;
  std::lock_guard lock(mu_);
  auto& slot = runtime_guards_[{&base, runtime.name}];
  if (!slot) {
    nlohmann::json doc = base.ruleset().json();
    doc["network"] = runtime.network;
    doc["name"] = base.ruleset().name() + " with the network rules of runtime " + runtime.name;
    BYD_ASSIGN_OR_RETURN(permissions::Ruleset rules, permissions::Ruleset::fromJson(doc));
    slot = std::make_unique<permissions::Guard>(std::move(rules), base.askFallback());
  }
  return slot.get();
}

Result<std::shared_ptr<SessionStack>> SessionFactory::placed(const Request& request,
                                                             const RuntimeSpec* runtime) {
  // The claim's label: a name of the front's own, which no client chooses.
  const std::string id = "s" + randomHex(12);
  const CancelToken never;
  placement::Spec wanted{.named = request.name};
  if (runtime != nullptr) {
    wanted.runtime = runtime->name;
    wanted.image = runtime->image;
    wanted.memory_bytes = runtime->memory_bytes;
    wanted.cpus = runtime->cpus;
    wanted.pids = runtime->pids;
  }
  BYD_ASSIGN_OR_RETURN(placement::Placed where,
                       placement_->place(request.tenant, id, wanted, never));
  spdlog::info("session {} of tenant {}: {} ({}), agent {}", id, request.tenant, where.claim,
               where.sandbox, where.url);
  auto stack = std::make_shared<SessionStack>();
  stack->sandbox =
      std::shared_ptr<void>(nullptr, [placement = placement_, claim = where.claim, id](void*) {
        if (Status s = placement->release(claim); !s.ok()) {
          spdlog::warn("session {}: {}", id, s.message());
        } else {
          spdlog::info("session {}: {} removed", id, claim);
        }
      });
  stack->remote = remoteClient(where.url, config_.agent_token);
  stack->backend = std::make_unique<RemoteWorkspace>(where.url);
  stack->description = where.sandbox + " (" + where.claim + ")";
  stack->tools = "those the session's agent offers";
  stack->instructions = placedInstructions(" (" + stack->description + ")");
  if (runtime != nullptr) {
    stack->runtime = runtime->name;
    stack->max_timeout_s = runtime->max_timeout_s;
    stack->instructions += runtimeSentence(*runtime);
  }
  return stack;
}

Result<std::shared_ptr<SessionStack>> SessionFactory::fresh(const Request& request,
                                                            const std::string& dir,
                                                            const RuntimeSpec* runtime) {
  if (placement_) return placed(request, runtime);
  if (!dir.empty() && config_.backend == "docker") {
    // Made by this server for the container's user, who must be able to enter and write it.
    BYD_ASSIGN_OR_RETURN(ContainerUser user, parseContainerUser(config_.docker.user));
    if (chown(dir.c_str(), user.uid, user.gid) != 0 && geteuid() == 0) {
      return internalError("cannot give " + dir + " to the container's user: " + strerror(errno));
    }
  }
  Config session_config = config_;
  if (!dir.empty()) {
    session_config.root = dir;
    session_config.root_given = true;
  }
  if (config_.persist_containers && !request.name.empty() && !dir.empty()) {
    session_config.docker.container_name = keptContainerName(
        request.tenant, request.name, std::filesystem::path(dir).parent_path().string());
    session_config.docker.stop_kept = true;
    // Beside its workspace: what the code installs in HOME stays with the session.
    session_config.docker.home_dir =
        (std::filesystem::path(dir).parent_path() / ("home-" + request.name)).string();
  }
  const permissions::Guard* guard = request.guard != nullptr ? request.guard : &guard_;
  if (runtime != nullptr) {
    DockerOptions& d = session_config.docker;
    d.image = runtime->image;
    d.recipe = runtime->recipe;
    d.memory_bytes = runtime->memory_bytes.value_or(d.memory_bytes);
    d.cpus = runtime->cpus.value_or(d.cpus);
    d.pids = runtime->pids.value_or(d.pids);
    BYD_ASSIGN_OR_RETURN(guard, guardFor(*guard, *runtime));
  }
  BYD_ASSIGN_OR_RETURN(SessionStack stack, open(session_config, /*warm=*/false, *guard));
  if (runtime != nullptr) {
    stack.runtime = runtime->name;
    stack.max_timeout_s = runtime->max_timeout_s;
    if (guard != (request.guard != nullptr ? request.guard : &guard_)) stack.guard = guard;
    stack.instructions += runtimeSentence(*runtime);
  }
  return std::make_shared<SessionStack>(std::move(stack));
}

mcp::SessionBackend SessionFactory::given(const std::shared_ptr<SessionStack>& stack,
                                          std::shared_ptr<void> owner, std::string instructions) {
  return mcp::SessionBackend{.backend = stack->backend.get(),
                             .owner = std::move(owner),
                             .instructions = std::move(instructions),
                             .guard = stack->guard,
                             .runtime = stack->runtime,
                             .max_timeout_s = stack->max_timeout_s,
                             .tasks = stack->tasks,
                             .remote = stack->remote};
}

Result<std::pair<std::shared_ptr<SessionStack>, std::string>> SessionFactory::unnamed(
    const Request& request, const std::string& under, const RuntimeSpec* runtime) {
  std::string dir;
  if (!under.empty()) {
    dir = under + "/session-XXXXXX";
    if (mkdtemp(dir.data()) == nullptr) {
      return internalError("cannot make a session directory under " + under + ": " +
                           strerror(errno));
    }
  }
  auto stack = fresh(request, dir, runtime);
  if (!stack.ok()) {
    if (!dir.empty()) rmdir(dir.c_str());
    return stack.status();
  }
  return std::make_pair(std::move(*stack), std::move(dir));
}

Result<mcp::SessionBackend> SessionFactory::next(const Request& request) {
  const std::string& under =
      request.workspace_root.empty() ? config_.workspace_root : request.workspace_root;
  BYD_ASSIGN_OR_RETURN(const RuntimeSpec* runtime, runtimeOf(request));
  if (!request.name.empty()) return attach(request, under, runtime);
  if (under.empty() && runtime == nullptr &&
      (request.guard == nullptr || request.guard == &guard_)) {
    std::lock_guard lock(mu_);
    if (std::shared_ptr<SessionStack> stack = std::move(spare_)) {
      return given(stack, stack, stack->instructions);
    }
  }
  auto ready = takeReady(request);
  if (!ready) {
    auto made = unnamed(request, under, runtime);
    if (!made.ok()) return made.status();
    ready = std::move(*made);
  }
  auto [stack, dir] = std::move(*ready);
  if (dir.empty()) return given(stack, stack, stack->instructions);
  // Open while its session is: --workspace-ttl counts from when it closed.
  std::lock_guard lock(mu_);
  open_dirs_.insert(dir);
  if (config_.workspace_ttl_s > 0) startReaper();
  std::shared_ptr<void> lease(nullptr, [this, dir, stack](void*) {
    std::lock_guard lock(mu_);
    open_dirs_.erase(dir);
    utimensat(AT_FDCWD, dir.c_str(), nullptr, AT_SYMLINK_NOFOLLOW);
  });
  return given(stack, lease, stack->instructions);
}

void SessionFactory::startPools(std::vector<Request> kinds) {
  if (config_.session_pool == 0 || kinds.empty()) return;
  std::lock_guard lock(mu_);
  for (Request& kind : kinds) {
    std::string tenant = kind.tenant;
    pools_[tenant].kind = std::move(kind);
  }
  pool_gauge_ = std::make_unique<metrics::Gauge>("byd_session_pool_ready", [this] {
    std::lock_guard lock(mu_);
    metrics::GaugeSamples samples;
    for (const auto& [tenant, pool] : pools_) {
      samples.push_back({{tenant}, static_cast<double>(pool.ready.size())});
    }
    return samples;
  });
  filler_ = std::jthread([this](std::stop_token stop) { fillPools(stop); });
}

std::optional<std::pair<std::shared_ptr<SessionStack>, std::string>> SessionFactory::takeReady(
    const Request& request) {
  if (!request.runtime.empty()) return std::nullopt;
  std::lock_guard lock(mu_);
  auto it = pools_.find(request.tenant);
  if (it == pools_.end() || it->second.ready.empty() || it->second.kind.guard != request.guard ||
      it->second.kind.workspace_root != request.workspace_root) {
    return std::nullopt;
  }
  auto ready = std::move(it->second.ready.front());
  it->second.ready.pop_front();
  // Its directory is the session's now, kept after it as any session's is.
  if (ready.first->temp_dir) std::exchange(ready.first->temp_dir, nullptr)->path.clear();
  pool_cv_.notify_all();
  return ready;
}

void SessionFactory::fillPools(std::stop_token stop) {
  const auto shortest = [this]() -> Pool* {
    Pool* most_short = nullptr;
    for (auto& [tenant, pool] : pools_) {
      if (pool.ready.size() < config_.session_pool &&
          (most_short == nullptr || pool.ready.size() < most_short->ready.size())) {
        most_short = &pool;
      }
    }
    return most_short;
  };
  std::set<std::string> warned;
  std::unique_lock lock(mu_);
  while (!stop.stop_requested()) {
    Pool* pool = shortest();
    if (pool == nullptr) {
      pool_cv_.wait(lock, stop, [&] { return shortest() != nullptr; });
      continue;
    }
    const Request kind = pool->kind;  // pools_ keeps its entries: `pool` stays valid
    lock.unlock();
    const std::string& under =
        kind.workspace_root.empty() ? config_.workspace_root : kind.workspace_root;
    auto made = [&]() -> Result<std::pair<std::shared_ptr<SessionStack>, std::string>> {
      BYD_ASSIGN_OR_RETURN(const RuntimeSpec* runtime, runtimeOf(kind));
      BYD_ASSIGN_OR_RETURN(auto ready, unnamed(kind, under, runtime));
      if (!ready.second.empty()) {
        ready.first->temp_dir = std::make_shared<TempDir>();
        ready.first->temp_dir->path = ready.second;
      }
      // Nothing to start for rules under which nothing runs (a read-only tenant).
      const permissions::Ruleset& rules = (ready.first->guard ? ready.first->guard
                                           : kind.guard       ? kind.guard
                                                              : &guard_)
                                              ->ruleset();
      Executor* executor = ready.first->backend->executor();
      if (executor != nullptr && !(rules.alwaysDenied(permissions::Operation::kExecute) &&
                                   rules.alwaysDenied(permissions::Operation::kPython))) {
        executor->prepare();
      }
      return ready;
    }();
    lock.lock();
    if (!made.ok()) {
      if (warned.insert(kind.tenant).second) {
        spdlog::warn("session pool of tenant '{}': {}; trying again every 10 s", kind.tenant,
                     made.status().message());
      }
      pool_cv_.wait_for(lock, stop, std::chrono::seconds(10), [] { return false; });
      continue;
    }
    if (!made->second.empty()) open_dirs_.insert(made->second);  // no --workspace-ttl expiry
    pool->ready.push_back(std::move(*made));
  }
}

Result<mcp::SessionBackend> SessionFactory::attach(const Request& request, const std::string& under,
                                                   const RuntimeSpec* runtime) {
  const auto key = std::make_pair(request.tenant, request.name);
  const std::string dir = under.empty() ? "" : under + "/named-" + request.name;
  std::shared_ptr<SessionStack> stack, evicted;
  {
    std::lock_guard lock(mu_);
    if (busy_.contains(key)) {
      return resourceExhausted("session '" + request.name +
                               "' is being opened or deleted; try again");
    }
    if (auto it = named_.find(key); it != named_.end()) {
      if (!request.runtime.empty() && it->second.stack->runtime != request.runtime) {
        return invalidArgument("session '" + request.name + "' runs " +
                               (it->second.stack->runtime.empty()
                                    ? "the server's image"
                                    : "the runtime '" + it->second.stack->runtime + "'") +
                               ", not '" + request.runtime +
                               "': ask for that, or for none, or end it first");
      }
      stack = it->second.stack;
      ++it->second.attached;  // now, so that nothing drops it before the lease exists
    } else {
      // A tenant holds at most max_named: the one left alone longest makes room.
      auto oldest = named_.end();
      size_t held = 0;
      for (auto n = named_.begin(); n != named_.end(); ++n) {
        if (n->first.first != request.tenant) continue;
        ++held;
        if (n->second.attached == 0 &&
            (oldest == named_.end() || n->second.detached_at < oldest->second.detached_at)) {
          oldest = n;
        }
      }
      for (const auto& b : busy_) held += b.first == request.tenant ? 1 : 0;
      if (held >= request.max_named) {
        if (oldest == named_.end()) {
          return resourceExhausted("tenant '" + request.tenant + "' has " + std::to_string(held) +
                                   " named sessions in use");
        }
        evicted = std::move(oldest->second.stack);
        named_.erase(oldest);
      }
      busy_.insert(key);  // this one is being made: no other attach, purge or expiry meddles
    }
  }
  evicted.reset();  // its sandbox and kernels stop outside the lock
  // What the client is told of the session it comes back to.
  std::string again = " This is session '" + request.name +
                      "' again: its files and Python sessions are as they were left.";
  if (!stack) {
    const auto made = [&]() -> Result<std::shared_ptr<SessionStack>> {
      again = "";
      if (!dir.empty()) {
        if (mkdir(dir.c_str(), 0700) != 0) {
          if (errno != EEXIST) {
            return internalError("cannot make the directory of session '" + request.name +
                                 "': " + strerror(errno));
          }
          again = " This is session '" + request.name +
                  "' again: its files are as they were left; its Python sessions start afresh "
                  "(their kernels had stopped).";
        }
      }
      return fresh(request, dir, runtime);
    }();
    std::lock_guard lock(mu_);
    busy_.erase(key);
    if (!made.ok()) return made.status();
    stack = *made;
    Named& entry = named_[key];
    entry = Named{stack, 1, {}, dir};
  }
  std::lock_guard lock(mu_);
  startReaper();
  // The lease: while any session holds it, the stack is used; when the last lets go, the
  // stack waits for the reaper (or the next session of that name).
  std::shared_ptr<void> lease(nullptr, [this, key, stack](void*) {
    std::lock_guard lock(mu_);
    if (auto it = named_.find(key); it != named_.end() && it->second.stack == stack) {
      --it->second.attached;
      it->second.detached_at = std::chrono::steady_clock::now();
      // --workspace-ttl counts from the last close.
      if (!it->second.dir.empty()) {
        utimensat(AT_FDCWD, it->second.dir.c_str(), nullptr, AT_SYMLINK_NOFOLLOW);
      }
    }
  });
  return given(stack, lease, stack->instructions + again);
}

void SessionFactory::startReaper() {
  if (!reaper_.joinable()) reaper_ = std::jthread([this](std::stop_token s) { reapNamed(s); });
}

void SessionFactory::reapNamed(std::stop_token stop) {
  using Duration = std::chrono::steady_clock::duration;
  const auto seconds = [](double s) {
    return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s));
  };
  const Duration linger = seconds(config_.session_idle_s);
  Duration every = std::min<Duration>(linger / 4, std::chrono::seconds(10));
  if (config_.workspace_ttl_s > 0) every = std::min(every, seconds(config_.workspace_ttl_s) / 4);
  every = std::max<Duration>(every, std::chrono::milliseconds(100));
  std::unique_lock lock(mu_);
  while (!stop.stop_requested()) {
    reaper_cv_.wait_for(lock, stop, every, [] { return false; });
    std::vector<std::shared_ptr<SessionStack>> idle;
    const auto now = std::chrono::steady_clock::now();
    for (auto it = named_.begin(); it != named_.end();) {
      if (it->second.attached == 0 && now - it->second.detached_at >= linger) {
        idle.push_back(std::move(it->second.stack));
        it = named_.erase(it);
      } else {
        ++it;
      }
    }
    lock.unlock();
    idle.clear();  // sandboxes and kernels stop outside the lock
    if (config_.workspace_ttl_s > 0) placement_ ? expirePlaced() : expireStored();
    lock.lock();
  }
}

mcp::ServerOptions SessionFactory::serverOptions(const SessionStack& stack) const {
  mcp::ServerOptions options;
  options.version = BYD_VERSION;
  options.instructions = stack.instructions;
  options.remote = stack.remote;
  options.workers = config_.workers;
  options.structured_content = config_.structured_content == "on";
  options.ask_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(config_.ask_timeout_s * 1000));
  return options;
}

}  // namespace byd
