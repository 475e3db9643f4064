#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>
#include <mutex>
#include <thread>

#include "backends/docker/docker_backend.h"
#include "backends/docker/docker_internal.h"
#include "backends/docker/enter_masks.h"
#include "backends/docker/orphans.h"
#include "backends/local/fork_rendezvous.h"
#include "backends/local/sandbox_seccomp.h"
#include "backends/state/state_backend.h"
#include "common/metrics.h"
#include "common/turnstile.h"

// The Docker backend's containers: the runtime they run under, how one is made (hardened, with
// the kernel, runner, confiner and byd-enter copied in), the first command container and the
// others lent to one command at a time, and ending what a command left in one.

namespace byd {

extern const char kPythonKernelSource[];
extern const char kDockerConfineSource[];
extern const unsigned char kDockerEnterBinary[];
extern const size_t kDockerEnterBinary_size;

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using docker::enterPath;
using docker::kForkDir;
using docker::kIdleExtraBoxes;
using docker::kKernelDir;
using docker::kProxyDir;
using docker::kProxyPort;
using docker::kProxySocket;
using docker::kRoot;
using docker::urlEncode;

// Podman's API (4.x) reads "seccomp=" as the path of a profile on its own machine, where
// Docker's takes the profile itself. The file lives in a directory of this process's own,
// removed at exit.
class ProfileFile {
 public:
  static Result<std::string> path(const std::string& profile) {
    static ProfileFile file;
    std::lock_guard lock(file.mu_);
    if (!file.path_.empty()) return file.path_;
    std::string dir = (std::filesystem::temp_directory_path() / "byd-seccomp-XXXXXX").string();
    if (mkdtemp(dir.data()) == nullptr || chmod(dir.c_str(), 0755) != 0) {
      return internalError("cannot make a directory for the seccomp profile: " +
                           std::string(strerror(errno)));
    }
    const std::string path = dir + "/profile.json";
    BYD_RETURN_IF_ERROR(atomicWriteFile(path, profile));
    chmod(path.c_str(), 0644);
    file.dir_ = dir;
    file.path_ = path;
    return file.path_;
  }
  ~ProfileFile() {
    if (path_.empty()) return;
    unlink(path_.c_str());
    rmdir(dir_.c_str());
  }

 private:
  std::mutex mu_;
  std::string dir_, path_;
};

// Whether `doc[key]` is an array with an element `match` takes (the engine's /version and
// /info lists).
bool anyListed(const json& doc, const char* key, const std::function<bool(const json&)>& match) {
  const json list = doc.is_object() ? doc.value(key, json::array()) : json::array();
  return list.is_array() && std::any_of(list.begin(), list.end(), match);
}

}  // namespace

void DockerBackend::removeContainer(const std::string& container) {
  auto removed = client_.request("DELETE", "/containers/" + container + "?force=true&v=true",
                                 nullptr, std::chrono::seconds(30));
  if (!removed.ok() && removed.status().code() != Code::kNotFound) {
    spdlog::warn("docker: could not remove container {}: {}", container.substr(0, 12),
                 removed.status().message());
  }
}

Result<bool> DockerBackend::enginePodman() {
  // Its own lock: containers are created with mu_ held.
  std::lock_guard lock(engine_mu_);
  if (podman_) return *podman_;
  BYD_ASSIGN_OR_RETURN(json version, client_.request("GET", "/version"));
  podman_ = anyListed(version, "Components", [](const json& part) {
    return part.is_object() && part.value("Name", "").find("Podman") != std::string::npos;
  });
  return *podman_;
}

Result<bool> DockerBackend::engineAppArmor() {
  std::lock_guard lock(engine_mu_);
  if (apparmor_) return *apparmor_;
  BYD_ASSIGN_OR_RETURN(json info, client_.request("GET", "/info"));
  apparmor_ = anyListed(info, "SecurityOptions", [](const json& option) {
    return option.is_string() && option.get<std::string>().starts_with("name=apparmor");
  });
  return *apparmor_;
}

void DockerBackend::warnWithoutHostSockets() const {
  static std::once_flag once;
  std::call_once(once, [this] {
    auto info = client_.request("GET", "/info");
    if (!info.ok() || !info->is_object()) return;
    const json runsc = info->value("Runtimes", json::object()).value("runsc", json::object());
    if (anyListed(runsc, "runtimeArgs", [](const json& arg) {
          return arg == "--host-uds=open" || arg == "--host-uds=all" || arg == "--fsgofer-host-uds";
        })) {
      return;
    }
    spdlog::warn(
        "docker: gVisor (runsc) is registered without --host-uds=open, so its containers cannot "
        "reach the server's proxy and every connection fails; add it to the runtime's "
        "runtimeArgs in /etc/docker/daemon.json");
  });
}

Result<DockerBackend::Runtime> DockerBackend::resolveRuntime() const {
  BYD_ASSIGN_OR_RETURN(json info, client_.request("GET", "/info"));
  const json runtimes = info.is_object() ? info.value("Runtimes", json::object()) : json::object();
  const bool has_runsc = runtimes.is_object() && runtimes.contains("runsc");
  if (options_.runtime == "runsc" && !has_runsc) {
    return failedPrecondition(
        "--runtime runsc: the Docker engine has no runtime named runsc; install gVisor (the "
        "Debian package runsc) and register it in /etc/docker/daemon.json");
  }
  if (options_.runtime == "runc") return Runtime{"runc", ""};
  if (has_runsc) return Runtime{"runsc", ""};
  return Runtime{"runc",
                 "gVisor (runsc) is not registered with the Docker engine: containers run "
                 "under runc and share the host's kernel, so a kernel exploit inside one reaches "
                 "the host"};
}

std::string DockerBackend::containerId() const {
  std::lock_guard lock(mu_);
  return container_;
}

Result<int> DockerBackend::engineCpus() {
  std::lock_guard lock(engine_mu_);
  if (cpus_) return *cpus_;
  BYD_ASSIGN_OR_RETURN(json info, client_.request("GET", "/info"));
  const json ncpu = info.is_object() ? info.value("NCPU", json()) : json();
  cpus_ = ncpu.is_number_integer() ? ncpu.get<int>() : 0;
  return *cpus_;
}

Result<std::pair<json, json>> DockerBackend::bindsAndCommand() {
  json binds = {
      {{"Type", "bind"}, {"Source", workspace_}, {"Target", "/workspace"}, {"ReadOnly", false}}};
  if (!options_.packages_dir.empty()) {
    binds.push_back({{"Type", "bind"},
                     {"Source", options_.packages_dir},
                     {"Target", std::string(kContainerPackages)},
                     {"ReadOnly", true}});
  }
  if (auto forks = ForkRendezvous::dir(); forks.ok()) {
    binds.push_back(
        {{"Type", "bind"}, {"Source", *forks}, {"Target", kForkDir}, {"ReadOnly", true}});
  }
  if (!options_.home_dir.empty()) {
    binds.push_back({{"Type", "bind"},
                     {"Source", options_.home_dir},
                     {"Target", std::string(kContainerHome)},
                     {"ReadOnly", false}});
  }
  json cmd = {"sleep", "infinity"};
  BYD_ASSIGN_OR_RETURN(const std::string proxy_dir, proxyDir());
  if (!proxy_dir.empty()) {
    binds.push_back(
        {{"Type", "bind"}, {"Source", proxy_dir}, {"Target", kProxyDir}, {"ReadOnly", true}});
    cmd = {enterPath(), "--relay", std::string(kProxyDir) + "/" + kProxySocket,
           std::to_string(kProxyPort)};
  }
  return std::make_pair(std::move(binds), std::move(cmd));
}

Result<std::string> DockerBackend::keptDiffers(const json& existing) {
  // Images by their ids: engines spell an image's name differently (Podman prefixes
  // "localhost/"), its id alike (Docker prefixes "sha256:").
  const auto id = [](std::string v) { return v.starts_with("sha256:") ? v.substr(7) : v; };
  const std::string made_from = id(existing.value("Image", std::string()));
  auto image = client_.request("GET", "/images/" + urlEncode(options_.image) + "/json");
  if (image.ok() && !made_from.empty() && made_from != id(image->value("Id", std::string()))) {
    return "it was made from another image than " + options_.image;
  }
  BYD_ASSIGN_OR_RETURN(auto wanted, bindsAndCommand());
  const auto& [binds, cmd] = wanted;
  const auto same = [](const std::string& a, const std::string& b) {
    std::error_code ec;
    return a == b ||
           std::filesystem::weakly_canonical(a, ec) == std::filesystem::weakly_canonical(b, ec);
  };
  const json mounts = existing.value("Mounts", json::array());
  for (const json& bind : binds) {
    const std::string source = bind["Source"], target = bind["Target"];
    bool found = false;
    for (const json& m : mounts) {
      found = found || (m.value("Type", "") == "bind" && m.value("Destination", "") == target &&
                        same(m.value("Source", ""), source));
    }
    if (!found) return "it does not bind " + source + " at " + target;
  }
  const json& config = existing.contains("Config") ? existing["Config"] : json::object();
  if (config.value("Cmd", json::array()) != cmd) {
    return "its first process is not " + cmd.dump() + " (the relay to this server's proxy)";
  }
  return std::string();
}

Result<std::string> DockerBackend::createContainer(const std::string& runtime, Naming naming,
                                                   int share) {
  const bool named = naming == Naming::kNamed;
  auto image = client_.request("GET", "/images/" + urlEncode(options_.image) + "/json");
  if (!image.ok()) {
    if (image.status().code() == Code::kNotFound) {
      return failedPrecondition(
          "the image " + options_.image + " is not on this Docker engine: pull it (docker pull " +
          options_.image +
          "), or build a local one without a registry with "
          "backends/docker/images/build-local.sh and pass --image backyard-mcp/python:bookworm");
    }
    return image.status();
  }
  // Once per server: containers that servers which ended (killed, crashed) left behind.
  static std::once_flag swept;
  std::call_once(swept, [this] { docker::removeOrphans(client_); });
  json labels = {{"io.backyard-mcp", "session"}};
  // A kept container names no server: it is meant to outlive this one.
  if (const std::string owner = docker::ownerLabel();
      !owner.empty() && (options_.container_name.empty() || !named)) {
    labels[docker::kOwnerLabel] = owner;
  }
  const bool no_network = options_.network == "none";
  std::string seccomp = containerSeccompProfile().dump();
  BYD_ASSIGN_OR_RETURN(const bool podman, enginePodman());
  if (podman) {
    if (!options_.host.empty() && !options_.host.starts_with("unix://")) {
      return failedPrecondition(
          "Podman reads the seccomp profile from a file on its own machine: "
          "reach its service through a unix:// socket on this one");
    }
    BYD_ASSIGN_OR_RETURN(seccomp, ProfileFile::path(seccomp));
  }
  json ulimits = {
      {{"Name", "nofile"}, {"Soft", options_.open_files}, {"Hard", options_.open_files}}};
  if (podman) {
    // Podman's default for it may exceed the host's; Docker leaves it be, and so do we there:
    // RLIMIT_NPROC counts the user's processes in every container of that user, where the
    // per-container PidsLimit keeps sessions apart.
    const int64_t nproc =
        options_.processes > 0 ? static_cast<int64_t>(options_.processes) : options_.pids;
    ulimits.push_back({{"Name", "nproc"}, {"Soft", nproc}, {"Hard", nproc}});
  }
  BYD_ASSIGN_OR_RETURN(auto made, bindsAndCommand());
  auto& [mounts, cmd] = made;
  // An anonymous volume for the kernel's source (the root filesystem is read-only and the
  // archive API cannot write into a tmpfs); removed with the container.
  mounts.push_back({{"Type", "volume"}, {"Target", kKernelDir}});
  if (runtime == "runsc" && cmd.size() > 1 && cmd[1] == "--relay") warnWithoutHostSockets();
  auto scaled = [share](int64_t limit) { return limit > 0 ? limit * share : limit; };  // 0: none
  double cpus = options_.cpus;
  if (share > 1) {
    BYD_ASSIGN_OR_RETURN(const int engine_cpus, engineCpus());
    cpus = std::max(cpus, std::min(cpus * share, static_cast<double>(engine_cpus)));
  }
  json security = {"no-new-privileges", "seccomp=" + seccomp};
  // The engine's AppArmor profile refuses every mount, those of the masks too; runc's
  // containers go without it (gVisor applies none).
  BYD_ASSIGN_OR_RETURN(const bool apparmor, engineAppArmor());
  if (apparmor && runtime != "runsc") security.push_back("apparmor=unconfined");
  json host = {
      {"Mounts", std::move(mounts)},
      {"NetworkMode", options_.network},
      {"CapDrop", {"ALL"}},
      // For the container's root alone, which runs the command runner and starts kernels:
      // to become the user that runs the code, to end its processes, and to mount the
      // masks of the file rules, also in directories only that user may enter. The code
      // holds none.
      {"CapAdd", {"CAP_SETUID", "CAP_SETGID", "CAP_KILL", "CAP_SYS_ADMIN", "CAP_DAC_READ_SEARCH"}},
      // The sandbox's own refusals (no setuid/setgid bits, no new user namespaces, ...)
      // in place of the engine's default profile.
      {"SecurityOpt", std::move(security)},
      {"ReadonlyRootfs", true},
      {"Tmpfs",
       {{"/tmp", "rw,nosuid,nodev,size=" + std::to_string(256 * share) + "m"},
        // Where the masks' placeholders are made; root's alone.
        {enter::kMaskSource, "rw,nosuid,nodev,noexec,size=1m,mode=0700"}}},
      {"Memory", scaled(options_.memory_bytes)},
      {"MemorySwap", scaled(options_.memory_bytes)},
      {"NanoCpus", static_cast<int64_t>(cpus * 1e9)},
      {"PidsLimit", scaled(options_.pids)},
      {"Ulimits", std::move(ulimits)},
      {"Init", true},
      {"Runtime", runtime}};
  json spec = {{"Image", options_.image},
               {"Cmd", std::move(cmd)},
               // The container's first processes are root's: the code cannot end them.
               {"User", kRoot},
               {"WorkingDir", "/workspace"},
               {"Env", {homeVariable(), "LANG=C.UTF-8", "TERM=dumb", "PYTHONDONTWRITEBYTECODE=1"}},
               {"Labels", labels},
               {"NetworkDisabled", no_network},
               {"HostConfig", host}};
  // Containers are made a few at a time, in the order asked: the engine makes no more of them
  // per second when more come at once, and each would wait for all.
  static Turnstile starting;
  const Result<int> engine_cores = engineCpus();
  const Turnstile::Turn turn = starting.enter(std::max(engine_cores.ok() ? *engine_cores : 0, 2));
  std::string path = "/containers/create";
  if (named && !options_.container_name.empty()) {
    path += "?name=" + urlEncode(options_.container_name);
  }
  BYD_ASSIGN_OR_RETURN(json created, client_.request("POST", path, spec));
  const std::string id = created.value("Id", "");
  if (id.empty()) return internalError("the Docker engine created a container without an id");
  // The kernel's source and byd-enter (also the command runner), read-only for the container's
  // user.
  BYD_ASSIGN_OR_RETURN(std::vector<char> bpf, compileSeccompFilter());
  BYD_ASSIGN_OR_RETURN(
      std::string tar,
      docker::makeTar(
          {{"byd-enter",
            std::string(reinterpret_cast<const char*>(kDockerEnterBinary), kDockerEnterBinary_size),
            0755},
           {"kernel.py", kPythonKernelSource, 0644},
           {"confine.py", kDockerConfineSource, 0644},
           {"seccomp.bpf", std::string(bpf.begin(), bpf.end()), 0644}}));
  docker::Reply put;
  // Podman's service now and then fails a copy into a container made at the same moment as
  // others (HTTP 500); the next try goes through.
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100 * attempt));
    BYD_ASSIGN_OR_RETURN(
        put, client_.call("PUT", "/containers/" + id + "/archive?path=" + kKernelDir, tar,
                          "application/x-tar"));
    if (put.status != 500) break;
    spdlog::debug("docker: copying into {} failed ({}); again", id.substr(0, 12), put.body);
  }
  if (put.status != 200) {
    client_.request("DELETE", "/containers/" + id + "?force=true&v=true").ok();
    return failedPrecondition(
        "could not copy the Python kernel and the command runner into the container (HTTP " +
        std::to_string(put.status) + (put.body.empty() ? "" : ": " + put.body.substr(0, 300)) +
        ")");
  }
  if (auto started = client_.request("POST", "/containers/" + id + "/start"); !started.ok()) {
    client_.request("DELETE", "/containers/" + id + "?force=true&v=true").ok();
    return started.status();
  }
  metrics::add("byd_container_starts_total", {"created"});
  return id;
}

// Python sessions stay when their container goes: their kernels die with it, and each session
// notices on its next call and starts afresh, saying so. (Dropping the sessions here could end
// them on the very thread of a kernel being started, which would wait for itself.)
void DockerBackend::forgetContainer(const std::string& container) {
  {
    std::lock_guard lock(mu_);
    dropRunnersOf(container);
    in_use_.erase(container);
    if (container == container_) {
      if (!options_.container_name.empty()) return;
      container_.clear();
    } else if (extras_.erase(container) == 0) {
      return;
    }
  }
  removeContainer(container);
}

void DockerBackend::dropRunnersOf(const std::string& container) {
  std::erase_if(runners_, [&](const auto& r) { return r->container() == container; });
}

Result<std::string> DockerBackend::resolvedRuntime() {
  {
    std::lock_guard lock(mu_);
    if (!runtime_.empty()) return runtime_;
  }
  BYD_ASSIGN_OR_RETURN(Runtime runtime, resolveRuntime());
  if (!runtime.warning.empty()) spdlog::warn("docker: {}", runtime.warning);
  std::lock_guard lock(mu_);
  if (runtime_.empty()) runtime_ = runtime.name;
  return runtime_;
}

Result<std::string> DockerBackend::ensureContainer() {
  std::lock_guard lock(mu_);
  if (!container_.empty()) {
    auto state = client_.request("GET", "/containers/" + container_ + "/json");
    if (state.ok() && (*state)["State"].value("Running", false)) return container_;
    if (state.ok() && !options_.container_name.empty()) {
      // A kept container that stopped (an engine restart): start it again.
      BYD_RETURN_IF_ERROR(client_.request("POST", "/containers/" + container_ + "/start").status());
      metrics::add("byd_container_starts_total", {"restarted"});
      dropRunnersOf(container_);
      return container_;
    }
    if (!state.ok() && state.status().code() != Code::kNotFound) return state.status();
    spdlog::warn("docker: container {} is gone; starting a new one", container_.substr(0, 12));
    if (state.ok())
      client_.request("DELETE", "/containers/" + container_ + "?force=true&v=true").ok();
    dropRunnersOf(container_);
    in_use_.erase(container_);
    container_.clear();
  }
  if (!options_.container_name.empty()) {
    auto existing =
        client_.request("GET", "/containers/" + urlEncode(options_.container_name) + "/json");
    if (existing.ok()) {
      BYD_ASSIGN_OR_RETURN(const std::string differs, keptDiffers(*existing));
      if (!differs.empty()) {
        // Its files and HOME are bound from this machine and stay; the container is made again
        // as this server makes it.
        spdlog::info("docker: container {} is made again: {}", options_.container_name, differs);
        BYD_RETURN_IF_ERROR(
            client_
                .request("DELETE",
                         "/containers/" + urlEncode(options_.container_name) + "?force=true&v=true")
                .status());
        existing = Status(Code::kNotFound, "removed");
      }
    }
    if (existing.ok()) {
      container_ = existing->value("Id", "");
      runtime_ = (*existing)["HostConfig"].value("Runtime", "runc");
      if (!(*existing)["State"].value("Running", false)) {
        BYD_RETURN_IF_ERROR(
            client_.request("POST", "/containers/" + container_ + "/start").status());
        metrics::add("byd_container_starts_total", {"restarted"});
      }
      spdlog::info("docker: reattached container {} ({})", options_.container_name, runtime_);
      return container_;
    }
    if (existing.status().code() != Code::kNotFound) return existing.status();
  }
  BYD_ASSIGN_OR_RETURN(Runtime runtime, resolveRuntime());
  if (!runtime.warning.empty()) spdlog::warn("docker: {}", runtime.warning);
  BYD_ASSIGN_OR_RETURN(container_, createContainer(runtime.name, Naming::kNamed));
  runtime_ = runtime.name;
  spdlog::info("docker: container {} started ({}, {})", container_.substr(0, 12), options_.image,
               runtime_);
  return container_;
}

Result<std::string> DockerBackend::takeBox() {
  BYD_ASSIGN_OR_RETURN(std::string first, ensureContainer());
  {
    std::lock_guard lock(mu_);
    if (in_use_.insert(first).second) return first;
    for (const std::string& box : extras_) {
      if (in_use_.insert(box).second) return box;
    }
  }
  // Every command container runs a command: one more, for this one alone.
  BYD_ASSIGN_OR_RETURN(std::string runtime, resolvedRuntime());
  BYD_ASSIGN_OR_RETURN(std::string box, createContainer(runtime, Naming::kUnnamed));
  spdlog::info("docker: container {} started for commands that run at once", box.substr(0, 12));
  std::lock_guard lock(mu_);
  extras_.insert(box);
  in_use_.insert(box);
  return box;
}

void DockerBackend::releaseBox(const std::string& container) {
  {
    std::lock_guard lock(mu_);
    in_use_.erase(container);
    if (container == container_ || !extras_.count(container)) return;
    size_t idle = 0;
    for (const std::string& box : extras_) idle += in_use_.count(box) == 0 ? 1 : 0;
    if (idle <= kIdleExtraBoxes) return;
    extras_.erase(container);
    dropRunnersOf(container);
  }
  removeContainer(container);
}

Result<int> DockerBackend::shell(const std::string& container, const std::string& script,
                                 const std::string& user) {
  return runToEnd(container, {"/bin/sh", "-c", script}, user, nullptr);
}

Result<int> DockerBackend::runToEnd(const std::string& container,
                                    const std::vector<std::string>& argv, const std::string& user,
                                    std::string* err) {
  BYD_ASSIGN_OR_RETURN(json made, client_.request("POST", "/containers/" + container + "/exec",
                                                  {{"Cmd", argv},
                                                   {"User", user},
                                                   {"WorkingDir", "/"},
                                                   {"AttachStdout", true},
                                                   {"AttachStderr", true}}));
  const std::string id = made.value("Id", "");
  BYD_ASSIGN_OR_RETURN(std::unique_ptr<docker::Hijacked> conn, client_.startExec(id));
  char buf[4096];
  docker::StreamDemuxer demux;
  const auto until = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < until) {  // to its end, which closes the stream
    pollfd p = {conn->fd(), POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    const ssize_t n = ::read(conn->fd(), buf, sizeof buf);
    if (n <= 0) break;
    demux.feed(std::string_view(buf, static_cast<size_t>(n)), [&](int stream, std::string_view d) {
      if (err != nullptr && stream == 2 && err->size() < 4096) err->append(d);
    });
  }
  BYD_ASSIGN_OR_RETURN(json inspect, client_.request("GET", "/exec/" + id + "/json"));
  if (inspect.value("Running", false) || !inspect["ExitCode"].is_number_integer()) {
    return Status(Code::kDeadlineExceeded, "a process in the container did not finish");
  }
  return inspect["ExitCode"].get<int>();
}

void DockerBackend::endAll(const std::string& container) {
  // A shell of the code's user signals every process of that user but itself (kill -1): in a
  // command container, all that the command started, wherever it went. Again and again while
  // there are any (a fork bomb forks while it dies). Only shell builtins: where processes are
  // exhausted, one shell is all the kill costs.
  const std::string kill =
      "i=0; while [ $i -lt 200 ] && kill -9 -1 2>/dev/null; do i=$((i+1)); done; exit 0";
  const std::string check = "kill -0 -1 2>/dev/null && exit 1; exit 0";
  // A shell that cannot be asked for (the engine is unreachable, the container is gone) says
  // nothing of the processes: a restart could not help. One that did not finish, or processes
  // that outlive the rounds, mean the container has no room left for the kill.
  auto stuck = [](const Status& s) { return s.code() == Code::kDeadlineExceeded; };
  for (int round = 0; round < 3; ++round) {
    if (Status s = shell(container, kill, options_.user).status(); !s.ok()) {
      if (!stuck(s)) return;
      break;
    }
    auto left = shell(container, check, options_.user);
    if (!left.ok()) {
      if (!stuck(left.status())) return;
      break;
    }
    if (*left == 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  // Restarting ends every process in it. The workspace stays; /tmp does not.
  spdlog::warn("docker: could not end a command's processes in container {}; restarting it",
               container.substr(0, 12));
  client_.request("POST", "/containers/" + container + "/restart?t=0").ok();
  std::lock_guard lock(mu_);
  dropRunnersOf(container);
}

}  // namespace byd
