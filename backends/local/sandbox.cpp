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

#include "backends/local/sandbox_cgroup.h"

namespace byd {
namespace {

bool isSymlink(const char* path) {
  struct stat st;
  return lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
}

double msSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
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
    if (n <= 0) return false;
    data.remove_prefix(n);
  }
  return true;
}

Sandbox::Sandbox(std::vector<std::string> writable, SandboxOptions options)
    : writable_(std::move(writable)), options_(std::move(options)) {}

Sandbox::~Sandbox() {
  helper_.reset();
  if (exe_fd_ >= 0) close(exe_fd_);
}

Result<std::unique_ptr<Sandbox>> Sandbox::create(std::vector<std::string> writable,
                                                 SandboxOptions options) {
  std::unique_ptr<Sandbox> box(new Sandbox(std::move(writable), std::move(options)));
  BYD_RETURN_IF_ERROR(box->prepare());
  return box;
}

Status Sandbox::prepare() {
  std::vector<std::string> layers;
  if (options_.isolate) {
    if (access(options_.bwrap.c_str(), X_OK) != 0) {
      return failedPrecondition("bubblewrap (" + options_.bwrap +
                                ") is not installed; install the bubblewrap package, or start "
                                "with --sandbox none to run commands without isolation");
    }
    exe_fd_ = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    if (exe_fd_ < 0) return internalError("cannot open this program to run its sandbox helper");
    if (!without("uid")) {
      BYD_ASSIGN_OR_RETURN(identity_, SandboxIdentity::create(options_.user, writable_));
    }
    layers = {"namespaces (user, mount, pid, net, ipc, uts)",
              "commands as " + (without("uid") ? "the server's uid (TEST: uid layer off)"
                                               : identity_.describe()),
              "no capabilities",
              "no_new_privs",
              without("seccomp-setid") ? "seccomp (TEST: setuid/setgid refusals off)"
                                       : "seccomp (no setuid/setgid bits)",
              without("proc") ? "/proc as the kernel gives it (TEST: proc layer off)"
                              : "/proc/sys and kin read-only"};
    for (const std::string& layer : options_.without) {
      spdlog::warn("sandbox: the {} layer is OFF (a test-only setting)", layer);
    }
  } else {
    layers = {"NO ISOLATION (--sandbox none)"};
  }
  cgroups_ = CgroupSet::create(options_.limits);
  layers.push_back(cgroups_->describe());
  layers.push_back("rlimits");
  if (options_.isolate) {
    const long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, 1U /*VERSION*/);
    layers.push_back(without("landlock") ? "no Landlock (TEST: landlock layer off)"
                     : abi >= 1
                         ? "Landlock ABI " + std::to_string(abi) +
                               " (writes only to the workspace and /tmp)"
                         : "no Landlock (the kernel lacks it; read-only mounts confine writes)");
  }
  for (size_t i = 0; i < layers.size(); ++i) layers_ += (i ? ", " : "") + layers[i];
  return okStatus();
}

bool Sandbox::without(std::string_view layer) const {
  return std::find(options_.without.begin(), options_.without.end(), layer) !=
         options_.without.end();
}

Status Sandbox::verify() const {
  // Once, and not at start-up: a sandboxed `exit 0` costs tens of milliseconds that the
  // server's start need not wait for. Whoever runs first waits for it.
  std::call_once(verified_once_, [this] {
    if (!options_.isolate) return;
    RunRequest probe;
    probe.argv = {"/bin/sh", "-c", "exit 0"};
    probe.cwd = "/";
    probe.env = {"PATH=/usr/bin:/bin"};
    probe.timeout = std::chrono::seconds(10);
    auto r = runUnchecked(probe, CancelToken());
    if (!r.ok() || r->exit_code != 0) {
      verified_ =
          failedPrecondition("the kernel refused the sandbox's namespaces (" +
                             (r.ok() ? r->stderr_data.substr(0, 200) : r.status().message()) +
                             "); start with --sandbox none to run commands without isolation");
    }
  });
  return verified_;
}

std::vector<std::string> Sandbox::helperArgs(const RunRequest& request) const {
  // CAP_SYS_ADMIN to make each command's pid and mount namespaces; CAP_SETFCAP because the
  // kernel lets a new user namespace map its parent's root only to a process that had it.
  std::vector<std::string> a = {
      options_.bwrap, "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
      "--unshare-cgroup-try", "--hostname", "sandbox", "--new-session", "--cap-drop", "ALL",
      "--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETFCAP",
      // To make each command the sandbox user, and to signal it then.
      "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_KILL"};
  // bubblewrap makes the parents of what it binds private (0700) to the helper's uid: a root
  // server's commands, which are another uid, could not pass them. Made first, open to all.
  std::vector<std::string> parents = {"/etc/ssl/openssl.cnf", zygote::kHelperPath};
  parents.insert(parents.end(), writable_.begin(), writable_.end());
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
  a.insert(a.end(), {"--ro-bind", "/proc/self/fd/" + std::to_string(exe_fd_), zygote::kHelperPath,
                     "--ro-bind", "/usr", "/usr"});
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
        "/etc/ssl/openssl.cnf", "/etc/python3", "/etc/python3.11"}) {
    a.insert(a.end(), {"--ro-bind-try", path, path});
  }
  a.insert(a.end(), {"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"});
  for (const std::string& dir : writable_) a.insert(a.end(), {"--bind", dir, dir});
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

// Everything the child needs, prepared before fork: after fork in a threaded program only
// async-signal-safe calls are allowed.
struct ChildSetup {
  std::vector<std::string> argv_storage, env_storage;
  std::vector<char*> argv, envp;
  int stdin_fd, stdout_fd, stderr_fd;
  const std::vector<int>* cgroup_fds;
  std::vector<std::pair<int, rlim_t>> rlimits;
  const char* chdir_to;      // --sandbox none only
  std::vector<int> inherit;  // descriptors kept open across exec
  // For the helper: a user namespace of its own, mapping its root to this server's ids.
  bool own_user_ns = false;
  std::string uid_map, gid_map;
  // Root only, for the helper instead: the identity's user namespace to enter, after moving
  // the idmapped workspace mounts into place in a mount namespace of its own.
  int userns_fd = -1;
  std::vector<std::pair<const char*, int>> id_mounts;  // directory, detached mount
};

[[noreturn]] void childMain(const ChildSetup& s) {
  for (int fd : *s.cgroup_fds) {
    [[maybe_unused]] ssize_t n = write(fd, "0", 1);  // "0": the writing process joins
  }
  for (const auto& [resource, value] : s.rlimits) {
    const rlimit limit{value, value};
    setrlimit(resource, &limit);
  }
  if (s.userns_fd >= 0) {
    // Nothing of root's groups goes in; the idmapped directories cover the real ones, in a
    // mount namespace that only this helper's sandbox sees.
    if (syscall(SYS_setgroups, 0, nullptr) != 0) _exit(125);
    if (!s.id_mounts.empty() && (unshare(CLONE_NEWNS) != 0 ||
                                 mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)) {
      _exit(125);
    }
    for (const auto& [dir, fd] : s.id_mounts) {
      if (syscall(SYS_move_mount, fd, "", AT_FDCWD, dir, MOVE_MOUNT_F_EMPTY_PATH) != 0) _exit(125);
    }
    if (setns(s.userns_fd, CLONE_NEWUSER) != 0) _exit(125);
  }
  // bwrap, run by root, would make the sandbox's mounts in a namespace owned by the host's
  // user namespace, and the helper could not make fresh /proc mounts under them. In a user
  // namespace of its own they belong to it.
  if (s.own_user_ns &&
      (unshare(CLONE_NEWUSER) != 0 || !zygote::writeSmallFile("/proc/self/setgroups", "deny") ||
       !zygote::writeSmallFile("/proc/self/uid_map", s.uid_map) ||
       !zygote::writeSmallFile("/proc/self/gid_map", s.gid_map))) {
    _exit(125);
  }
  setsid();  // its own session: no controlling terminal to inject into, one group to kill
  dup2(s.stdin_fd, STDIN_FILENO);
  dup2(s.stdout_fd, STDOUT_FILENO);
  dup2(s.stderr_fd, STDERR_FILENO);
  for (int fd : s.inherit) fcntl(fd, F_SETFD, 0);
  if (s.chdir_to != nullptr && chdir(s.chdir_to) != 0) _exit(126);
  execve(s.argv[0], s.argv.data(), s.envp.data());
  _exit(127);
}

void toCStrings(std::vector<std::string>& storage, std::vector<char*>& out) {
  for (std::string& s : storage) out.push_back(s.data());
  out.push_back(nullptr);
}

// Reads what is available from `fd` into `sink` (up to `cap` kept), tracking the tail.
bool pump(int fd, std::string& sink, size_t cap, bool& truncated, std::string& tail) {
  char buf[1 << 16];
  while (true) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      const size_t keep = sink.size() < cap ? std::min<size_t>(n, cap - sink.size()) : 0;
      sink.append(buf, keep);
      truncated |= keep < static_cast<size_t>(n);
      tail.append(buf, n);
      if (tail.size() > 8192) tail.erase(0, tail.size() - 4096);
      continue;
    }
    if (n == 0) return false;  // EOF
    return errno == EAGAIN || errno == EINTR;
  }
}

std::string lastLine(const std::string& tail) {
  const size_t end = tail.rfind('\n');
  if (end == std::string::npos) return "";
  const size_t begin = end == 0 ? std::string::npos : tail.rfind('\n', end - 1);
  return tail.substr(begin == std::string::npos ? 0 : begin + 1,
                     end - (begin == std::string::npos ? 0 : begin + 1));
}

}  // namespace

namespace {

// How supervise() watches and stops one process tree.
struct Watched {
  int fd = -1;  // readable when the tree may have ended
  // True, with the wait status, once it has ended; `note` is added to stderr.
  std::function<bool(int& status, std::string& note)> ended;
  std::function<void(int sig)> signal;  // SIGTERM or SIGKILL, to the whole tree
  std::function<void()> finish;         // kills what is left and releases the handles
};

// Feeds stdin, drains stdout and stderr to the end, enforces the deadline and cancellation
// (SIGTERM, then SIGKILL after a grace period), and reports progress. Closes the three
// descriptors.
RunResult supervise(const Watched& w, int stdin_w, int out_r, int err_r, const RunRequest& request,
                    const CancelToken& cancel, std::chrono::steady_clock::time_point start) {
  using Clock = std::chrono::steady_clock;
  constexpr auto kGrace = std::chrono::milliseconds(500);
  RunResult r;
  for (int fd : {stdin_w, out_r, err_r}) fcntl(fd, F_SETFL, O_NONBLOCK);
  bool out_open = true, err_open = true, exited = false, in_open = !request.stdin_data.empty();
  if (!in_open) close(stdin_w);
  size_t in_off = 0;
  int status = 0;
  std::string tail;
  const auto deadline = start + request.timeout;
  auto kill_at = Clock::time_point::max(), drain_until = Clock::time_point::max();
  auto next_progress = start + std::chrono::seconds(1);
  while (out_open || err_open || !exited) {
    const auto now = Clock::now();
    if (!exited && kill_at == Clock::time_point::max() && (now >= deadline || cancel.cancelled())) {
      (now >= deadline ? r.timed_out : r.cancelled) = true;
      w.signal(SIGTERM);
      kill_at = now + kGrace;
    }
    if (!exited && now >= kill_at) w.signal(SIGKILL);
    // Without a pid namespace (--sandbox none) a background child may hold the pipes open.
    if (exited && drain_until == Clock::time_point::max()) drain_until = now + kGrace;
    if (exited && now >= drain_until) break;
    if (request.on_progress && now >= next_progress) {
      request.on_progress(lastLine(tail));
      next_progress = now + std::chrono::seconds(1);
    }
    pollfd fds[4] = {{out_open ? out_r : -1, POLLIN, 0},
                     {err_open ? err_r : -1, POLLIN, 0},
                     {in_open ? stdin_w : -1, POLLOUT, 0},
                     {exited ? -1 : w.fd, POLLIN, 0}};
    poll(fds, 4, 50);
    if (out_open && fds[0].revents)
      out_open = pump(out_r, r.stdout_data, request.max_output, r.stdout_truncated, tail);
    if (err_open && fds[1].revents)
      err_open = pump(err_r, r.stderr_data, request.max_output, r.stderr_truncated, tail);
    if (in_open && fds[2].revents) {
      const ssize_t n =
          writeSomeNoSigpipe(stdin_w, std::string_view(request.stdin_data).substr(in_off));
      if (n > 0) in_off += n;
      if ((n < 0 && errno != EAGAIN) || in_off == request.stdin_data.size()) {
        close(stdin_w);
        in_open = false;
      }
    }
    if (!exited && (fds[3].revents || w.fd < 0) && w.ended(status, r.stderr_data)) exited = true;
  }
  if (in_open) close(stdin_w);
  close(out_r);  // at end of file or not, the read ends are ours to close
  close(err_r);
  w.finish();
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.duration_ms = msSince(start);
  return r;
}

}  // namespace

std::vector<std::pair<int, rlim_t>> Sandbox::rlimits() const {
  std::vector<std::pair<int, rlim_t>> out;
  const SandboxLimits& l = options_.limits;
  if (l.memory_bytes) out.push_back({RLIMIT_AS, l.memory_bytes});
  if (l.file_size_bytes) out.push_back({RLIMIT_FSIZE, l.file_size_bytes});
  if (l.open_files) out.push_back({RLIMIT_NOFILE, l.open_files});
  if (l.cpu_seconds) out.push_back({RLIMIT_CPU, l.cpu_seconds});
  if (l.processes && !(cgroups_ && cgroups_->limitsProcesses())) {
    out.push_back({RLIMIT_NPROC, l.processes});
  }
  return out;
}

Result<Sandbox::Started> Sandbox::spawn(const RunRequest& request, const std::vector<int>& inherit,
                                        bool stdin_pipe) const {
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    return resourceExhausted("cannot create pipes: " + std::string(strerror(errno)));
  }
  const int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  Started started;
  started.cgroup = cgroups_ ? cgroups_->start() : CgroupRun();

  ChildSetup s;
  s.argv_storage = options_.isolate ? helperArgs(request) : request.argv;
  s.env_storage = request.env;
  toCStrings(s.argv_storage, s.argv);
  toCStrings(s.env_storage, s.envp);
  s.stdin_fd = stdin_pipe ? in[0] : devnull;
  s.stdout_fd = out[1];
  s.stderr_fd = err[1];
  s.cgroup_fds = &started.cgroup.procsFds();
  s.inherit = inherit;
  if (!options_.isolate) s.rlimits = rlimits();  // the helper sets them for each command
  std::vector<SandboxIdentity::Mount> id_mounts;
  if (options_.isolate && identity_.changesUid()) {
    auto made = identity_.makeMounts();
    if (!made.ok()) {
      for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1], devnull}) close(fd);
      return made.status();
    }
    id_mounts = std::move(*made);
    s.userns_fd = identity_.userNamespace();
    for (const auto& m : id_mounts) s.id_mounts.emplace_back(m.dir.c_str(), m.fd);
  } else if (options_.isolate) {
    s.own_user_ns = true;
    s.uid_map = "0 " + std::to_string(geteuid()) + " 1";
    s.gid_map = "0 " + std::to_string(getegid()) + " 1";
  }
  s.chdir_to = options_.isolate ? nullptr : request.cwd.c_str();

  const pid_t pid = fork();
  if (pid == 0) childMain(s);
  for (int fd : {in[0], out[1], err[1], devnull}) close(fd);
  for (const auto& m : id_mounts) close(m.fd);
  if (pid < 0) {
    for (int fd : {in[1], out[0], err[0]}) close(fd);
    return resourceExhausted("cannot start a process: " + std::string(strerror(errno)));
  }
  started.pid = pid;
  started.stdin_w = in[1];
  started.stdout_r = out[0];
  started.stderr_r = err[0];
  return started;
}

Result<RunResult> Sandbox::run(const RunRequest& request, const CancelToken& cancel) const {
  BYD_RETURN_IF_ERROR(verify());
  return runUnchecked(request, cancel);
}

Result<RunResult> Sandbox::runUnchecked(const RunRequest& request,
                                        const CancelToken& cancel) const {
  if (options_.isolate) {
    const auto start_time = std::chrono::steady_clock::now();
    BYD_ASSIGN_OR_RETURN(Launched p, launchUnchecked(request, {}, !request.stdin_data.empty(),
                                                     /*own_cgroup=*/false));
    Watched w;
    w.fd = p.sock;
    w.ended = [&p](int& status, std::string& note) {
      std::string payload;
      std::vector<int> fds;
      const ssize_t n = zygote::receiveMessage(p.sock, payload, fds);
      for (int fd : fds) close(fd);
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
    w.signal = [&p](int sig) { signal(p, sig); };
    w.finish = [&p] {
      signal(p, SIGKILL);
      ::close(p.pidfd);
      ::close(p.sock);
    };
    return supervise(w, p.stdin_w, p.stdout_r, p.stderr_r, request, cancel, start_time);
  }
  // --sandbox none: a plain process in its own session, stopped through its process group.
  const auto start_time = std::chrono::steady_clock::now();
  BYD_ASSIGN_OR_RETURN(Started p, spawn(request, {}, !request.stdin_data.empty()));
  const pid_t pid = p.pid;
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  Watched w;
  w.fd = pidfd;
  w.ended = [pid](int& status, std::string&) { return waitpid(pid, &status, WNOHANG) == pid; };
  w.signal = [&](int sig) {
    kill(pid, sig);
    if (sig == SIGKILL) {
      kill(-pid, SIGKILL);
      p.cgroup.killAll();
    }
  };
  w.finish = [&] {
    if (pidfd >= 0) close(pidfd);
    kill(-pid, SIGKILL);  // anything left of its session
    p.cgroup.killAll();
  };
  return supervise(w, p.stdin_w, p.stdout_r, p.stderr_r, request, cancel, start_time);
}

Result<std::shared_ptr<ZygoteClient>> Sandbox::helper() const {
  std::lock_guard lock(helper_mu_);
  if (helper_ && helper_->alive()) return helper_;
  helper_.reset();
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    return resourceExhausted("cannot create a socket: " + std::string(strerror(errno)));
  }
  RunRequest request;
  // Its options: how commands drop the server's identity, and the layers a test left out.
  std::string helper_options = identity_.changesUid() ? "setuid" : "userns";
  for (const std::string& layer : options_.without) helper_options += ",no-" + layer;
  request.argv = {zygote::kHelperPath, zygote::kHelperFlag, std::to_string(sv[1]), helper_options};
  request.argv.insert(request.argv.end(), writable_.begin(), writable_.end());
  request.cwd = "/";
  request.env = {"PATH=/usr/bin:/bin"};
  auto started = spawn(request, {sv[1], exe_fd_}, /*stdin_pipe=*/false);
  close(sv[1]);
  if (!started.ok()) {
    close(sv[0]);
    return started.status();
  }
  close(started->stdin_w);
  close(started->stdout_r);
  helper_ = std::make_shared<ZygoteClient>(started->pid, sv[0], started->stderr_r,
                                           std::move(started->cgroup));
  return helper_;
}

Result<Sandbox::Launched> Sandbox::launch(const RunRequest& request,
                                          const std::vector<int>& extra_fds,
                                          bool own_cgroup) const {
  BYD_RETURN_IF_ERROR(verify());
  if (!options_.isolate) return failedPrecondition("the sandbox is off (--sandbox none)");
  return launchUnchecked(request, extra_fds, /*stdin_pipe=*/true, own_cgroup);
}

Result<Sandbox::Launched> Sandbox::launchUnchecked(const RunRequest& request,
                                                   const std::vector<int>& extra_fds,
                                                   bool stdin_pipe, bool own_cgroup) const {
  if (extra_fds.size() > 3) return internalError("at most three extra descriptors");
  CgroupRun cgroup = own_cgroup && cgroups_ ? cgroups_->start() : CgroupRun();
  if (extra_fds.size() + cgroup.procsFds().size() > 3) {
    return internalError("too many descriptors for one launch");
  }
  nlohmann::json spec = {{"argv", request.argv},
                         {"env", request.env},
                         {"cwd", request.cwd},
                         {"rlimits", rlimits()},
                         {"cgroups", cgroup.procsFds().size()}};
  const std::string spec_text = spec.dump();
  int in[2] = {-1, -1}, out[2], err[2];
  if ((stdin_pipe ? pipe2(in, O_CLOEXEC) : (in[0] = open("/dev/null", O_RDONLY | O_CLOEXEC))) < 0 ||
      pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    return resourceExhausted("cannot create pipes: " + std::string(strerror(errno)));
  }
  std::vector<int> fds = {in[0], out[1], err[1]};
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
  for (int fd : {in[0], out[1], err[1]}) ::close(fd);
  if (!run.ok()) {
    for (int fd : {in[1], out[0], err[0]}) {
      if (fd >= 0) ::close(fd);
    }
    return run.status();
  }
  return Launched{run->pidfd, run->sock, in[1], out[0], err[0], std::move(cgroup)};
}

void Sandbox::signal(const Launched& process, int sig) {
  syscall(SYS_pidfd_send_signal, process.pidfd, sig, nullptr, 0);
}

void Sandbox::Launched::close() {
  for (int* fd : {&pidfd, &sock, &stdin_w, &stdout_r, &stderr_r}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
  cgroup.reset();
}

}  // namespace byd
