#include "backends/docker/docker_backend.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/fsuid.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

#include <spdlog/spdlog.h>

#include "backends/docker/docker_internal.h"
#include "backends/local/fork_rendezvous.h"
#include "common/unique_fd.h"

namespace byd {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using docker::CommandSpec;
using docker::confined;
using docker::ContainerRunner;
using docker::enterPath;
using docker::kForkDir;
using docker::kKernelDir;
using docker::kKernelPidFile;
using docker::kProxyPort;
using docker::kProxySocket;
using docker::kRoot;

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

// What the kernels of one container share, a session's and its forks': the container,
// removed when the last of them ends, the masks in force there, and a way to signal their
// processes (as the code's user: its own processes alone).
class ContainerFamily {
 public:
  ContainerFamily(std::function<void()> remove, SharedMasks::Apply masks,
                  std::function<void(const std::string&)> as_user)
      : remove_(std::move(remove)),
        masks_(std::make_shared<SharedMasks>(std::move(masks))),
        as_user_(std::move(as_user)) {}
  ~ContainerFamily() { remove_(); }
  Result<SharedMasks::Hold> holdMasks(const FileMasks& masks, const CancelToken* cancel,
                                      SharedMasks::Deadline deadline) {
    return masks_->hold(masks, cancel, deadline);
  }
  void asUser(const std::string& script) { as_user_(script); }
  std::string forkDir() const { return ForkRendezvous::dir().ok() ? kForkDir : ""; }

 private:
  std::function<void()> remove_;
  std::shared_ptr<SharedMasks> masks_;  // started with none
  std::function<void(const std::string&)> as_user_;
};

// A fork of a kernel of the container, on the connection it made to the server.
class ForkedContainerKernel : public KernelProcess {
 public:
  ForkedContainerKernel(std::shared_ptr<ContainerFamily> family, UniqueFd conn, int pid)
      : family_(std::move(family)), conn_(std::move(conn)), pid_(std::to_string(pid)) {}
  ~ForkedContainerKernel() override { kill(); }
  int stdinFd() const override { return conn_.get(); }
  int stdoutFd() const override { return conn_.get(); }
  int stderrFd() const override { return -1; }
  void interrupt() override {
    if (family_) family_->asUser("kill -INT " + pid_);
  }
  void kill() override {
    if (!family_) return;
    conn_.reset();
    if (family_.use_count() > 1) family_->asUser("kill -KILL -- -" + pid_);  // its group
    family_.reset();
  }
  Result<SharedMasks::Hold> holdMasks(const FileMasks& masks, const CancelToken* cancel,
                                      SharedMasks::Deadline deadline) override {
    if (!family_) return failedPrecondition("the kernel has ended");
    return family_->holdMasks(masks, cancel, deadline);
  }
  std::string forkDir() const override { return family_ ? family_->forkDir() : ""; }
  Result<std::unique_ptr<KernelProcess>> adoptFork(UniqueFd conn, pid_t /*host_pid*/,
                                                   int pid) override {
    if (!family_ || pid <= 1) return failedPrecondition("the fork cannot be told apart");
    return std::unique_ptr<KernelProcess>(
        std::make_unique<ForkedContainerKernel>(family_, std::move(conn), pid));
  }

 private:
  std::shared_ptr<ContainerFamily> family_;
  UniqueFd conn_;
  std::string pid_;  // as the container sees it
};

// A Python kernel in the container, over a hijacked exec: its stdin is the connection, its
// multiplexed output is split into two pipes by a thread of its own.
class ContainerKernel : public KernelProcess {
 public:
  ContainerKernel(std::unique_ptr<docker::Hijacked> conn, std::function<void(int)> signal,
                  std::shared_ptr<ContainerFamily> family)
      : conn_(std::move(conn)), signal_(std::move(signal)), family_(std::move(family)) {
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
  Result<SharedMasks::Hold> holdMasks(const FileMasks& masks, const CancelToken* cancel,
                                      SharedMasks::Deadline deadline) override {
    if (killed_) return failedPrecondition("the kernel has ended");
    return family_->holdMasks(masks, cancel, deadline);
  }
  void kill() override {
    if (killed_.exchange(true)) return;
    // Its process group ends; the container with it, unless its forks live on there.
    if (family_.use_count() > 1) signal_(SIGKILL);
    family_.reset();
    stop_ = true;
    if (pump_.joinable()) pump_.join();
    conn_.reset();
  }
  std::string forkDir() const override { return killed_ ? "" : family_->forkDir(); }
  Result<std::unique_ptr<KernelProcess>> adoptFork(UniqueFd conn, pid_t /*host_pid*/,
                                                   int pid) override {
    if (killed_ || pid <= 1) return failedPrecondition("the fork cannot be told apart");
    return std::unique_ptr<KernelProcess>(
        std::make_unique<ForkedContainerKernel>(family_, std::move(conn), pid));
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
  std::shared_ptr<ContainerFamily> family_;
  UniqueFd out_r_, err_r_;
  std::thread pump_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> killed_{false};
};

// byd-enter's --mask options for `masks`, made on the host below `root`: at the same place
// below the container's workspace.
std::vector<std::string> enterMaskArgs(const FileMasks& masks, const std::string& root) {
  std::vector<std::string> args = {"--masks-root", std::string(kContainerWorkspace)};
  for (const FileMask& m : masks) {
    if (m.path != root && !m.path.starts_with(root + "/")) continue;
    args.push_back("--mask");
    args.push_back(static_cast<char>(m.kind) + std::string(kContainerWorkspace) +
                   m.path.substr(root.size()));
  }
  return args;
}

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
  // A link made in the container names its target as the container sees it.
  files->mapAbsoluteLinks(std::string(kContainerWorkspace));
  files->setWriteSync(options.write_sync);
  auto index =
      std::make_unique<WorkspaceIndex>(std::vector<WorkspaceIndex::Root>{{"", files->root()}});
  std::unique_ptr<DockerBackend> backend(new DockerBackend(
      std::move(files), std::move(options), docker::Client(std::move(endpoint)), workspace));
  backend->index_ = std::move(index);
  if (backend->options_.proxy) backend->proxy_ = std::make_unique<egress::CallProxy>();
  backend->uid_ = user.uid;
  backend->gid_ = user.gid;
  if (const std::string& home = backend->options_.home_dir; !home.empty()) {
    if (mkdir(home.c_str(), 0700) != 0 && errno != EEXIST) {
      return internalError("cannot make " + home + ": " + strerror(errno));
    }
    struct stat st {};
    if (lstat(home.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return failedPrecondition(home + " is not a directory");
    }
    if (chown(home.c_str(), user.uid, user.gid) != 0) {
      return internalError("cannot give " + home + " to the container user: " + strerror(errno));
    }
  }
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
  if (!container_.empty() && !options_.container_name.empty() && options_.stop_kept) {
    // Kept for the session's return: stopped (what it installed stays), not removed.
    if (auto stopped = client_.request("POST", "/containers/" + container_ + "/stop?t=2");
        !stopped.ok()) {
      spdlog::warn("docker: cannot stop container {}: {}", options_.container_name,
                   stopped.status().message());
    }
  }
  proxy_.reset();
  if (!proxy_dir_.empty()) {
    unlink((proxy_dir_ + "/" + kProxySocket).c_str());
    if (options_.container_name.empty()) rmdir(proxy_dir_.c_str());  // a kept one stays bound
  }
}

std::optional<ResourceUse> DockerBackend::resourceUse() {
  std::string id;
  {
    std::lock_guard lock(mu_);
    id = container_;
  }
  if (id.empty()) return std::nullopt;
  auto stats = client_.request("GET", "/containers/" + id + "/stats?stream=false&one-shot=true");
  if (!stats.ok() || !stats->is_object()) return std::nullopt;
  const json memory = stats->value("memory_stats", json::object());
  const json detail = memory.value("stats", json::object());
  ResourceUse use;
  // As `docker stats` shows it: the page cache that can be dropped does not count.
  const uint64_t usage = memory.value("usage", uint64_t{0});
  const uint64_t cache = detail.value("inactive_file", detail.value("cache", uint64_t{0}));
  use.memory_bytes = usage > cache ? usage - cache : usage;
  if (const uint64_t limit = memory.value("limit", uint64_t{0}); limit > 0) {
    use.memory_limit = limit;
  }
  const json cpu = stats->value("cpu_stats", json::object()).value("cpu_usage", json::object());
  use.cpu_seconds = static_cast<double>(cpu.value("total_usage", uint64_t{0})) / 1e9;
  if (options_.cpus > 0) use.cpu_limit = options_.cpus;
  return use;
}

std::string DockerBackend::homeVariable() const {
  return options_.home_dir.empty() ? "HOME=/tmp" : "HOME=" + std::string(kContainerHome);
}

Status DockerBackend::removeKept(const std::string& host, const std::string& name) {
  BYD_ASSIGN_OR_RETURN(docker::Endpoint endpoint, docker::parseHost(host));
  const docker::Client client(std::move(endpoint));
  // The names kept containers get are letters, digits and ._- alone: nothing to encode.
  auto removed = client.request("DELETE", "/containers/" + name + "?force=true&v=true");
  if (!removed.ok() && removed.status().code() != Code::kNotFound) return removed.status();
  return okStatus();
}

Result<std::string> DockerBackend::makeProxyDir() const {
  const std::filesystem::path tmp = std::filesystem::temp_directory_path();
  if (options_.container_name.empty()) {
    std::string dir = (tmp / "byd-net-XXXXXX").string();
    if (mkdtemp(dir.data()) == nullptr) {
      return internalError("cannot make a directory for the proxy's socket: " +
                           std::string(strerror(errno)));
    }
    return dir;
  }
  // A kept container binds this directory for good: the same one for every server that
  // reattaches it, which makes a new socket in it. Only this user's, and no symlink.
  std::string name;
  for (char c : options_.container_name) name += isalnum(static_cast<unsigned char>(c)) ? c : '_';
  const std::string dir = (tmp / ("byd-net-" + name)).string();
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return internalError("cannot make " + dir + ": " + strerror(errno));
  }
  struct stat st;
  if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
      (st.st_mode & 077) != 0) {
    return failedPrecondition(dir + " is not a directory of this user's alone: remove it");
  }
  return dir;
}

Status DockerBackend::openProxy() {
  if (client_.endpoint().unix_path.empty()) {
    return failedPrecondition(
        "the network rules need the Docker engine on this machine (a unix:// socket): its "
        "containers reach the proxy through a socket bound into them");
  }
  BYD_ASSIGN_OR_RETURN(std::string dir, makeProxyDir());
  proxy_dir_ = dir;
  const std::string path = dir + "/" + kProxySocket;
  unlink(path.c_str());  // a kept container's, from an earlier server
  UniqueFd listener(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  if (!listener.valid() ||
      bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(listener.get(), 128) != 0) {
    return internalError("cannot listen on " + path + ": " + strerror(errno));
  }
  return proxy_->serve(std::move(listener));
}

Result<std::string> DockerBackend::proxyDir() {
  if (!options_.proxy) return std::string();
  std::call_once(proxy_once_, [this] { proxy_status_ = openProxy(); });
  BYD_RETURN_IF_ERROR(proxy_status_);
  return proxy_dir_;
}

std::vector<std::string> DockerBackend::codeEnvironment(std::vector<std::string> env) const {
  if (options_.proxy) {
    for (std::string& v : egress::proxyEnvironment(kProxyPort)) env.push_back(std::move(v));
  }
  if (!options_.packages_dir.empty()) {
    env.push_back("PYTHONPATH=" + std::string(kContainerPackages));           // commands
    env.push_back("BYD_PYTHON_PACKAGES=" + std::string(kContainerPackages));  // kernels
  }
  return env;
}

Result<std::vector<std::string>> DockerBackend::installPackages(
    const std::vector<std::string>& names, const CancelToken& cancel) {
  if (!installer_) return failedPrecondition("this server installs no Python packages");
  return installer_->install(names, cancel);
}

std::vector<std::string> DockerBackend::maskArgs(const FileView& view) {
  if (options_.test_without_masks) return {};
  return enterMaskArgs(*index_->masks(view), files_->root());
}

Status DockerBackend::updateMasks(const std::string& box, const std::vector<std::string>& masks) {
  std::vector<std::string> argv = {enterPath(), "--update-masks", std::to_string(uid_)};
  argv.insert(argv.end(), masks.begin(), masks.end());
  std::string err;
  BYD_ASSIGN_OR_RETURN(const int code, runToEnd(box, argv, kRoot, &err));
  if (code != 0) {
    while (!err.empty() && err.back() == '\n') err.pop_back();
    return internalError("the kernel's container could not change its masks (exit " +
                         std::to_string(code) + "): " + err);
  }
  return okStatus();
}

Result<std::string> DockerBackend::normalize(std::string_view user_path) const {
  if (!user_path.empty() && user_path.front() == '/') {
    BYD_ASSIGN_OR_RETURN(std::string clean, lexicalNormalize(user_path));
    std::string rest;
    if (!stripDirPrefix(clean, kContainerWorkspace, &rest)) {
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
Status DockerBackend::listTyped(const std::string& key, const Detail& detail,
                                const std::function<bool(const FileInfo&)>& visit) const {
  AsUser as(uid_, gid_);
  return files_->listTyped(key, detail, visit);
}
std::optional<Status> DockerBackend::listTypedDirect(
    const std::string& key, const Detail& detail,
    const std::function<bool(const FileInfo&)>& visit) const {
  AsUser as(uid_, gid_);
  return files_->listTypedDirect(key, detail, visit);
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

Result<bool> DockerBackend::makeDir(const std::string& key) {
  AsUser as(uid_, gid_);
  return files_->makeDir(key);
}
Result<MoveOutcome> DockerBackend::move(const std::string& from, const std::string& to,
                                        bool replace) {
  AsUser as(uid_, gid_);
  return files_->move(from, to, replace);
}
Result<RemoveOutcome> DockerBackend::remove(const std::string& key, bool recursive) {
  AsUser as(uid_, gid_);
  return files_->remove(key, recursive);
}

Result<DockerBackend::ExecOutcome> DockerBackend::exec(const CommandSpec& spec,
                                                       const std::string& container) {
  // The command leads a process group of its own (setsid). When it ends, its status goes out
  // on stderr behind a marker; a timeout or a cancel, and its end, then end every process of
  // the code's user in its container (endAll), which holds no other code.
  // It enters through byd-enter, as root: its workspace masked, the container's user, in its
  // directory, under the sandbox's seccomp filter (which gVisor would not apply to an exec).
  std::vector<std::string> cmd = {enterPath()};
  cmd.insert(cmd.end(), spec.enter.begin(), spec.enter.end());
  cmd.insert(cmd.end(), {codeUser(), spec.cwd, "setsid", "-w", "/bin/sh", "-c",
                         "\"$0\" \"$@\"; s=$?; printf '" + std::string(kExitMarker) +
                             "%d\\n' \"$s\" >&2; kill -9 0"});
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
  Supervisor sup(docker::supervision(spec, [&] { endAll(container); }));
  bool malformed = false;
  std::string err_tail;
  docker::StreamDemuxer demux;
  const int fd = conn->fd();
  // One descriptor both ways: stdin goes out while the output comes in.
  std::string_view unsent = stdin_data;
  auto wanted = [&unsent]() -> short { return POLLIN | (unsent.empty() ? 0 : POLLOUT); };
  sup.watch(fd, wanted(), [&](short revents) -> short {
    if ((revents & POLLOUT) && !unsent.empty()) {
      const ssize_t n = ::send(fd, unsent.data(), unsent.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) unsent.remove_prefix(n);
      if (unsent.empty() || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        unsent = {};  // all of it sent, or the command no longer takes it
        conn->closeWrite();
      }
    }
    if ((revents & (POLLIN | POLLHUP | POLLERR)) == 0) return wanted();
    char buf[1 << 16];
    const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return wanted();
    if (n <= 0) return 0;
    const bool ok = demux.feed(std::string_view(buf, n), [&](int stream, std::string_view d) {
      if (stream != 2) {
        sup.out(d);
        return;
      }
      sup.err(d);
      err_tail.append(d);  // the marker must be found even past the cap
      if (err_tail.size() > 512) err_tail.erase(0, err_tail.size() - 512);
    });
    if (ok) return wanted();
    malformed = true;
    return 0;
  });
  sup.run();
  const bool killed = sup.stopping();
  ExecOutcome out;
  static_cast<Captured&>(out) = std::move(sup.captured());
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
  // byd-enter's runner, as root, which runs each command as the container's user, its
  // workspace masked and the sandbox's seccomp filter installed. (The runner itself must be
  // free to mount: the code cannot reach it.)
  // Its frames over a connection of its own when the container binds the rendezvous directory.
  return ContainerRunner::start(client_, container, {enterPath(), "--runner", codeUser()}, kRoot,
                                ForkRendezvous::dir().ok() ? kForkDir : "");
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
  if (runner.status().code() == Code::kDeadlineExceeded) {
    // Alive but slow (an engine under load): this command gets an exec; the next tries again.
    spdlog::warn("docker: {}; this command gets an exec of its own", runner.status().message());
    return std::unique_ptr<ContainerRunner>();
  }
  // The container runs, yet no runner came up (byd-enter cannot run there).
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

Status DockerBackend::ensureImage(const std::function<void(std::string_view)>& progress,
                                  const CancelToken& cancel) {
  if (!options_.recipe || image_ready_.load()) return okStatus();
  std::function<void(std::string_view)> paced;
  if (progress) {
    paced = [&progress, last = Clock::time_point()](std::string_view line) mutable {
      const auto now = Clock::now();
      if (now - last < std::chrono::seconds(1)) return;
      last = now;
      progress(line);
    };
  }
  BYD_RETURN_IF_ERROR(docker::ensureImage(client_, *options_.recipe, paced, cancel));
  image_ready_ = true;
  return okStatus();
}

Result<ExecResult> DockerBackend::execute(const ExecRequest& request, const CancelToken& cancel) {
  const auto start = Clock::now();
  if (!request.cwd.empty()) {
    BYD_ASSIGN_OR_RETURN(FileInfo dir, stat(request.cwd));
    if (dir.type != FileType::kDir) {
      return invalidArgument("cwd '" + request.cwd + "' is not a directory");
    }
  }
  BYD_RETURN_IF_ERROR(ensureImage(request.on_progress, cancel));
  CommandSpec spec;
  spec.argv = {"/bin/sh", "-c", request.command};
  spec.enter = {"--filter", std::string(kKernelDir) + "/seccomp.bpf"};
  for (std::string& arg : maskArgs(request.view)) spec.enter.push_back(std::move(arg));
  if (proxy_) proxy_->take(request.network);
  spec.env = codeEnvironment({homeVariable(), "LANG=C.UTF-8", "TERM=dumb",
                              "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"});
  for (const auto& [k, v] : request.env) spec.env.push_back(k + "=" + v);
  spec.cwd = std::string(kContainerWorkspace) + (request.cwd.empty() ? "" : "/" + request.cwd);
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
  const int exit_code = run.exit_code;
  return execResultFrom(std::move(run), exit_code,
                        std::chrono::duration<double, std::milli>(Clock::now() - start).count());
}

Result<std::unique_ptr<PythonKernel>> DockerBackend::startKernel(KernelFor what) {
  // A container of its own: nothing of another session's, or of a command's, runs beside the
  // kernel, and ending the kernel ends the container, with all that the kernel's code started.
  // The sessions' template shares its container with its forks, the sessions.
  const bool sessions = what == KernelFor::kSessions;
  BYD_ASSIGN_OR_RETURN(std::string runtime, resolvedRuntime());
  BYD_ASSIGN_OR_RETURN(
      std::string box,
      createContainer(runtime, Naming::kUnnamed,
                      sessions ? static_cast<int>(options_.python_options.max_sessions) : 1));
  // byd-enter, as root, writes the kernel's pid (for interrupts) where the code cannot change
  // it, becomes the container's user and executes the kernel. No launcher stays behind holding
  // the kernel's pipes.
  std::vector<std::string> cmd = {
      enterPath(),     "--pid-file", kKernelPidFile, codeUser(), std::string(kContainerWorkspace),
      options_.python, "-I",         "-S",           "-u"};
  for (std::string& arg : confined(std::string(kKernelDir) + "/kernel.py")) {
    cmd.push_back(std::move(arg));
  }
  std::vector<std::string> env = {homeVariable(), "LANG=C.UTF-8", "TERM=dumb", "MPLBACKEND=Agg"};
  if (sessions && options_.memory_bytes > 0) {
    env.push_back("BYD_PROCESS_MEMORY=" + std::to_string(options_.memory_bytes));
  }
  auto made = client_.request("POST", "/containers/" + box + "/exec",
                              {{"Cmd", cmd},
                               {"Env", codeEnvironment(env)},
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
  // SIGINT to the kernel, SIGKILL to its process group (its forks have groups of their own).
  auto signal = [this, box](int sig) {
    shell(box,
          std::string("read p < ") + kKernelPidFile + " && kill -" +
              (sig == SIGINT ? "INT $p" : "KILL -- -$p"),
          kRoot)
        .ok();
  };
  auto family = std::make_shared<ContainerFamily>(
      [this, box] { removeContainer(box); },
      [this, box](const FileMasks& wanted) {
        Status made = updateMasks(box, enterMaskArgs(wanted, files_->root()));
        // Half made, they hold for no one: every kernel of the container ends (its next call
        // starts afresh and says so), with what their earlier cells left running.
        if (!made.ok()) shell(box, "kill -KILL -1", codeUser()).ok();
        return made;
      },
      [this, box](const std::string& script) { shell(box, script, codeUser()).ok(); });
  auto started = PythonKernel::attach(
      std::make_unique<ContainerKernel>(std::move(*conn), signal, std::move(family)));
  if (!started.ok() && started.status().code() != Code::kDeadlineExceeded) {
    return failedPrecondition(started.status().message() + "; run_python needs " + options_.python +
                              " in the image " + options_.image);
  }
  return started;
}

std::shared_ptr<PythonSessions> DockerBackend::pythonSessions() {
  std::lock_guard lock(mu_);
  if (!python_) {
    PythonSessions::Starter sessions_template;
    PythonOptions python = options_.python_options;
    if (python.fork_sessions) {
      if (auto dir = ForkRendezvous::dir(); dir.ok()) {
        sessions_template = [this] { return startKernel(KernelFor::kSessions); };
      } else {
        spdlog::warn(
            "python: new sessions cannot be forks ({}): each starts in a container of "
            "its own",
            dir.status().message());
        python.fork_sessions = false;
      }
    }
    python_ = std::make_shared<PythonSessions>([this] { return startKernel(); }, python,
                                               sessions_template);
  }
  return python_;
}

void DockerBackend::prepare() {
  if (!ensureImage(nullptr, CancelToken()).ok()) return;
  auto runner = takeRunner();
  if (runner.ok() && *runner) giveBackRunner(std::move(*runner));
  if (runner.ok()) pythonSessions()->warm(/*ahead=*/false);
}

Result<PythonResult> DockerBackend::runPython(const PythonRequest& request,
                                              const CancelToken& cancel) {
  BYD_RETURN_IF_ERROR(ensureImage(request.on_progress, cancel));
  std::shared_ptr<PythonSessions> sessions = pythonSessions();
  if (proxy_) proxy_->take(request.network);
  std::shared_ptr<const FileMasks> masks;
  if (!options_.test_without_masks) masks = index_->masks(request.view);
  BYD_ASSIGN_OR_RETURN(PythonSessions::Run run,
                       runPythonIn(*sessions, request, cancel, std::move(masks)));
  return pythonResult(run);
}

}  // namespace byd
