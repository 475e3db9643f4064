#include "backends/local/sandbox.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "backends/egress/network_policy.h"
#include "backends/local/process_use.h"
#include "backends/local/sandbox_cgroup.h"
#include "common/metrics.h"
#include "common/supervisor.h"

namespace byd {
namespace {

bool isSymlink(const char* path) {
  struct stat st;
  return lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
}

}  // namespace

ssize_t writeSomeNoSigpipe(int fd, std::string_view data) {
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  ssize_t n;
  do {
    n = write(fd, data.data(), data.size());
  } while (n < 0 && errno == EINTR);
  const int saved = errno;
  if (n < 0 && saved == EPIPE) {
    // Take the SIGPIPE this thread just earned, so unblocking does not deliver it.
    const timespec zero{0, 0};
    sigtimedwait(&pipe_set, nullptr, &zero);
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errno = saved;
  return n;
}

bool writeNoSigpipe(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = writeSomeNoSigpipe(fd, data);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd, POLLOUT, 0};  // a non-blocking descriptor: wait as a blocking write would
      poll(&p, 1, -1);
      continue;
    }
    if (n <= 0) return false;
    data.remove_prefix(n);
  }
  return true;
}

Sandbox::Sandbox(std::vector<std::string> writable, SandboxOptions options)
    : writable_(std::move(writable)), options_(std::move(options)) {}

Sandbox::~Sandbox() { helper_.reset(); }

Result<std::unique_ptr<Sandbox>> Sandbox::create(std::vector<std::string> writable,
                                                 SandboxOptions options) {
  if (options.isolate && access(options.bwrap.c_str(), X_OK) != 0) {
    return failedPrecondition("bubblewrap (" + options.bwrap +
                              ") is not installed; install the bubblewrap package, or start "
                              "with --sandbox none to run commands without isolation");
  }
  return std::unique_ptr<Sandbox>(new Sandbox(std::move(writable), std::move(options)));
}

Status Sandbox::prepare() const {
  std::vector<std::string> layers;
  if (options_.isolate) {
    prepared_.exe_fd.reset(open("/proc/self/exe", O_RDONLY | O_CLOEXEC));
    if (!prepared_.exe_fd.valid())
      return internalError("cannot open this program to run its sandbox helper");
    if (!without("uid")) {
      BYD_ASSIGN_OR_RETURN(prepared_.identity, SandboxIdentity::create(options_.user, writable_));
    }
    layers = {"namespaces (user, mount, pid, net, ipc, uts)",
              "commands as " + (without("uid") ? "the server's uid (TEST: uid layer off)"
                                               : prepared_.identity.describe()),
              "no capabilities",
              "no_new_privs",
              without("seccomp-setid") ? "seccomp (TEST: setuid/setgid refusals off)"
                                       : "seccomp (no setuid/setgid bits)",
              without("proc") ? "/proc as the kernel gives it (TEST: proc layer off)"
                              : "/proc/sys and kin read-only",
              without("masks") ? "the workspace unmasked (TEST: masks layer off)"
                               : "the file rules mounted into each command's view",
              options_.proxy_port != 0 ? "network only through the server's proxy (127.0.0.1:" +
                                             std::to_string(options_.proxy_port) + " inside)"
                                       : "no network"};
    for (const std::string& layer : options_.without) {
      spdlog::warn("sandbox: the {} layer is OFF (a test-only setting)", layer);
    }
  } else {
    layers = {options_.container
                  ? "no nested sandbox: the container this server runs in is the boundary "
                    "(--sandbox container)"
                  : "NO ISOLATION (--sandbox none)"};
  }
  prepared_.cgroups = CgroupSet::create(options_.limits);
  layers.push_back(prepared_.cgroups->describe());
  layers.push_back("rlimits");
  if (options_.isolate) {
    const long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, 1U /*VERSION*/);
    layers.push_back(without("landlock") ? "no Landlock (TEST: landlock layer off)"
                     : abi >= 1
                         ? "Landlock ABI " + std::to_string(abi) +
                               " (writes only to the workspace and /tmp)"
                         : "no Landlock (the kernel lacks it; read-only mounts confine writes)");
  }
  for (size_t i = 0; i < layers.size(); ++i) prepared_.layers += (i ? ", " : "") + layers[i];
  return okStatus();
}

bool Sandbox::without(std::string_view layer) const {
  return std::find(options_.without.begin(), options_.without.end(), layer) !=
         options_.without.end();
}

Status Sandbox::verify() const {
  // Once, and not at start-up: a sandboxed `exit 0` costs tens of milliseconds that the
  // server's start need not wait for. Whoever runs first waits for it. Only an answer is
  // kept: a probe that a busy machine made late, or that was killed, is tried again.
  std::lock_guard lock(verify_mu_);
  if (verified_) return *verified_;
  if (!prepared_.done) {
    prepared_.done = true;
    Status prepared = prepare();
    if (!prepared.ok() || !options_.isolate) return *(verified_ = prepared);
  }
  RunRequest probe;
  probe.argv = {"/bin/sh", "-c", "exit 0"};
  probe.cwd = "/";
  probe.env = {"PATH=/usr/bin:/bin"};
  probe.timeout = std::chrono::seconds(30);
  auto r = runUnchecked(probe, CancelToken());
  if (r.ok() && r->exit_code == 0) return *(verified_ = okStatus());
  if (r.ok() && (r->timed_out || r->exit_code > 128)) {
    return Status(r->timed_out ? Code::kDeadlineExceeded : Code::kInternal,
                  r->timed_out ? "the sandbox's first command did not finish in 30 s (is the "
                                 "machine overloaded?); try again"
                               : "the sandbox's first command was killed by signal " +
                                     std::to_string(r->exit_code - 128) + "; try again");
  }
  std::string why = !r.ok() ? r.status().message()
                    : !r->stderr_data.empty()
                        ? r->stderr_data.substr(0, 200)
                        : "exit status " + std::to_string(r->exit_code) + ", nothing on stderr";
  return *(verified_ = failedPrecondition(
               "the kernel refused the sandbox's namespaces (" + why +
               "); start with --sandbox none to run commands without isolation"));
}

std::vector<std::string> Sandbox::helperArgs(const RunRequest& request) const {
  // CAP_SYS_ADMIN to make each command's pid and mount namespaces; CAP_SETFCAP because the
  // kernel lets a new user namespace map its parent's root only to a process that had it.
  std::vector<std::string> a = {
      options_.bwrap, "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
      "--unshare-cgroup-try", "--hostname", "sandbox", "--new-session", "--cap-drop", "ALL",
      "--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETFCAP",
      // To make each command the sandbox user, and to signal it then.
      "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_KILL",
      // To reach what it masks in a workspace only the sandbox user may enter.
      "--cap-add", "CAP_DAC_READ_SEARCH"};
  // bubblewrap makes the parents of what it binds private (0700) to the helper's uid: a root
  // server's commands, which are another uid, could not pass them. Made first, open to all.
  std::vector<std::string> parents = {"/etc/ssl/openssl.cnf", zygote::kHelperPath};
  parents.insert(parents.end(), writable_.begin(), writable_.end());
  parents.insert(parents.end(), options_.readonly.begin(), options_.readonly.end());
  std::vector<std::string> made;
  for (const std::string& path : parents) {
    for (size_t slash = path.find('/', 1); slash != std::string::npos;
         slash = path.find('/', slash + 1)) {
      std::string dir = path.substr(0, slash);
      if (std::find(made.begin(), made.end(), dir) != made.end()) continue;
      a.insert(a.end(), {"--perms", "0755", "--dir", dir});
      made.push_back(std::move(dir));
    }
  }
  a.insert(a.end(), {"--ro-bind", "/proc/self/fd/" + std::to_string(prepared_.exe_fd.get()),
                     zygote::kHelperPath, "--ro-bind", "/usr", "/usr"});
  // Merged-/usr systems have /bin -> usr/bin: recreate the link rather than bind the target.
  for (const char* dir : {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}) {
    char target[256];
    const ssize_t n = isSymlink(dir) ? readlink(dir, target, sizeof target - 1) : -1;
    if (n > 0) {
      a.insert(a.end(), {"--symlink", std::string(target, n), dir});
    } else if (access(dir, F_OK) == 0) {
      a.insert(a.end(), {"--ro-bind", dir, dir});
    }
  }
  // The parts of /etc a shell and Python need; nothing with secrets (no shadow, no ssh).
  for (const char* path :
       {"/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/ld.so.cache", "/etc/ld.so.conf",
        "/etc/ld.so.conf.d", "/etc/localtime", "/etc/alternatives", "/etc/bash.bashrc",
        "/etc/profile", "/etc/inputrc", "/etc/mime.types", "/etc/matplotlibrc", "/etc/fonts",
        "/etc/ssl/openssl.cnf", "/etc/ssl/certs", "/etc/python3", "/etc/python3.11"}) {
    a.insert(a.end(), {"--ro-bind-try", path, path});
  }
  a.insert(a.end(), {"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"});
  for (const std::string& dir : writable_) a.insert(a.end(), {"--bind", dir, dir});
  for (const std::string& dir : options_.readonly) a.insert(a.end(), {"--ro-bind", dir, dir});
  // The sandbox's own root (where /etc and the mount points live) becomes read-only too: only
  // the workspace and /tmp, which are mounts of their own, stay writable.
  a.insert(a.end(), {"--remount-ro", "/"});
  // Not --die-with-parent, which follows the forking thread: the helper ends when its control
  // socket closes, that is when this server does.
  a.insert(a.end(), {"--chdir", "/", "--"});
  a.insert(a.end(), request.argv.begin(), request.argv.end());
  return a;
}

namespace {

constexpr auto kGrace = std::chrono::milliseconds(500);

nlohmann::json masksJson(const FileMasks& masks) {
  nlohmann::json out = nlohmann::json::array();
  for (const FileMask& m : masks)
    out.push_back({std::string(1, static_cast<char>(m.kind)), m.path});
  return out;
}

}  // namespace

Result<StdioPipes> makeStdioPipes(bool stdin_pipe) {
  StdioPipes p;
  if ((stdin_pipe
           ? !makePipe(p.in)
           : (p.in.read.reset(open("/dev/null", O_RDONLY | O_CLOEXEC)), !p.in.read.valid())) ||
      !makePipe(p.out) || !makePipe(p.err)) {
    return resourceExhausted("cannot create pipes: " + std::string(strerror(errno)));
  }
  return p;
}

namespace {

// How a process tree is watched and stopped.
struct Tree {
  int ended_fd = -1;  // readable when it may have ended
  // True, with the wait status, once it has ended; `note` is added to stderr.
  std::function<bool(int& status, std::string& note)> ended;
  std::function<void(int sig)> signal;  // SIGTERM or SIGKILL, to the whole tree
};

// Runs the supervisor over a process tree: feeds its stdin, reads its output to the end (or
// for a grace period after the tree has ended: without a pid namespace, under --sandbox none, a
// background child may hold a pipe), and on the deadline or a cancel sends SIGTERM, then SIGKILL
// each grace period until it has ended. The caller kills what is left.
RunResult supervise(const Tree& tree, UniqueFd stdin_w, UniqueFd out_r, UniqueFd err_r,
                    const RunRequest& request, const CancelToken& cancel,
                    std::chrono::steady_clock::time_point start) {
  bool exited = false;
  int status = 0;
  SupervisorOptions o;
  o.start = start;
  o.timeout = request.timeout;
  o.max_output = request.max_output;
  o.cancel = &cancel;
  o.on_progress = request.on_progress;
  o.grace = kGrace;
  o.stop = [&](int step) {
    if (!exited) tree.signal(step == 1 ? SIGTERM : SIGKILL);
    return true;
  };
  Supervisor sup(std::move(o));
  for (const UniqueFd* fd : {&stdin_w, &out_r, &err_r}) fcntl(fd->get(), F_SETFL, O_NONBLOCK);
  std::string_view unsent = request.stdin_data;
  if (unsent.empty()) {
    stdin_w.reset();
  } else {
    sup.watch(stdin_w.get(), POLLOUT, [&](short) -> short {
      const ssize_t n = writeSomeNoSigpipe(stdin_w.get(), unsent);
      if (n > 0) unsent.remove_prefix(n);
      if ((n >= 0 || errno == EAGAIN) && !unsent.empty()) return POLLOUT;
      stdin_w.reset();  // all of it written, or the command stopped reading
      return 0;
    });
  }
  sup.watch(out_r.get(), POLLIN, [&](short) { return sup.readInto(out_r.get(), false); });
  sup.watch(err_r.get(), POLLIN, [&](short) { return sup.readInto(err_r.get(), true); });
  sup.watch(tree.ended_fd, POLLIN, [&](short) -> short {
    std::string note;
    const bool ended = tree.ended(status, note);
    if (!note.empty()) sup.err(note);
    if (!ended) return POLLIN;
    exited = true;
    sup.finishBy(std::chrono::steady_clock::now() + kGrace);
    return 0;
  });
  sup.run();
  return execResultFrom(std::move(sup.captured()),
                        WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
                        sup.elapsedMs());
}

}  // namespace

Result<RunResult> Sandbox::run(const RunRequest& request, const CancelToken& cancel) const {
  BYD_RETURN_IF_ERROR(verify());
  return runUnchecked(request, cancel);
}

Result<RunResult> Sandbox::runUnchecked(const RunRequest& request,
                                        const CancelToken& cancel) const {
  const auto start_time = std::chrono::steady_clock::now();
  if (options_.isolate) {
    BYD_ASSIGN_OR_RETURN(Launched p, launchUnchecked(request, {}, !request.stdin_data.empty(),
                                                     /*own_cgroup=*/false));
    Tree tree;
    tree.ended_fd = p.sock.get();
    tree.ended = [&p](int& status, std::string& note) {
      std::string payload;
      std::vector<int> fds;
      const ssize_t n = zygote::receiveMessage(p.sock.get(), payload, fds);
      const std::vector<UniqueFd> unexpected(fds.begin(), fds.end());  // none is due: closed
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) return false;
      if (n > 0 && payload[0] == zygote::kStatus && payload.size() == 1 + sizeof(int)) {
        memcpy(&status, payload.data() + 1, sizeof(int));
      } else if (n > 0 && payload[0] == zygote::kError) {
        note += "sandbox: " + payload.substr(1) + "\n";
        status = 126 << 8;
      } else {
        status = SIGKILL;  // its namespace was killed before it could report
      }
      return true;
    };
    tree.signal = [&p](int sig) { signal(p, sig); };
    RunResult r = supervise(tree, std::move(p.stdin_w), std::move(p.stdout_r),
                            std::move(p.stderr_r), request, cancel, start_time);
    signal(p, SIGKILL);  // what is left of its namespace
    return r;
  }
  // --sandbox none: a plain process in its own session, stopped through its process group.
  BYD_ASSIGN_OR_RETURN(Started p, spawn(request, {}, !request.stdin_data.empty()));
  const pid_t pid = p.pid;
  const UniqueFd pidfd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
  auto kill_all = [&p, pid] {
    kill(-pid, SIGKILL);
    p.cgroup.killAll();
  };
  if (!pidfd.valid()) {
    kill_all();
    waitpid(pid, nullptr, 0);
    return resourceExhausted(
        "cannot watch the command (pidfd_open: " + std::string(strerror(errno)) + ")");
  }
  Tree tree;
  tree.ended_fd = pidfd.get();
  tree.ended = [pid](int& status, std::string&) { return waitpid(pid, &status, WNOHANG) == pid; };
  tree.signal = [&](int sig) {
    kill(pid, sig);
    if (sig == SIGKILL) kill_all();
  };
  RunResult r = supervise(tree, std::move(p.stdin_w), std::move(p.stdout_r), std::move(p.stderr_r),
                          request, cancel, start_time);
  kill_all();  // anything left of its session
  return r;
}

std::optional<ResourceUse> Sandbox::resourceUse() const {
  pid_t pid = 0;
  {
    std::lock_guard lock(helper_mu_);
    if (helper_) pid = helper_->pid();
  }
  if (pid <= 0) return std::nullopt;
  const std::optional<TreeUse> tree = processTreeUse(pid);
  if (!tree) return std::nullopt;
  ResourceUse use;
  use.memory_bytes = tree->rss_bytes;
  use.cpu_seconds = tree->cpu_seconds;
  if (options_.limits.memory_bytes > 0) use.memory_limit = options_.limits.memory_bytes;
  return use;
}

Result<std::shared_ptr<ZygoteClient>> Sandbox::helper() const {
  std::lock_guard lock(helper_mu_);
  if (helper_ && helper_->alive()) return helper_;
  helper_.reset();
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    return resourceExhausted("cannot create a socket: " + std::string(strerror(errno)));
  }
  UniqueFd control(sv[0]), helper_end(sv[1]);
  RunRequest request;
  // Its options: how commands drop the server's identity, and the layers a test left out.
  std::string helper_options = prepared_.identity.changesUid() ? "setuid" : "userns";
  for (const std::string& layer : options_.without) helper_options += ",no-" + layer;
  if (options_.proxy_port != 0) helper_options += ",proxy=" + std::to_string(options_.proxy_port);
  request.argv = {zygote::kHelperPath, zygote::kHelperFlag, std::to_string(helper_end.get()),
                  helper_options};
  request.argv.insert(request.argv.end(), writable_.begin(), writable_.end());
  if (!options_.readonly.empty()) {
    request.argv.push_back(zygote::kReadonlyFlag);
    request.argv.insert(request.argv.end(), options_.readonly.begin(), options_.readonly.end());
  }
  request.cwd = "/";
  request.env = {"PATH=/usr/bin:/bin"};
  BYD_ASSIGN_OR_RETURN(Started started, spawn(request, {helper_end.get(), prepared_.exe_fd.get()},
                                              /*stdin_pipe=*/false));
  if (options_.proxy_port != 0) {
    // Its first message: the proxy's listener in its network namespace.
    pollfd p{control.get(), POLLIN, 0};
    std::string payload;
    std::vector<int> fds;
    const ssize_t n =
        poll(&p, 1, 10000) == 1 ? zygote::receiveMessage(control.get(), payload, fds) : -1;
    std::vector<UniqueFd> got(fds.begin(), fds.end());
    if (n <= 0 || payload[0] != zygote::kListener || got.size() != 1) {
      kill(started.pid, SIGKILL);
      waitpid(started.pid, nullptr, 0);
      return internalError("the sandbox helper did not open the proxy's port");
    }
    if (proxy_listener_) proxy_listener_(std::move(got[0]));
  }
  metrics::add("byd_sandbox_starts_total", {});
  helper_ = std::make_shared<ZygoteClient>(started.pid, std::move(control),
                                           std::move(started.stderr_r), std::move(started.cgroup));
  return helper_;
}

Result<Sandbox::Launched> Sandbox::launch(const RunRequest& request,
                                          const std::vector<int>& extra_fds,
                                          bool own_cgroup) const {
  BYD_RETURN_IF_ERROR(verify());
  if (!options_.isolate) {
    return failedPrecondition("the sandbox is off (" + std::string(plainMode()) + ")");
  }
  return launchUnchecked(request, extra_fds, /*stdin_pipe=*/true, own_cgroup, /*linger=*/true);
}

Result<Sandbox::Plain> Sandbox::launchPlain(const RunRequest& request,
                                            const std::vector<int>& inherit) const {
  BYD_RETURN_IF_ERROR(verify());
  if (options_.isolate) return internalError("a plain process in an isolating sandbox");
  BYD_ASSIGN_OR_RETURN(Started started, spawn(request, inherit, /*stdin_pipe=*/true));
  Plain p;
  p.pid = started.pid;
  p.stdin_w = std::move(started.stdin_w);
  p.stdout_r = std::move(started.stdout_r);
  p.stderr_r = std::move(started.stderr_r);
  p.cgroup = std::move(started.cgroup);
  return p;
}

Result<Sandbox::Launched> Sandbox::launchUnchecked(const RunRequest& request,
                                                   const std::vector<int>& extra_fds,
                                                   bool stdin_pipe, bool own_cgroup,
                                                   bool linger) const {
  if (extra_fds.size() > 3) return internalError("at most three extra descriptors");
  CgroupRun cgroup = own_cgroup && prepared_.cgroups ? prepared_.cgroups->start() : CgroupRun();
  if (extra_fds.size() + cgroup.procsFds().size() > 3) {
    return internalError("too many descriptors for one launch");
  }
  std::vector<std::string> env = request.env;
  if (options_.proxy_port != 0) {
    for (std::string& v : egress::proxyEnvironment(options_.proxy_port))
      env.push_back(std::move(v));
  }
  nlohmann::json spec = {{"argv", request.argv},
                         {"env", env},
                         {"cwd", request.cwd},
                         {"rlimits", rlimits()},
                         {"cgroups", cgroup.procsFds().size()},
                         {"linger", linger}};
  if (request.masks && !request.masks->empty()) spec["masks"] = masksJson(*request.masks);
  const std::string spec_text = spec.dump();
  BYD_ASSIGN_OR_RETURN(StdioPipes io, makeStdioPipes(stdin_pipe));
  PipeFds &in = io.in, &out = io.out, &err = io.err;
  std::vector<int> fds = {in.read.get(), out.write.get(), err.write.get()};
  fds.insert(fds.end(), extra_fds.begin(), extra_fds.end());
  fds.insert(fds.end(), cgroup.procsFds().begin(), cgroup.procsFds().end());
  Result<ZygoteClient::Run> run = internalError("no sandbox helper");
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto helper_or = helper();
    if (!helper_or.ok()) {
      run = helper_or.status();
      break;
    }
    bool lost = false;
    run = (*helper_or)->start(spec_text, fds, lost);
    if (run.ok() || !lost) break;
    spdlog::warn("sandbox: {}; starting a new one", run.status().message());
  }
  if (!run.ok()) return run.status();
  Launched launched;
  launched.pidfd = std::move(run->pidfd);
  launched.sock = std::move(run->sock);
  launched.stdin_w = std::move(in.write);
  launched.stdout_r = std::move(out.read);
  launched.stderr_r = std::move(err.read);
  launched.cgroup = std::move(cgroup);
  return launched;
}

Status Sandbox::changeMasks(const Launched& process, const FileMasks& masks) {
  const std::string text = nlohmann::json{{"masks", masksJson(masks)}}.dump();
  UniqueFd memfd(memfd_create("byd-masks", MFD_CLOEXEC));
  if (!memfd.valid() || !writeNoSigpipe(memfd.get(), text)) {
    return resourceExhausted("cannot pass the masks: " + std::string(strerror(errno)));
  }
  if (!zygote::sendMessage(process.sock.get(), std::string(1, zygote::kMasks), {memfd.get()})) {
    return failedPrecondition("the process has ended");
  }
  // Its answer. The status of a command that ended before (a kernel whose forks live on in
  // its namespace) may come first: skipped.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::string payload;
  ssize_t n = 0;
  do {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{process.sock.get(), POLLIN, 0};
    if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0) {
      signal(process, SIGKILL);
      return internalError("the sandbox did not change its masks in time; the process was ended");
    }
    std::vector<int> fds;
    n = zygote::receiveMessage(process.sock.get(), payload, fds);
    const std::vector<UniqueFd> unexpected(fds.begin(), fds.end());
  } while (n > 0 && payload[0] == zygote::kStatus);
  if (n > 0 && payload[0] == zygote::kMasksDone) return okStatus();
  signal(process, SIGKILL);
  if (n > 0 && payload[0] == zygote::kError) {
    return internalError("sandbox: " + payload.substr(1) + "; the process was ended");
  }
  return failedPrecondition("the process has ended");
}

CgroupRun Sandbox::cgroupFor(pid_t pid) const {
  if (!prepared_.cgroups) return CgroupRun();
  CgroupRun run = prepared_.cgroups->start();
  const std::string text = std::to_string(pid);
  for (int fd : run.procsFds()) {
    if (write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
      spdlog::warn("sandbox: cannot move process {} into a cgroup of its own: {}", pid,
                   strerror(errno));
    }
  }
  return run;
}

void Sandbox::signal(const Launched& process, int sig) {
  syscall(SYS_pidfd_send_signal, process.pidfd.get(), sig, nullptr, 0);
}

void Sandbox::Launched::close() {
  for (UniqueFd* fd : {&pidfd, &sock, &stdin_w, &stdout_r, &stderr_r}) fd->reset();
  cgroup.reset();
}

}  // namespace byd
