// How the sandbox starts its helper (in bubblewrap) or, under --sandbox none, a plain
// process: everything prepared before fork, and only async-signal-safe calls after it.

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "backends/local/sandbox.h"
#include "backends/local/sandbox_cgroup.h"

namespace byd {

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
  // A fresh start for signals: the forking thread's mask (a server thread blocks SIGPIPE, an
  // HTTP worker more) and what the server ignores would otherwise pass through exec, and a
  // kernel would never see the SIGINT that interrupts its cell.
  struct sigaction dfl = {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
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

}  // namespace

std::vector<std::pair<int, rlim_t>> Sandbox::rlimits() const {
  std::vector<std::pair<int, rlim_t>> out;
  const SandboxLimits& l = options_.limits;
  if (l.memory_bytes) out.push_back({RLIMIT_AS, l.memory_bytes});
  if (l.file_size_bytes) out.push_back({RLIMIT_FSIZE, l.file_size_bytes});
  if (l.open_files) out.push_back({RLIMIT_NOFILE, l.open_files});
  if (l.cpu_seconds) out.push_back({RLIMIT_CPU, l.cpu_seconds});
  if (l.processes && !(prepared_.cgroups && prepared_.cgroups->limitsProcesses())) {
    out.push_back({RLIMIT_NPROC, l.processes});
  }
  return out;
}

Result<Sandbox::Started> Sandbox::spawn(const RunRequest& request, const std::vector<int>& inherit,
                                        bool stdin_pipe) const {
  BYD_ASSIGN_OR_RETURN(StdioPipes io, makeStdioPipes(stdin_pipe));
  PipeFds &in = io.in, &out = io.out, &err = io.err;
  Started started;
  started.cgroup = prepared_.cgroups ? prepared_.cgroups->start() : CgroupRun();

  ChildSetup s;
  s.argv_storage = options_.isolate ? helperArgs(request) : request.argv;
  s.env_storage = request.env;
  toCStrings(s.argv_storage, s.argv);
  toCStrings(s.env_storage, s.envp);
  s.stdin_fd = in.read.get();
  s.stdout_fd = out.write.get();
  s.stderr_fd = err.write.get();
  s.cgroup_fds = &started.cgroup.procsFds();
  s.inherit = inherit;
  if (!options_.isolate) s.rlimits = rlimits();  // the helper sets them for each command
  std::vector<SandboxIdentity::Mount> id_mounts;
  if (options_.isolate && prepared_.identity.changesUid()) {
    BYD_ASSIGN_OR_RETURN(id_mounts, prepared_.identity.makeMounts());
    s.userns_fd = prepared_.identity.userNamespace();
    for (const auto& m : id_mounts) s.id_mounts.emplace_back(m.dir.c_str(), m.fd.get());
  } else if (options_.isolate) {
    s.own_user_ns = true;
    s.uid_map = "0 " + std::to_string(geteuid()) + " 1";
    s.gid_map = "0 " + std::to_string(getegid()) + " 1";
  }
  s.chdir_to = options_.isolate ? nullptr : request.cwd.c_str();

  const pid_t pid = fork();
  if (pid == 0) childMain(s);
  if (pid < 0) return resourceExhausted("cannot start a process: " + std::string(strerror(errno)));
  started.pid = pid;
  started.stdin_w = std::move(in.write);
  started.stdout_r = std::move(out.read);
  started.stderr_r = std::move(err.read);
  return started;
}

}  // namespace byd
