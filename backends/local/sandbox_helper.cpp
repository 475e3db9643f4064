// The sandbox helper: the process inside bubblewrap that starts every command (see
// sandbox_zygote.h). It is single-threaded, so its clones may use the whole C++ library. The
// helper holds its descriptors in UniqueFd; its clones (each command's namespace init, up to
// the command's exec) use plain ones.

#include <fcntl.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/local/sandbox_identity.h"
#include "backends/local/sandbox_masks.h"
#include "backends/local/sandbox_seccomp.h"
#include "backends/local/sandbox_zygote.h"
#include "common/text.h"

namespace byd {
namespace {

// struct clone_args of clone3(2), version 0.
struct CloneArgs {
  uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
};

// How the helper was started (its third argument, a comma-separated list).
struct HelperOptions {
  bool setuid = false;  // commands become kSandboxInnerUid here, not root of a namespace
  // Layers a test may leave out (see SandboxOptions::without).
  bool landlock = true, refuse_setid = true, guard_proc = true, masks = true;
  int proxy_port = 0;  // a listening socket on 127.0.0.1 of this port goes to the server
  std::vector<std::string> readonly;  // SandboxOptions::readonly
};

struct Spec {
  std::vector<std::string> argv, env;
  std::string cwd;
  std::vector<std::pair<int, uint64_t>> rlimits;
  size_t cgroups = 0;  // the last this many descriptors are cgroup.procs files to join
  MaskList masks;
  bool linger = false;  // the namespace outlives the command while other processes remain
};

nlohmann::json readJson(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0) return nullptr;
  std::string text(st.st_size, '\0');
  if (pread(fd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) return nullptr;
  return nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
}

bool readSpec(int fd, Spec& spec) {
  const nlohmann::json j = readJson(fd);
  if (!j.is_object() || !j.contains("argv") || !j["argv"].is_array() || j["argv"].empty()) {
    return false;
  }
  try {
    spec.argv = j.at("argv").get<std::vector<std::string>>();
    spec.env = j.value("env", std::vector<std::string>{});
    spec.cwd = j.value("cwd", std::string("/"));
    spec.rlimits = j.value("rlimits", std::vector<std::pair<int, uint64_t>>{});
    spec.cgroups = j.value("cgroups", size_t{0});
    spec.linger = j.value("linger", false);
  } catch (const nlohmann::json::exception&) {
    return false;
  }
  return !j.contains("masks") || parseMasks(j["masks"], spec.masks);
}

// "sandbox: <what> <detail>: <error>" on stderr, without allocating (see Command).
void say(const char* what, const char* detail = "") {
  const char* error = strerrordesc_np(errno);
  for (const char* part : {"sandbox: ", what, detail, ": ", error ? error : "?", "\n"}) {
    [[maybe_unused]] ssize_t n = write(STDERR_FILENO, part, strlen(part));
  }
}

// What the command's process needs, prepared before it is cloned: it shares the memory of
// its parent until exec (as posix_spawn's child does), so it may not allocate.
struct Command {
  const Spec* spec;
  std::vector<char*> argv, envp;
  std::vector<int> fds;  // its descriptors 0, 1, 2, ... in order
  sock_fprog filter;
  int landlock = -1;    // the ruleset to enforce, when the kernel has Landlock
  bool setuid = false;  // see HelperOptions
};

// The command itself, a child of its namespace's init. Failing before exec is exit 126.
int commandMain(void* arg) {
  const Command& c = *static_cast<const Command*>(arg);
  for (int sig = 1; sig < NSIG; ++sig) signal(sig, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  // Out of the way first (above every target number), then into place.
  const int landlock = c.landlock >= 0 ? fcntl(c.landlock, F_DUPFD_CLOEXEC, 16) : -1;
  int moved[8];
  for (size_t i = 0; i < c.fds.size(); ++i) {
    moved[i] = fcntl(c.fds[i], F_DUPFD_CLOEXEC, 16);
    if (moved[i] < 0) _exit(126);
  }
  for (size_t i = 0; i < c.fds.size(); ++i) {
    if (dup2(moved[i], static_cast<int>(i)) < 0) _exit(126);
  }
  setsid();  // no controlling terminal to inject into
  if (c.setuid) {
    // A root server's: the helper's namespace maps kSandboxInnerUid to the sandbox user, an
    // unprivileged host uid. Changing to it drops every capability. Raw system calls: glibc's
    // wrappers would signal the helper's threads, and this child shares its memory.
    constexpr long id = kSandboxInnerUid;
    if (syscall(SYS_setgroups, 0, nullptr) != 0 || syscall(SYS_setresgid, id, id, id) != 0 ||
        syscall(SYS_setresuid, id, id, id) != 0) {
      say("cannot become the sandbox user");
      _exit(126);
    }
  } else if (unshare(CLONE_NEWUSER) != 0) {
    // A user namespace of its own, as uid 1000: the capabilities the helper holds (to make
    // namespaces) are gone at exec, and nothing here maps to a privileged id.
    say("cannot make its user namespace");
    _exit(126);
  }
  if (!c.setuid && (!zygote::writeSmallFile("/proc/self/setgroups", "deny") ||
                    !zygote::writeSmallFile("/proc/self/uid_map", "1000 0 1") ||
                    !zygote::writeSmallFile("/proc/self/gid_map", "1000 0 1"))) {
    say("cannot map its user namespace");
    _exit(126);
  }
  for (const auto& [resource, value] : c.spec->rlimits) {
    const rlimit limit{value, value};
    setrlimit(resource, &limit);
  }
  if (chdir(c.spec->cwd.c_str()) != 0) {
    say("cannot enter ", c.spec->cwd.c_str());
    _exit(126);
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    say("cannot set no_new_privs");
    _exit(126);
  }
  if (c.landlock >= 0 && syscall(SYS_landlock_restrict_self, landlock, 0) != 0) {
    say("cannot enforce the Landlock ruleset");
    _exit(126);
  }
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &c.filter) != 0) {
    say("cannot install the seccomp filter");
    _exit(126);
  }
  execve(c.argv[0], c.argv.data(), c.envp.data());
  say("cannot run ", c.argv[0]);
  _exit(127);
}

// Starts commandMain in a child; -1 with errno on failure.
pid_t startCommand(Command& c) {
#if defined(__SANITIZE_ADDRESS__)
  // The sanitizer's per-thread state must not be shared with a child.
  const pid_t pid = fork();
  if (pid == 0) commandMain(&c);
  return pid;
#else
  static char stack[64 * 1024] alignas(16);
  return clone(commandMain, stack + sizeof stack, CLONE_VM | CLONE_VFORK | SIGCHLD, &c);
#endif
}

void ignoreSignal(int) {}

// A Landlock ruleset that lets a command write only beneath the workspace, /tmp, /dev/shm, and
// to the files of /dev (/dev/null and kin); reading is left to the mounts. -1 when the kernel has
// no Landlock.
int landlockRuleset(const std::vector<std::string>& writable) {
  const long abi =
      syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi < 1) return -1;
  constexpr uint64_t kRefer = 1ULL << 13, kTruncate = 1ULL << 14;  // ABI 2 and 3
  uint64_t writes = LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |
                    LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR |
                    LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
                    LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |
                    LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM;
  if (abi >= 2) writes |= kRefer;
  if (abi >= 3) writes |= kTruncate;
  const uint64_t handled = writes;  // struct landlock_ruleset_attr's first field
  const int ruleset =
      static_cast<int>(syscall(SYS_landlock_create_ruleset, &handled, sizeof handled, 0));
  if (ruleset < 0) return -1;
  auto allow = [&](const std::string& path, uint64_t access) {
    const int dir = open(path.c_str(), O_PATH | O_CLOEXEC);
    if (dir < 0) return;
    landlock_path_beneath_attr rule{access, dir};
    syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0);
    close(dir);
  };
  for (const std::string& dir : writable) allow(dir, writes);
  allow("/tmp", writes);
  allow("/dev/shm", writes);
  allow("/dev", LANDLOCK_ACCESS_FS_WRITE_FILE | (abi >= 3 ? kTruncate : 0));
  return ruleset;
}

// What a fresh /proc shows of the host that a command must not change or read, as container
// engines treat it: kernel settings and triggers read-only, kernel memory, keys and timers
// masked. "" or what failed.
std::string guardProc() {
  auto failed = [](const std::string& what) {
    return "cannot guard " + what + ": " + strerror(errno);
  };
  for (const char* path :
       {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs"}) {
    if (access(path, F_OK) != 0) continue;
    if (mount(path, path, nullptr, MS_BIND | MS_REC, nullptr) != 0 ||
        mount(nullptr, path, nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV,
              nullptr) != 0) {
      return failed(path);
    }
  }
  for (const char* path : {"/proc/kcore", "/proc/keys", "/proc/key-users", "/proc/timer_list",
                           "/proc/latency_stats", "/proc/sched_debug", "/proc/kallsyms",
                           "/proc/kpagecount", "/proc/kpageflags", "/proc/kpagecgroup"}) {
    if (access(path, F_OK) == 0 && mount("/dev/null", path, nullptr, MS_BIND, nullptr) != 0) {
      return failed(path);
    }
  }
  for (const char* path : {"/proc/acpi", "/proc/scsi", "/proc/asound"}) {
    if (access(path, F_OK) == 0 &&
        mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=0") !=
            0) {
      return failed(path);
    }
  }
  return "";
}

// Makes the mount at `dir` read-only, keeping the flags it has (a user namespace may not
// clear those its parent set).
bool remountReadOnly(const std::string& dir) {
  struct statvfs st;
  if (statvfs(dir.c_str(), &st) != 0) return false;
  unsigned long flags = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID;
  for (const auto& [has, keep] : {std::pair{ST_NODEV, MS_NODEV},
                                  {ST_NOEXEC, MS_NOEXEC},
                                  {ST_NOATIME, MS_NOATIME},
                                  {ST_NODIRATIME, MS_NODIRATIME},
                                  {ST_RELATIME, MS_RELATIME}}) {
    if (st.f_flag & has) flags |= keep;
  }
  return mount(nullptr, dir.c_str(), nullptr, flags, nullptr) == 0;
}

// Fresh /proc (for the new pid namespace) and /tmp; "" or what failed.
std::string mountFreshProcAndTmp(const std::vector<std::string>& writable,
                                 const std::vector<std::string>& readonly, bool guard_proc) {
  auto failed = [](const std::string& what) {
    return "cannot mount " + what + ": " + strerror(errno);
  };
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return failed("/ private");
  if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
    return failed("/proc");
  }
  if (guard_proc) {
    if (std::string error = guardProc(); !error.empty()) return error;
  }
  umount2(zygote::kHelperPath, MNT_DETACH);  // commands have no use for the server's binary
  // The device nodes are the host's, and a command's uid maps to their owner: read-only
  // mounts keep it from changing their modes (writing to them still works).
  for (const char* node :
       {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}) {
    if (mount(nullptr, node, nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID, nullptr) != 0 &&
        errno != ENOENT) {
      return failed(node);
    }
  }
  // A private /dev/shm (Python's multiprocessing wants one), then nothing else new in /dev.
  mkdir("/dev/shm", 01777);
  if (mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") != 0) {
    return failed("/dev/shm");
  }
  if (mount(nullptr, "/dev", nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV,
            nullptr) != 0) {
    return failed("/dev read-only");
  }
  // A fresh /tmp would hide workspace (and read-only) directories that live under /tmp: hold
  // them open and bind them again on top, the read-only ones read-only again.
  struct Held {
    std::string dir;
    int fd;
    bool readonly;
  };
  std::vector<Held> under_tmp;
  for (const auto* dirs : {&writable, &readonly}) {
    for (const std::string& dir : *dirs) {
      if (dir.rfind("/tmp/", 0) == 0) {
        under_tmp.push_back({dir, open(dir.c_str(), O_PATH | O_CLOEXEC), dirs == &readonly});
      }
    }
  }
  if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") != 0) {
    return failed("/tmp");
  }
  for (const auto& [dir, fd, ro] : under_tmp) {
    for (size_t slash = dir.find('/', 5); slash != std::string::npos;
         slash = dir.find('/', slash + 1)) {
      mkdir(dir.substr(0, slash).c_str(), 0755);
    }
    mkdir(dir.c_str(), 0755);
    const std::string source = "/proc/self/fd/" + std::to_string(fd);
    if (fd < 0 || mount(source.c_str(), dir.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0 ||
        (ro && !remountReadOnly(dir))) {
      return failed(dir);
    }
    close(fd);
  }
  return "";
}

// Changes the masks of a running namespace to those of the request on `sock` (a memfd in
// `fds`), with every other process of the namespace stopped meanwhile, and answers.
void changeMasks(int sock, NamespaceMasks& masks, const std::vector<int>& fds, bool enforce) {
  MaskList wanted;
  const nlohmann::json j = fds.size() == 1 ? readJson(fds[0]) : nlohmann::json();
  if (!j.is_object() || !parseMasks(j.value("masks", nlohmann::json::array()), wanted)) {
    zygote::sendMessage(sock, std::string(1, zygote::kError) + "a malformed mask request", {});
    return;
  }
  if (!enforce) wanted.clear();  // a test left the layer out
  kill(-1, SIGSTOP);
  const std::string error = masks.apply(wanted);
  kill(-1, SIGCONT);
  if (!error.empty()) {
    // What it may see is no longer what the rules say: it ends here.
    zygote::sendMessage(sock, std::string(1, zygote::kError) + error, {});
    kill(-1, SIGKILL);
    _exit(1);
  }
  zygote::sendMessage(sock, std::string(1, zygote::kMasksDone), {});
}

// Process 1 of a command's pid namespace, made ahead of need: mounts its /proc and /tmp, then
// waits for its command on `request`. It masks what the command may not see or change, starts
// the command, reaps whatever is orphaned, passes SIGTERM on to everything in the namespace
// and SIGINT to the command, ends the command's process group on SIGUSR1, changes the masks
// when asked (between a kernel's cells), and reports the command's wait status. It exits when
// the command has ended, or with `linger` (a kernel whose forks are sessions of their own),
// once nothing else is left either or the server has gone. Its exit ends every process left
// in the namespace.
[[noreturn]] void initMain(int request, const std::vector<std::string>& writable,
                           const std::vector<char>& bpf, const HelperOptions& options) {
  const std::string setup_error =
      mountFreshProcAndTmp(writable, options.readonly, options.guard_proc);
  const int landlock = setup_error.empty() && options.landlock ? landlockRuleset(writable) : -1;
  std::string payload;
  std::vector<int> fds;
  if (zygote::receiveMessage(request, payload, fds) <= 0 || fds.size() < 5) _exit(0);
  close(request);
  const int sock = fds[1];
  auto fail = [&](const std::string& why) {
    zygote::sendMessage(sock, std::string(1, zygote::kError) + why, {});
    _exit(1);
  };
  Spec spec;
  if (!readSpec(fds[0], spec) || spec.cgroups + 5 > fds.size()) fail("a malformed request");
  if (!setup_error.empty()) fail(setup_error);
  NamespaceMasks masks(writable);
  if (!options.masks) spec.masks.clear();  // a test left the layer out
  if (std::string error = masks.apply(spec.masks); !error.empty()) fail(error);
  // Groups of its own (a Python kernel's): joined here, before the command exists, so that
  // it and everything it starts are counted there.
  for (size_t i = fds.size() - spec.cgroups; i < fds.size(); ++i) {
    if (write(fds[i], "0", 1) != 1) fail(std::string("cannot join its cgroup: ") + strerror(errno));
  }
  struct sigaction sa {};
  sa.sa_handler = ignoreSignal;  // process 1 only receives signals it handles
  sigset_t waited;
  sigemptyset(&waited);
  for (int sig : {SIGTERM, SIGINT, SIGCHLD, SIGUSR1}) {
    sigaction(sig, &sa, nullptr);
    sigaddset(&waited, sig);
  }
  sigprocmask(SIG_BLOCK, &waited, nullptr);
  Command c{&spec, {}, {}, std::vector<int>(fds.begin() + 2, fds.end() - spec.cgroups), {}};
  for (const std::string& a : spec.argv) c.argv.push_back(const_cast<char*>(a.c_str()));
  for (const std::string& e : spec.env) c.envp.push_back(const_cast<char*>(e.c_str()));
  c.argv.push_back(nullptr);
  c.envp.push_back(nullptr);
  c.filter = {static_cast<unsigned short>(bpf.size() / sizeof(sock_filter)),
              reinterpret_cast<sock_filter*>(const_cast<char*>(bpf.data()))};
  c.landlock = landlock;
  c.setuid = options.setuid;
  const pid_t command = startCommand(c);
  if (command < 0) fail(std::string("cannot start the command: ") + strerror(errno));
  for (int fd : fds) {
    if (fd != sock) close(fd);
  }
  const int signals = signalfd(-1, &waited, SFD_CLOEXEC);
  if (signals < 0) {
    kill(-1, SIGKILL);
    fail(std::string("cannot wait for signals: ") + strerror(errno));
  }
  bool requests = true;  // the server may still send mask changes
  bool command_ended = false;
  while (true) {
    if (command_ended && !requests) {
      kill(-1, SIGKILL);  // the server has gone: what lingered goes with the namespace
      _exit(0);
    }
    pollfd watched[2] = {{signals, POLLIN, 0}, {sock, POLLIN, 0}};
    if (poll(watched, requests ? 2 : 1, -1) < 0) continue;
    if (requests && watched[1].revents != 0) {
      std::vector<int> got;
      const ssize_t n = zygote::receiveMessage(sock, payload, got);
      if (n > 0 && payload[0] == zygote::kMasks) {
        changeMasks(sock, masks, got, options.masks);
      } else if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        requests = false;  // the server has gone; the command goes on until it ends
      }
      for (int fd : got) close(fd);
    }
    if (!(watched[0].revents & POLLIN)) continue;
    signalfd_siginfo info;
    if (read(signals, &info, sizeof info) != sizeof info) continue;
    const int sig = static_cast<int>(info.ssi_signo);
    if (sig == SIGTERM) kill(-1, SIGTERM);
    if (sig == SIGINT && !command_ended) kill(command, SIGINT);
    if (sig == SIGUSR1 && !command_ended) {
      kill(-command, SIGKILL);
      kill(command, SIGKILL);
    }
    if (sig != SIGCHLD) continue;
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
      if (pid != command) continue;
      std::string message(1, zygote::kStatus);
      message.append(reinterpret_cast<const char*>(&status), sizeof status);
      zygote::sendMessage(sock, message, {});
      if (!spec.linger) _exit(0);
      command_ended = true;
    }
    if (command_ended && pid < 0 && errno == ECHILD) _exit(0);  // nothing left
  }
}

// A namespace init waiting for its command.
struct Spare {
  UniqueFd pidfd;
  UniqueFd request;  // where its command goes
};

Spare makeSpare(int control, const std::vector<std::string>& writable, const std::vector<char>& bpf,
                const HelperOptions& options) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return {};
  int pidfd = -1;
  CloneArgs args{};
  args.flags = CLONE_NEWPID | CLONE_NEWNS | CLONE_PIDFD;
  args.pidfd = reinterpret_cast<uint64_t>(&pidfd);
  args.exit_signal = SIGCHLD;
  const long pid = syscall(SYS_clone3, &args, sizeof args);
  if (pid == 0) {
    close(control);
    close(sv[0]);
    initMain(sv[1], writable, bpf, options);
  }
  close(sv[1]);
  Spare spare;
  spare.request.reset(sv[0]);
  if (pid < 0) return {};
  spare.pidfd.reset(pidfd);
  return spare;
}

int helperMain(int control, const std::vector<std::string>& writable,
               const HelperOptions& options) {
  // Nothing the server handed over but the control socket reaches a command.
  if (control > 3) close_range(3, control - 1, 0);
  close_range(control + 1, ~0U, 0);
  signal(SIGCHLD, SIG_IGN);  // the kernel reaps the namespace inits
  auto bpf = compileSeccompFilter(options.refuse_setid);
  if (!bpf.ok()) {
    fprintf(stderr, "%s\n", bpf.status().message().c_str());
    return 1;
  }
  if (options.proxy_port > 0) {
    // The proxy's door on the sandbox's own loopback: the server accepts on it, from outside.
    UniqueFd listener(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(static_cast<uint16_t>(options.proxy_port));
    if (!listener.valid() ||
        bind(listener.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        listen(listener.get(), 128) != 0 ||
        !zygote::sendMessage(control, std::string(1, zygote::kListener), {listener.get()})) {
      fprintf(stderr, "cannot listen for the proxy on 127.0.0.1:%d: %s\n", options.proxy_port,
              strerror(errno));
      return 1;
    }
  }
  std::string payload;
  std::vector<int> fds;
  Spare spare = makeSpare(control, writable, *bpf, options);
  // The old spare goes (its init exits) before the new one is cloned.
  auto renew = [&] {
    spare = Spare();
    spare = makeSpare(control, writable, *bpf, options);
  };
  while (true) {
    const ssize_t n = zygote::receiveMessage(control, payload, fds);
    if (n <= 0) return n == 0 ? 0 : 1;  // the server has gone
    std::vector<UniqueFd> received(fds.begin(), fds.end());
    if (payload[0] != zygote::kRun || fds.size() < 5) continue;
    // The spare takes the request; one that has died (the OOM killer may pick it) is
    // replaced once.
    bool taken = false;
    for (int attempt = 0; attempt < 2 && !taken; ++attempt) {
      if (!spare.request.valid() || attempt > 0) renew();
      taken = spare.request.valid() && zygote::sendMessage(spare.request.get(), payload, fds);
    }
    if (taken) {
      zygote::sendMessage(fds[1], std::string(1, zygote::kStarted), {spare.pidfd.get()});
    } else {
      zygote::sendMessage(
          fds[1], std::string(1, zygote::kError) + "cannot make its namespaces: " + strerror(errno),
          {});
    }
    // Closed before the next spare is cloned: it would hold the command's pipes open.
    received.clear();
    renew();
  }
}

}  // namespace

std::optional<int> runSandboxHelper(int argc, char** argv) {
  if (argc < 4 || strcmp(argv[1], zygote::kHelperFlag) != 0) return std::nullopt;
  HelperOptions options;
  for (const std::string& item : splitList(argv[3], ',')) {
    if (item == "setuid") options.setuid = true;
    if (item == "no-landlock") options.landlock = false;
    if (item == "no-seccomp-setid") options.refuse_setid = false;
    if (item == "no-proc") options.guard_proc = false;
    if (item == "no-masks") options.masks = false;
    if (item.starts_with("proxy=")) options.proxy_port = atoi(item.c_str() + 6);
  }
  // The writable directories, then kReadonlyFlag and the read-only ones.
  std::vector<std::string> writable(argv + 4, argv + argc);
  if (auto ro = std::find(writable.begin(), writable.end(), zygote::kReadonlyFlag);
      ro != writable.end()) {
    options.readonly.assign(ro + 1, writable.end());
    writable.erase(ro, writable.end());
  }
  return helperMain(atoi(argv[2]), writable, options);
}

}  // namespace byd
