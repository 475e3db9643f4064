#include "backends/docker/docker_backend.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/fsuid.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>

#include <spdlog/spdlog.h>

#include "backends/docker/orphans.h"
#include "backends/local/sandbox_seccomp.h"
#include "common/unique_fd.h"

namespace byd {

extern const char kPythonKernelSource[];
extern const char kDockerRunnerSource[];
extern const char kDockerConfineSource[];
extern const unsigned char kDockerEnterBinary[];
extern const size_t kDockerEnterBinary_size;

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using docker::CommandSpec;
using docker::ContainerRunner;

constexpr const char* kKernelDir = "/opt/backyard";
// Processes the server starts to run the code (the command runner, a kernel's launcher) start
// as the container's root, which the code never is: it cannot signal or trace them.
constexpr const char* kRoot = "0:0";
// A kernel's pid, written by root in its container before any code runs there.
constexpr const char* kKernelPidFile = "/tmp/.byd-kernel.pid";
// Idle command containers kept beside the first, for commands that run at once.
constexpr size_t kIdleExtraBoxes = 1;
// What a command's wrapper writes to stderr before its exit status: a newline, a record
// separator, a word. As printf text (\\n, \\036) and as the bytes it prints.
constexpr const char* kExitMarker = "\\n\\036byd-exit ";
constexpr const char* kExitMarkerText = "\036byd-exit ";

// Runs the calling thread's file accesses as the container's user, so that what the file tools
// write belongs to it and what it could not touch, they cannot either. (The fs ids are per
// thread; without the privilege to change them this does nothing.)
class AsUser {
 public:
  AsUser(uid_t uid, gid_t gid) {
    old_gid_ = setfsgid(gid);
    old_uid_ = setfsuid(uid);
  }
  ~AsUser() {
    setfsuid(old_uid_);
    setfsgid(old_gid_);
  }
  AsUser(const AsUser&) = delete;
  AsUser& operator=(const AsUser&) = delete;

 private:
  int old_uid_, old_gid_;
};

// The arguments after `python -I -S -u` that run `script` under the sandbox's seccomp filter
// (confine.py): gVisor does not apply the engine's profile to what `docker exec` starts.
std::vector<std::string> confined(const std::string& script) {
  return {std::string(kKernelDir) + "/confine.py", std::string(kKernelDir) + "/seccomp.bpf",
          script};
}

// byd-enter (enter.cpp), copied into each container: started as root, it becomes the code's user.
std::string enterPath() { return std::string(kKernelDir) + "/byd-enter"; }

std::string urlEncode(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
      out += static_cast<char>(c);
    } else {
      char buf[4];
      snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

// A Python kernel in the container, over a hijacked exec: its stdin is the connection, its
// multiplexed output is split into two pipes by a thread of its own.
class ContainerKernel : public KernelProcess {
 public:
  ContainerKernel(std::unique_ptr<docker::Hijacked> conn, std::function<void(int)> signal)
      : conn_(std::move(conn)), signal_(std::move(signal)) {
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) != 0) return;
    out_r_.reset(out[0]);
    UniqueFd out_w(out[1]);
    if (pipe2(err, O_CLOEXEC) != 0) return;
    err_r_.reset(err[0]);
    UniqueFd err_w(err[1]);
    pump_ = std::thread([this, o = std::move(out_w), e = std::move(err_w)]() mutable {
      pump(std::move(o), std::move(e));
    });
  }
  ~ContainerKernel() override { kill(); }
  int stdinFd() const override { return conn_->fd(); }
  int stdoutFd() const override { return out_r_.get(); }
  int stderrFd() const override { return err_r_.get(); }
  void interrupt() override { signal_(SIGINT); }
  void kill() override {
    if (killed_.exchange(true)) return;
    signal_(SIGKILL);
    stop_ = true;
    if (pump_.joinable()) pump_.join();
    conn_.reset();
  }

 private:
  // Closes both write ends when the stream ends (UniqueFd), which the kernel's reader sees.
  void pump(UniqueFd out_w, UniqueFd err_w) {
    docker::StreamDemuxer demux;
    char buf[1 << 16];
    while (!stop_) {
      pollfd p = {conn_->fd(), POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      const ssize_t n = read(conn_->fd(), buf, sizeof buf);
      if (n <= 0) break;
      const bool ok = demux.feed(std::string_view(buf, n), [&](int stream, std::string_view d) {
        const int fd = stream == 2 ? err_w.get() : out_w.get();
        while (!d.empty()) {
          const ssize_t w = write(fd, d.data(), d.size());
          if (w <= 0) return;
          d.remove_prefix(w);
        }
      });
      if (!ok) break;
    }
  }

  std::unique_ptr<docker::Hijacked> conn_;
  std::function<void(int)> signal_;
  UniqueFd out_r_, err_r_;
  std::thread pump_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> killed_{false};
};

}  // namespace

Result<ContainerUser> parseContainerUser(const std::string& text) {
  unsigned uid = 0, gid = 0;
  char extra = 0;
  if (sscanf(text.c_str(), "%u:%u%c", &uid, &gid, &extra) != 2 || uid == 0) {
    return invalidArgument("the container user must be UID:GID and not root, got '" + text + "'");
  }
  return ContainerUser{uid, gid};
}

Result<std::unique_ptr<DockerBackend>> DockerBackend::open(const std::string& workspace,
                                                           DockerOptions options) {
  BYD_ASSIGN_OR_RETURN(docker::Endpoint endpoint, docker::parseHost(options.host));
  if (options.runtime != "auto" && options.runtime != "runc" && options.runtime != "runsc") {
    return invalidArgument("--runtime must be auto, runc or runsc, got '" + options.runtime + "'");
  }
  BYD_ASSIGN_OR_RETURN(ContainerUser user, parseContainerUser(options.user));
  BYD_ASSIGN_OR_RETURN(std::unique_ptr<LocalBackend> files, LocalBackend::open(workspace, {}));
  std::unique_ptr<DockerBackend> backend(new DockerBackend(
      std::move(files), std::move(options), docker::Client(std::move(endpoint)), workspace));
  backend->uid_ = user.uid;
  backend->gid_ = user.gid;
  return backend;
}

DockerBackend::DockerBackend(std::unique_ptr<LocalBackend> files, DockerOptions options,
                             docker::Client client, std::string workspace)
    : files_(std::move(files)),
      options_(std::move(options)),
      client_(std::move(client)),
      workspace_(std::move(workspace)) {}

DockerBackend::~DockerBackend() {
  std::shared_ptr<PythonSessions> python;
  std::vector<std::string> boxes;
  {
    std::lock_guard lock(mu_);
    python = std::move(python_);
    runners_.clear();
    boxes.assign(extras_.begin(), extras_.end());
    if (!container_.empty() && options_.container_name.empty()) boxes.push_back(container_);
  }
  python.reset();  // kernels first: each removes its own container
  for (const std::string& box : boxes) removeContainer(box);
}

void DockerBackend::removeContainer(const std::string& container) {
  auto removed = client_.request("DELETE", "/containers/" + container + "?force=true&v=true",
                                 nullptr, std::chrono::seconds(30));
  if (!removed.ok() && removed.status().code() != Code::kNotFound) {
    spdlog::warn("docker: could not remove container {}: {}", container.substr(0, 12),
                 removed.status().message());
  }
}

Result<std::string> DockerBackend::normalize(std::string_view user_path) const {
  if (!user_path.empty() && user_path.front() == '/') {
    BYD_ASSIGN_OR_RETURN(std::string clean, lexicalNormalize(user_path));
    std::string rest;
    if (!stripDirPrefix(clean, "/workspace", &rest)) {
      return Status(Code::kPermissionDenied,
                    "'" + std::string(user_path) + "' is outside the workspace");
    }
    return files_->normalize(rest.empty() ? "." : rest);
  }
  return files_->normalize(user_path);
}

Result<FileInfo> DockerBackend::stat(const std::string& key) const {
  AsUser as(uid_, gid_);
  return files_->stat(key);
}
Result<std::string> DockerBackend::realKey(const std::string& key) const {
  AsUser as(uid_, gid_);
  return files_->realKey(key);
}
Result<std::vector<FileInfo>> DockerBackend::list(const std::string& key) const {
  AsUser as(uid_, gid_);
  return files_->list(key);
}

Status DockerBackend::listEach(const std::string& key,
                               const std::function<bool(const FileInfo&)>& visit) const {
  AsUser as(uid_, gid_);
  return files_->listEach(key, visit);
}
Result<std::string> DockerBackend::read(const std::string& key, uint64_t offset,
                                        uint64_t max_bytes) const {
  AsUser as(uid_, gid_);
  return files_->read(key, offset, max_bytes);
}
Status DockerBackend::readStream(const std::string& key, size_t chunk_bytes,
                                 const std::function<bool(std::string_view)>& sink) const {
  AsUser as(uid_, gid_);
  return files_->readStream(key, chunk_bytes, sink);
}
Result<WriteOutcome> DockerBackend::write(const std::string& key, std::string_view data,
                                          WriteMode mode) {
  AsUser as(uid_, gid_);
  return files_->write(key, data, mode);
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

Result<std::string> DockerBackend::createContainer(const std::string& runtime, Naming naming) {
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
  json host = {
      {"Mounts",
       {{{"Type", "bind"}, {"Source", workspace_}, {"Target", "/workspace"}, {"ReadOnly", false}},
        // An anonymous volume for the kernel's source (the root filesystem is read-only and
        // the archive API cannot write into a tmpfs); removed with the container.
        {{"Type", "volume"}, {"Target", kKernelDir}}}},
      {"NetworkMode", options_.network},
      {"CapDrop", {"ALL"}},
      // For the container's root alone, which runs the command runner and starts kernels: to
      // become the user that runs the code, and to end its processes. The code holds none.
      {"CapAdd", {"CAP_SETUID", "CAP_SETGID", "CAP_KILL"}},
      // The sandbox's own refusals (no setuid/setgid bits, no new user namespaces, ...)
      // in place of the engine's default profile.
      {"SecurityOpt", {"no-new-privileges", "seccomp=" + containerSeccompProfile().dump()}},
      {"ReadonlyRootfs", true},
      {"Tmpfs", {{"/tmp", "rw,nosuid,nodev,size=256m"}}},
      {"Memory", options_.memory_bytes},
      {"MemorySwap", options_.memory_bytes},
      {"NanoCpus", static_cast<int64_t>(options_.cpus * 1e9)},
      {"PidsLimit", options_.pids},
      {"Init", true},
      {"Runtime", runtime}};
  json spec = {{"Image", options_.image},
               {"Cmd", {"sleep", "infinity"}},
               // The container's first processes are root's: the code cannot end them.
               {"User", kRoot},
               {"WorkingDir", "/workspace"},
               {"Env", {"HOME=/tmp", "LANG=C.UTF-8", "TERM=dumb", "PYTHONDONTWRITEBYTECODE=1"}},
               {"Labels", labels},
               {"NetworkDisabled", no_network},
               {"HostConfig", host}};
  std::string path = "/containers/create";
  if (named && !options_.container_name.empty()) {
    path += "?name=" + urlEncode(options_.container_name);
  }
  BYD_ASSIGN_OR_RETURN(json created, client_.request("POST", path, spec));
  const std::string id = created.value("Id", "");
  if (id.empty()) return internalError("the Docker engine created a container without an id");
  // The kernel's and the runner's source, read-only for the container's user.
  BYD_ASSIGN_OR_RETURN(std::vector<char> bpf, compileSeccompFilter());
  BYD_ASSIGN_OR_RETURN(
      std::string tar,
      docker::makeTar(
          {{"byd-enter",
            std::string(reinterpret_cast<const char*>(kDockerEnterBinary), kDockerEnterBinary_size),
            0755},
           {"kernel.py", kPythonKernelSource, 0644},
           {"runner.py", kDockerRunnerSource, 0644},
           {"confine.py", kDockerConfineSource, 0644},
           {"seccomp.bpf", std::string(bpf.begin(), bpf.end()), 0644}}));
  BYD_ASSIGN_OR_RETURN(docker::Reply put,
                       client_.call("PUT", "/containers/" + id + "/archive?path=" + kKernelDir, tar,
                                    "application/x-tar"));
  if (put.status != 200) {
    client_.request("DELETE", "/containers/" + id + "?force=true&v=true").ok();
    return failedPrecondition(
        "could not copy the Python kernel and the command runner into the "
        "container (HTTP " +
        std::to_string(put.status) + ")");
  }
  if (auto started = client_.request("POST", "/containers/" + id + "/start"); !started.ok()) {
    client_.request("DELETE", "/containers/" + id + "?force=true&v=true").ok();
    return started.status();
  }
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
      container_ = existing->value("Id", "");
      runtime_ = (*existing)["HostConfig"].value("Runtime", "runc");
      if (!(*existing)["State"].value("Running", false)) {
        BYD_RETURN_IF_ERROR(
            client_.request("POST", "/containers/" + container_ + "/start").status());
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
  BYD_ASSIGN_OR_RETURN(json made, client_.request("POST", "/containers/" + container + "/exec",
                                                  {{"Cmd", {"/bin/sh", "-c", script}},
                                                   {"User", user},
                                                   {"WorkingDir", "/"},
                                                   {"AttachStdout", true},
                                                   {"AttachStderr", true}}));
  const std::string id = made.value("Id", "");
  BYD_ASSIGN_OR_RETURN(std::unique_ptr<docker::Hijacked> conn, client_.startExec(id));
  char buf[4096];
  const auto until = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < until) {  // to its end, which closes the stream
    pollfd p = {conn->fd(), POLLIN, 0};
    if (poll(&p, 1, 100) > 0 && ::read(conn->fd(), buf, sizeof buf) <= 0) break;
  }
  BYD_ASSIGN_OR_RETURN(json inspect, client_.request("GET", "/exec/" + id + "/json"));
  if (inspect.value("Running", false) || !inspect["ExitCode"].is_number_integer()) {
    return Status(Code::kDeadlineExceeded, "a shell in the container did not finish");
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

Result<DockerBackend::ExecOutcome> DockerBackend::exec(const CommandSpec& spec,
                                                       const std::string& container) {
  // The command leads a process group of its own (setsid). When it ends, its status goes out
  // on stderr behind a marker; a timeout or a cancel, and its end, then end every process of
  // the code's user in its container (endAll), which holds no other code.
  // It enters through byd-enter, as root: the container's user, in its directory, under the
  // sandbox's seccomp filter (which gVisor would not apply to an exec).
  std::vector<std::string> cmd = {
      enterPath(),
      "--filter",
      std::string(kKernelDir) + "/seccomp.bpf",
      codeUser(),
      spec.cwd,
      "setsid",
      "-w",
      "/bin/sh",
      "-c",
      "\"$0\" \"$@\"; s=$?; printf '" + std::string(kExitMarker) + "%d\\n' \"$s\" >&2; kill -9 0"};
  cmd.insert(cmd.end(), spec.argv.begin(), spec.argv.end());
  const std::string& stdin_data = spec.stdin_data;
  BYD_ASSIGN_OR_RETURN(json made, client_.request("POST", "/containers/" + container + "/exec",
                                                  {{"Cmd", cmd},
                                                   {"Env", spec.env},
                                                   {"User", kRoot},
                                                   {"WorkingDir", "/"},
                                                   {"AttachStdin", !stdin_data.empty()},
                                                   {"AttachStdout", true},
                                                   {"AttachStderr", true},
                                                   {"Tty", false}}));
  const std::string exec_id = made.value("Id", "");
  BYD_ASSIGN_OR_RETURN(std::unique_ptr<docker::Hijacked> conn, client_.startExec(exec_id));
  std::thread feeder;
  if (!stdin_data.empty()) {
    feeder = std::thread([&conn, &stdin_data] {
      std::string_view rest = stdin_data;
      while (!rest.empty()) {
        const ssize_t n = send(conn->fd(), rest.data(), rest.size(), MSG_NOSIGNAL);
        if (n <= 0) break;
        rest.remove_prefix(n);
      }
      conn->closeWrite();
    });
  }
  ExecOutcome out;
  bool malformed = false;
  std::string err_tail;
  docker::StreamDemuxer demux;
  docker::LineTracker lines;
  auto deadline = Clock::now() + spec.timeout;
  bool killed = false;
  char buf[1 << 16];
  while (true) {
    const auto now = Clock::now();
    const bool cancel = spec.cancel != nullptr && spec.cancel->cancelled();
    if (!killed && (now >= deadline || cancel)) {
      out.timed_out = !cancel;
      out.cancelled = cancel;
      endAll(container);
      killed = true;
      deadline = now + std::chrono::seconds(5);  // for the stream to end
    } else if (killed && now >= deadline) {
      break;
    }
    pollfd p = {conn->fd(), POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    const ssize_t n = ::read(conn->fd(), buf, sizeof buf);
    if (n <= 0) break;
    const bool ok = demux.feed(std::string_view(buf, n), [&](int stream, std::string_view d) {
      if (stream == 2) {
        docker::appendCapped(out.err, d, spec.max_output, out.err_truncated);
        err_tail.append(d);  // the marker must be found even past the cap
        if (err_tail.size() > 512) err_tail.erase(0, err_tail.size() - 512);
        return;
      }
      docker::appendCapped(out.out, d, spec.max_output, out.out_truncated);
      lines.feed(d, spec.on_line);
    });
    if (!ok) {
      malformed = true;
      break;
    }
  }
  if (feeder.joinable()) {
    conn->closeWrite();
    feeder.join();
  }
  if (malformed) {
    endAll(container);
    return internalError("the Docker engine's output stream is malformed");
  }
  conn.reset();
  auto inspect = client_.request("GET", "/exec/" + exec_id + "/json");
  if (inspect.ok() && (*inspect)["ExitCode"].is_number_integer()) {
    out.exit_code = (*inspect)["ExitCode"].get<int>();
  }
  // The command's own status, from the marker; what follows it (the note of setsid, whose
  // child the wrapper's group kill ended) is ours, not the command's.
  const std::string marker = std::string("\n") + kExitMarkerText;
  const size_t status_at = err_tail.rfind(marker);
  if (status_at != std::string::npos && !killed) {
    out.exit_code = atoi(err_tail.c_str() + status_at + marker.size());
  }
  out.no_status = status_at == std::string::npos && !killed;
  if (out.no_status) checkContainer(container, &out);
  if (const size_t m = out.err.rfind(marker); m != std::string::npos) out.err.erase(m);
  if (killed) {
    // What the kill ended reports as a shell would, and setsid's note is dropped.
    out.exit_code = 128 + SIGKILL;
    const size_t note = out.err.rfind("setsid: child ");
    if (note != std::string::npos && out.err.find('\n', note) + 1 == out.err.size()) {
      out.err.erase(note);
    }
  }
  return out;
}

void DockerBackend::checkContainer(const std::string& container, ExecOutcome* out) {
  // No status for the command: did the container stop underneath (under gVisor, a memory limit
  // ends the whole sandbox)?
  auto state = client_.request("GET", "/containers/" + container + "/json");
  if (!state.ok() || !(*state)["State"].value("Running", false)) {
    forgetContainer(container);
    out->container_lost = true;
  }
}

Result<std::unique_ptr<ContainerRunner>> DockerBackend::startRunner(const std::string& container) {
  // As root, which runs each command as the container's user (runner.py --user).
  std::vector<std::string> args = confined(std::string(kKernelDir) + "/runner.py");
  args.insert(args.end(), {"--user", codeUser(), "--enter", enterPath()});
  return ContainerRunner::start(client_, container, options_.python, args, kRoot);
}

Result<std::unique_ptr<ContainerRunner>> DockerBackend::takeRunner() {
  {
    std::lock_guard lock(mu_);
    if (no_runner_) return std::unique_ptr<ContainerRunner>();
    while (!runners_.empty()) {
      std::unique_ptr<ContainerRunner> runner = std::move(runners_.back());
      runners_.pop_back();
      const std::string& box = runner->container();
      if (runner->usable() && (box == container_ || extras_.count(box)) &&
          in_use_.insert(box).second) {
        return runner;
      }
    }
  }
  BYD_ASSIGN_OR_RETURN(std::string container, takeBox());
  auto runner = startRunner(container);
  if (runner.ok()) return runner;
  releaseBox(container);
  // The container runs, yet no runner came up: the image has no Python for it.
  auto state = client_.request("GET", "/containers/" + container + "/json");
  if (state.ok() && (*state)["State"].value("Running", false)) {
    spdlog::warn("docker: {}; each command gets an exec of its own", runner.status().message());
    std::lock_guard lock(mu_);
    no_runner_ = true;
    return std::unique_ptr<ContainerRunner>();
  }
  return runner.status();
}

void DockerBackend::giveBackRunner(std::unique_ptr<ContainerRunner> runner) {
  const std::string box = runner->container();
  {
    std::lock_guard lock(mu_);
    if (runner->usable() && (box == container_ || extras_.count(box))) {
      runners_.push_back(std::move(runner));
    }
  }
  releaseBox(box);
}

Result<DockerBackend::ExecOutcome> DockerBackend::runCommand(const CommandSpec& spec) {
  for (int attempt = 0;; ++attempt) {
    BYD_ASSIGN_OR_RETURN(std::unique_ptr<ContainerRunner> runner, takeRunner());
    if (!runner) {
      BYD_ASSIGN_OR_RETURN(std::string box, takeBox());
      auto outcome = exec(spec, box);
      if (outcome.ok() && !outcome->container_lost) endAll(box);  // what it left running
      releaseBox(box);
      return outcome;
    }
    bool started = false;
    auto outcome = runner->run(spec, &started);
    if (!outcome.ok()) {
      // A runner that was gone before the command started (its container restarted or
      // stopped): once more, with a new one.
      const bool again = !started && !runner->usable() && attempt == 0;
      giveBackRunner(std::move(runner));
      if (again) continue;
      return outcome.status();
    }
    if (outcome->no_status) {
      spdlog::warn("docker: the command runner's connection ended before the command's status");
      const std::string box = runner->container();
      checkContainer(box, &*outcome);
      if (!outcome->container_lost) {
        // The engine may still call it running when its sandbox is gone (gVisor's, ended by
        // a limit): a runner that cannot start there says so. One that can serves later calls,
        // once what the command left is ended.
        endAll(box);
        auto fresh = startRunner(box);
        if (fresh.ok()) {
          runner = std::move(*fresh);
        } else {
          forgetContainer(box);
          outcome->container_lost = true;
        }
      }
    }
    giveBackRunner(std::move(runner));
    return outcome;
  }
}

Result<ExecResult> DockerBackend::execute(const ExecRequest& request, const CancelToken& cancel) {
  const auto start = Clock::now();
  if (!request.cwd.empty()) {
    BYD_ASSIGN_OR_RETURN(FileInfo dir, stat(request.cwd));
    if (dir.type != FileType::kDir) {
      return invalidArgument("cwd '" + request.cwd + "' is not a directory");
    }
  }
  CommandSpec spec;
  spec.argv = {"/bin/sh", "-c", request.command};
  spec.env = {"HOME=/tmp", "LANG=C.UTF-8", "TERM=dumb",
              "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"};
  for (const auto& [k, v] : request.env) spec.env.push_back(k + "=" + v);
  spec.cwd = request.cwd.empty() ? "/workspace" : "/workspace/" + request.cwd;
  spec.stdin_data = request.stdin_data;
  spec.timeout = request.timeout;
  spec.max_output = request.max_output;
  spec.cancel = &cancel;
  spec.on_line = request.on_progress;
  ExecOutcome run;
  for (int attempt = 0;; ++attempt) {
    BYD_ASSIGN_OR_RETURN(run, runCommand(spec));
    // The container was gone before the command could start: once more, in a new one.
    const bool never_ran = run.out.find("OCI runtime exec failed") != std::string::npos ||
                           run.err.find("OCI runtime exec failed") != std::string::npos;
    if (!run.no_status || !never_ran || attempt > 0) break;
    // The engine's runtime refused the exec: whatever the engine's state says, that container
    // is done for (a gVisor sandbox that died stays "running" for a while).
    forgetContainer(containerId());
    spdlog::warn("docker: the engine could not start the command ({}); once more",
                 run.container_lost ? "the container stopped" : "the container was not ready");
  }
  if (run.container_lost) {
    run.err +=
        "\n[the container stopped during this command (out of memory?); the next call "
        "gets a new one, with the same workspace]\n";
  }
  ExecResult r;
  r.stdout_data = std::move(run.out);
  r.stderr_data = std::move(run.err);
  r.stdout_truncated = run.out_truncated;
  r.stderr_truncated = run.err_truncated;
  r.exit_code = run.exit_code;
  r.timed_out = run.timed_out;
  r.cancelled = run.cancelled;
  r.duration_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  return r;
}

Result<std::unique_ptr<PythonKernel>> DockerBackend::startKernel() {
  // A container of its own: nothing of another session's, or of a command's, runs beside the
  // kernel, and ending the kernel ends the container, with all that the kernel's code started.
  BYD_ASSIGN_OR_RETURN(std::string runtime, resolvedRuntime());
  BYD_ASSIGN_OR_RETURN(std::string box, createContainer(runtime, Naming::kUnnamed));
  // byd-enter, as root, writes the kernel's pid (for interrupts) where the code cannot change
  // it, becomes the container's user and executes the kernel. No launcher stays behind holding
  // the kernel's pipes.
  std::vector<std::string> cmd = {enterPath(), "--pid-file", kKernelPidFile,
                                  codeUser(),  "/workspace", options_.python,
                                  "-I",        "-S",         "-u"};
  for (std::string& arg : confined(std::string(kKernelDir) + "/kernel.py")) {
    cmd.push_back(std::move(arg));
  }
  auto made =
      client_.request("POST", "/containers/" + box + "/exec",
                      {{"Cmd", cmd},
                       {"Env", {"HOME=/tmp", "LANG=C.UTF-8", "TERM=dumb", "MPLBACKEND=Agg"}},
                       {"User", kRoot},
                       {"WorkingDir", "/"},
                       {"AttachStdin", true},
                       {"AttachStdout", true},
                       {"AttachStderr", true},
                       {"Tty", false}});
  auto conn = made.ok() ? client_.startExec(made->value("Id", ""))
                        : Result<std::unique_ptr<docker::Hijacked>>(made.status());
  if (!conn.ok()) {
    removeContainer(box);
    return conn.status();
  }
  auto signal = [this, box](int sig) {
    if (sig == SIGINT) {
      shell(box, std::string("read p < ") + kKernelPidFile + " && kill -INT $p", kRoot).ok();
    } else {
      removeContainer(box);
    }
  };
  auto started = PythonKernel::attach(std::make_unique<ContainerKernel>(std::move(*conn), signal));
  if (!started.ok()) {
    return failedPrecondition(started.status().message() + "; run_python needs " + options_.python +
                              " in the image " + options_.image);
  }
  return started;
}

Result<PythonResult> DockerBackend::runPython(const PythonRequest& request,
                                              const CancelToken& cancel) {
  std::shared_ptr<PythonSessions> sessions;
  {
    std::lock_guard lock(mu_);
    if (!python_) {
      PythonOptions o = options_.python_options;
      o.spare_at_start = false;
      python_ = std::make_shared<PythonSessions>([this] { return startKernel(); }, o);
    }
    sessions = python_;
  }
  BYD_ASSIGN_OR_RETURN(PythonSessions::Run run,
                       sessions->run(request.session, request.code, request.reset, request.timeout,
                                     request.max_output, cancel));
  return pythonResult(run);
}

}  // namespace byd
