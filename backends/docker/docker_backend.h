#pragma once
// The Docker backend: hardened containers per backend (per session), reached through the Docker
// Engine API, all mounting one host directory at /workspace; the file tools work on it from the
// host through the Local backend's kernel-level resolver (as the container's user), so paths
// resolve as the container sees them and symlinks cannot leave it. Code runs in a container only
// beside code of the same call or the same Python session: commands run one at a time in a
// command container (the first one, or another made when commands overlap), and each Python
// kernel has a container of its own. In each, root (which the code never is) runs the command
// runner and starts the kernel, and every process of the code's user is ended with the call.
// Containers are created when first needed and removed with the backend, unless it is a named
// one (the first command container), which is reattached and kept.
// The file rules hold inside: before each command and each cell, the container's root masks
// what the code may not read or change (enter_masks.h), as the host's index of the workspace
// says (workspace_index.h). With
// --network none and rules that open some target, the container's only way out is the
// server's proxy, through a unix socket bound into it and a relay on its loopback
// (enter_relay.h). Thread-safe.

#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/docker/container_runner.h"
#include "backends/docker/docker_client.h"
#include "backends/docker/runtime_image.h"
#include "backends/egress/network_policy.h"
#include "backends/local/local_backend.h"
#include "backends/local/package_installer.h"
#include "backends/local/python_sessions.h"
#include "backends/local/workspace_index.h"

namespace byd {

// Where the container mounts the workspace, and DockerOptions::home_dir.
inline constexpr std::string_view kContainerWorkspace = "/workspace";
inline constexpr std::string_view kContainerHome = "/home/sandbox";

struct DockerOptions {
  std::string host;  // DOCKER_HOST syntax; empty: unix:///var/run/docker.sock
  std::string image = "python:3.12-slim";
  // Set for a runtime built on demand: `image` is its tag, built (once, and streaming its
  // progress) before the first container is made.
  std::optional<docker::ImageRecipe> recipe;
  std::string runtime = "auto";  // auto (runsc when the engine has it), runc, runsc
  std::string network = "none";
  bool write_sync = false;  // the file tools fsync what they write (LocalBackend::setWriteSync)
  int64_t memory_bytes = int64_t{1} << 30;  // and no swap beyond it
  double cpus = 1.0;
  int64_t pids = 256;
  // The rlimits of every process in the container, soft and hard alike (--open-files-limit
  // and --process-limit, as for Local): set, not left to the engine, whose defaults may exceed
  // what the host allows (Podman's do). The process limit is set under Podman only (0 is
  // pids): RLIMIT_NPROC counts the user's processes across containers of that user.
  uint64_t open_files = 1024;
  uint64_t processes = 256;
  // Never root; owns what the file tools write. The dedicated uid of the sandbox user, which
  // owns nothing else of the host's (--sandbox-user chooses another).
  std::string user = "65533:65533";
  std::string container_name;  // reattach (start if stopped) and keep at exit
  bool stop_kept = false;      // the kept container is stopped at exit, not left running
  // A host directory (made if missing, the container user's) bound at kContainerHome, the
  // code's HOME: what it installs there (pip --user, tools) outlives the container's /tmp.
  std::string home_dir;
  std::string python = "python3";
  PythonOptions python_options;
  // With network "none": the rules may open some target, so containers reach the server's
  // proxy (and nothing else) on 127.0.0.1:3128.
  bool proxy = false;
  bool test_without_masks = false;  // tests only: the file rules' masks left out
  // Packages installed on demand: this host directory, mounted read-only at kPackagesDir in
  // every container and on the code's import path ("": none).
  std::string packages_dir;
};

// Where containers mount DockerOptions::packages_dir.
inline constexpr std::string_view kContainerPackages = "/opt/backyard-packages";

// "UID:GID" of the container's user; never root.
struct ContainerUser {
  uid_t uid;
  gid_t gid;
};
Result<ContainerUser> parseContainerUser(const std::string& text);

class DockerBackend : public Backend, public Executor {
 public:
  // `workspace` is the host directory mounted at /workspace. Nothing is asked of the engine
  // yet: the container comes with the first execute or run_python.
  static Result<std::unique_ptr<DockerBackend>> open(const std::string& workspace,
                                                     DockerOptions options);
  ~DockerBackend() override;
  // Removes the container kept under `name` (DockerOptions::container_name), if there is one.
  static Status removeKept(const std::string& host, const std::string& name);
  // The code's HOME: kContainerHome with DockerOptions::home_dir, else /tmp.
  std::string homeVariable() const;

  std::string_view kind() const override { return "docker"; }
  std::string root() const override { return std::string(kContainerWorkspace); }
  Result<std::string> normalize(std::string_view user_path) const override;
  Result<FileInfo> stat(const std::string& key) const override;
  Result<std::string> realKey(const std::string& key) const override;
  Result<std::vector<FileInfo>> list(const std::string& key) const override;
  Status listEach(const std::string& key,
                  const std::function<bool(const FileInfo&)>& visit) const override;
  Status listTyped(const std::string& key, const Detail& detail,
                   const std::function<bool(const FileInfo&)>& visit) const override;
  std::optional<Status> listTypedDirect(
      const std::string& key, const Detail& detail,
      const std::function<bool(const FileInfo&)>& visit) const override;
  Result<std::string> read(const std::string& key, uint64_t offset,
                           uint64_t max_bytes) const override;
  Status readStream(const std::string& key, size_t chunk_bytes,
                    const std::function<bool(std::string_view)>& sink) const override;
  Result<bool> makeDir(const std::string& key) override;
  Result<MoveOutcome> move(const std::string& from, const std::string& to, bool replace) override;
  Result<RemoveOutcome> remove(const std::string& key, bool recursive) override;
  Result<WriteOutcome> write(const std::string& key, std::string_view data,
                             WriteMode mode) override;
  Executor* executor() override { return this; }
  // From the engine's stats of its container (none before it has one).
  std::optional<ResourceUse> resourceUse() override;
  Result<ExecResult> execute(const ExecRequest& request, const CancelToken& cancel) override;
  Result<PythonResult> runPython(const PythonRequest& request, const CancelToken& cancel) override;
  Result<std::vector<std::string>> installPackages(const std::vector<std::string>& names,
                                                   const CancelToken& cancel) override;
  bool installsPackages() const override { return installer_ != nullptr; }
  // The image, the container and a command runner ready, and a spare kernel starting.
  void prepare() override;
  // Installs packages on demand into DockerOptions::packages_dir (see dockerPackageInstaller).
  void setInstaller(std::unique_ptr<PackageInstaller> installer) {
    installer_ = std::move(installer);
  }

  // The runtime containers get: "runsc" (gVisor) or "runc", as --runtime and the engine's
  // /info decide; with the warning to log when auto found no gVisor. Asks the engine.
  struct Runtime {
    std::string name;
    std::string warning;
  };
  Result<Runtime> resolveRuntime() const;
  // Whether the engine is Podman's service (asked once).
  Result<bool> enginePodman();
  // Says once when gVisor's containers cannot reach a host socket (the proxy's).
  void warnWithoutHostSockets() const;
  // Whether the engine confines containers with AppArmor (asked once).
  Result<bool> engineAppArmor();
  // The container's id once it exists ("" before).
  std::string containerId() const;

  using ExecOutcome = docker::CommandOutcome;

 private:
  DockerBackend(std::unique_ptr<LocalBackend> files, DockerOptions options, docker::Client client,
                std::string workspace);
  // The first command container, created and started if need be.
  Result<std::string> ensureContainer();
  // The image of a runtime built on demand (DockerOptions::recipe), built if missing, with
  // each line of the build given to `progress`, at most one a second.
  Status ensureImage(const std::function<void(std::string_view)>& progress,
                     const CancelToken& cancel);
  // A new container; kNamed gives it --container-name (only the first command container).
  // `share`: how many sessions' limits it holds (memory, processes, /tmp and CPUs, the last
  // up to the engine's): a kernel's forks share it.
  enum class Naming { kNamed, kUnnamed };
  Result<std::string> createContainer(const std::string& runtime, Naming naming, int share = 1);
  // The host directories a container of this session binds ({Type, Source, Target, ReadOnly}
  // each) and its first process: nothing but the container's life, or the relay to the proxy.
  Result<std::pair<nlohmann::json, nlohmann::json>> bindsAndCommand();
  // Why a kept container cannot serve this server as it is ("" when it can): made from another
  // image, or binding other directories (an earlier server's, gone with it).
  Result<std::string> keptDiffers(const nlohmann::json& existing);
  void removeContainer(const std::string& container);
  // The runtime, as resolveRuntime said the first time.
  Result<std::string> resolvedRuntime();
  // Removes a container that stopped under us, so the next call makes a new one.
  void forgetContainer(const std::string& container);
  // A command container that no command is using (the first one, an idle other one, or a new
  // one), marked in use until releaseBox, which keeps it, or removes it beyond the spare ones.
  Result<std::string> takeBox();
  void releaseBox(const std::string& container);
  // Drops the idle runners of `container` (mu_ held).
  void dropRunnersOf(const std::string& container);
  // Runs a command through a runner kept in the container (runCommand), or, where the image
  // has no Python for one, through an exec of its own (exec, wrapped so that its process group
  // can be killed).
  Result<ExecOutcome> runCommand(const docker::CommandSpec& spec);
  Result<ExecOutcome> exec(const docker::CommandSpec& spec, const std::string& container);
  // An idle runner of the current container, or a new one; null when the image cannot have one.
  Result<std::unique_ptr<docker::ContainerRunner>> takeRunner();
  // Its Python sessions, made on first use.
  std::shared_ptr<PythonSessions> pythonSessions();
  void giveBackRunner(std::unique_ptr<docker::ContainerRunner> runner);
  // A new runner in `container` (copied in at creation beside the kernel).
  Result<std::unique_ptr<docker::ContainerRunner>> startRunner(const std::string& container);
  // After a command whose status never came: notes whether its container stopped underneath
  // (and forgets it, so the next call makes a new one).
  void checkContainer(const std::string& container, ExecOutcome* out);
  // Starts one Python kernel in a container of its own; kSessions: the template of new
  // sessions (--python-new-sessions fork), whose container holds --python-sessions sessions'
  // limits and whose every process is held to --memory (RLIMIT_AS), as a session's kernel.
  enum class KernelFor { kOne, kSessions };
  Result<std::unique_ptr<PythonKernel>> startKernel(KernelFor what = KernelFor::kOne);
  std::atomic<bool> image_ready_{false};
  // The engine's CPUs (asked once; 0: not known).
  Result<int> engineCpus();
  // The byd-enter arguments that mask the workspace for `view` (none without rules).
  std::vector<std::string> maskArgs(const FileView& view);
  // Makes the masks of kernel container `box` those of `masks` (enter --update-masks).
  Status updateMasks(const std::string& box, const std::vector<std::string>& masks);
  // The proxy's socket directory on the host, listening (made once); "" without the proxy.
  Result<std::string> proxyDir();
  // Makes that directory and listens there (proxyDir, once).
  Status openProxy();
  // A new directory for it; the same one each time for a kept (named) container.
  Result<std::string> makeProxyDir() const;
  // The environment of the code: the proxy's variables with the proxy.
  std::vector<std::string> codeEnvironment(std::vector<std::string> env) const;
  // Ends every process of the code's user in a command container; restarts the container when
  // that cannot be done from inside.
  void endAll(const std::string& container);
  // Runs a shell script in the container as `user` to its end; its exit status.
  Result<int> shell(const std::string& container, const std::string& script,
                    const std::string& user);
  // Runs `argv` in the container as `user` to its end (10 s at most); its exit status, and
  // the start of its stderr in `err` when given.
  Result<int> runToEnd(const std::string& container, const std::vector<std::string>& argv,
                       const std::string& user, std::string* err);

  // "UID:GID" of the container's user, which runs the code.
  std::string codeUser() const { return std::to_string(uid_) + ":" + std::to_string(gid_); }

  std::unique_ptr<LocalBackend> files_;
  std::unique_ptr<WorkspaceIndex> index_;  // what the masks hide or keep from change
  const DockerOptions options_;
  const docker::Client client_;
  const std::string workspace_;
  uid_t uid_ = 1000;
  gid_t gid_ = 1000;

  mutable std::mutex mu_;
  std::string container_;         // the first command container's id
  std::set<std::string> extras_;  // the other command containers
  std::set<std::string> in_use_;  // command containers a command runs in
  std::string runtime_;           // what they run under
  std::mutex engine_mu_;
  std::optional<bool> podman_;  // the engine is Podman (known after the first container)
  std::optional<bool> apparmor_;
  std::optional<int> cpus_;
  std::shared_ptr<PythonSessions> python_;
  // Idle runners, each of an idle command container.
  std::vector<std::unique_ptr<docker::ContainerRunner>> runners_;
  bool no_runner_ = false;  // the image could not start one: exec per command
  std::once_flag proxy_once_;
  Status proxy_status_;
  std::unique_ptr<PackageInstaller> installer_;
  std::string proxy_dir_;  // holds the socket the proxy listens on
  std::unique_ptr<egress::CallProxy> proxy_;
};

// An installer whose pip runs as the container's user in a container of `box`: a backend
// whose workspace is `host_dir`, the packages directory, and which has the server's proxy.
std::unique_ptr<PackageInstaller> dockerPackageInstaller(std::unique_ptr<DockerBackend> box,
                                                         std::string host_dir, PackageIndex index,
                                                         std::string python);

}  // namespace byd
