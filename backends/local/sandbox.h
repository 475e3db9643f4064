#pragma once
// The sandbox every command and Python kernel of the Local backend runs in: bubblewrap with new
// user, mount, pid, net, ipc and uts namespaces (only the workspace writable, the system
// read-only, a private /tmp, a fresh /proc, a minimal /dev, loopback only), no capabilities,
// no_new_privs, a seccomp filter, rlimits, and a pids/memory cgroup where the server may make
// one. Commands go through one long-lived sandbox and its helper (sandbox_zygote.h), which
// gives each its own pid and mount namespaces in about a millisecond; Python kernels get a
// bubblewrap of their own. run() drains the pipes to the end, kills the whole process tree on
// timeout or cancellation, and never blocks on a full pipe. Thread-safe.

#include <sys/resource.h>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backends/backend.h"
#include "backends/local/file_masks.h"
#include "backends/local/sandbox_cgroup.h"
#include "backends/local/sandbox_identity.h"
#include "backends/local/sandbox_zygote.h"
#include "common/cancel.h"
#include "common/result.h"
#include "common/unique_fd.h"

namespace byd {

struct SandboxLimits {
  uint64_t memory_bytes = uint64_t{1} << 30;
  uint64_t processes = 256;
  uint64_t file_size_bytes = uint64_t{1} << 30;
  uint64_t open_files = 1024;
  uint64_t cpu_seconds = 0;  // 0: only the wall-clock timeout
};

struct SandboxOptions {
  bool isolate = true;  // false is --sandbox none or container: plain processes, rlimits only
  // With isolate false: --sandbox container, where the container or pod this server runs in is
  // the boundary (said in the layers and messages; the processes are the same).
  bool container = false;
  std::string bwrap = "/usr/bin/bwrap";
  SandboxLimits limits;
  std::string user;  // --sandbox-user: who a root server's commands are ("": the default)
  // Non-zero: the sandbox's only way out is the server's proxy, reached on 127.0.0.1 of this
  // port inside (its listener is handed to setProxyListener's callback), and every command
  // and kernel is told so by the usual proxy variables.
  uint16_t proxy_port = 0;
  // Directories bound read-only at their own paths, after the workspace (the packages
  // installed on demand: see package_installer.h).
  std::vector<std::string> readonly;
  // Tests only: layers left out, so that a test can show each one holds on its own. Any of
  // "landlock", "seccomp-setid" (the setuid/setgid refusals), "proc" (the read-only and masked
  // parts of /proc), "uid" (a root server's commands keep its uid) and "masks" (the file
  // rules' masks of the workspace).
  std::vector<std::string> without;
};

struct RunRequest {
  std::vector<std::string> argv;
  std::string cwd;               // absolute, inside a writable directory
  std::vector<std::string> env;  // "NAME=value"; the whole environment
  std::string stdin_data;
  std::chrono::milliseconds timeout{120000};
  size_t max_output = 100 * 1024;  // per stream
  // Called at most about once a second with the latest complete output line.
  std::function<void(std::string_view line)> on_progress;
  // What is masked in its view of the workspace (null: nothing).
  std::shared_ptr<const FileMasks> masks;
};

using RunResult = ExecResult;

// Writes all of `data` to a pipe; false when the reader has gone. Never raises SIGPIPE, which
// would end a process that has not ignored it.
bool writeNoSigpipe(int fd, std::string_view data);
// One write(2) of as much of `data` as the pipe takes, SIGPIPE-free; -1 with errno on error.
ssize_t writeSomeNoSigpipe(int fd, std::string_view data);

// A process's standard streams: a pipe for stdin (or /dev/null, whose read end is `in.read`),
// and pipes for stdout and stderr.
struct StdioPipes {
  PipeFds in, out, err;
};
Result<StdioPipes> makeStdioPipes(bool stdin_pipe);

class Sandbox {
 public:
  // A sandbox for `writable`, the workspace directories (bound read-write at their own
  // paths). Only what costs nothing is checked here (bubblewrap is installed); the rest is
  // prepared by the first verify().
  static Result<std::unique_ptr<Sandbox>> create(std::vector<std::string> writable,
                                                 SandboxOptions options);
  ~Sandbox();

  // Once (later calls return the first answer): prepares the sandbox (who its commands are,
  // cgroups, what the kernel offers) and runs a sandboxed `exit 0`. OK, or why the sandbox
  // cannot run. run() and launch() wait for it, so that a server's start does not.
  Status verify() const;
  // One line for the start-up log: the layers in force (after verify()).
  const std::string& layers() const { return prepared_.layers; }
  bool isolated() const { return options_.isolate; }
  const std::vector<std::string>& readonlyDirs() const { return options_.readonly; }
  uint16_t proxyPort() const { return options_.isolate ? options_.proxy_port : 0; }
  // Who sandboxed processes are on the host (see sandbox_identity.h; after verify()).
  const SandboxIdentity& identity() const { return prepared_.identity; }

  Result<RunResult> run(const RunRequest& request, const CancelToken& cancel) const;

  // A long-lived process in the sandbox (a Python kernel), with pipes for its standard
  // streams. close() releases the descriptors and its cgroups.
  struct Launched {
    UniqueFd pidfd;  // its namespace's init: see signal()
    UniqueFd sock;   // readable once it has ended
    UniqueFd stdin_w, stdout_r, stderr_r;
    CgroupRun cgroup;  // groups of its own, when launched with them
    void close();
  };
  // Starts `request` (its stdin_data, timeout and output cap do not apply) with `extra_fds` as
  // its descriptors 3, 4, ... (at most three). With `own_cgroup`, the process gets pids and
  // memory groups of its own instead of sharing the sandbox's: one runaway session cannot
  // starve the others (joining costs milliseconds, which a spare kernel's start can afford).
  Result<Launched> launch(const RunRequest& request, const std::vector<int>& extra_fds,
                          bool own_cgroup) const;
  // Not isolated (--sandbox none or container): a long-lived plain process (a Python kernel)
  // in a session of its own, with the rlimits commands get and groups of its own; `inherit`
  // stay open across exec under their numbers. SIGINT to `pid` reaches it alone (the caller's
  // child: its pid stays its own until the caller reaps it); killing its process group and its
  // groups ends what it started.
  struct Plain {
    pid_t pid = -1;
    UniqueFd stdin_w, stdout_r, stderr_r;
    CgroupRun cgroup;
  };
  Result<Plain> launchPlain(const RunRequest& request, const std::vector<int>& inherit) const;
  // What runs processes when nothing isolates them, for messages: "--sandbox none" or
  // "--sandbox container".
  std::string_view plainMode() const {
    return options_.container ? "--sandbox container" : "--sandbox none";
  }
  // SIGINT goes to the launched process alone, SIGUSR1 kills its process group (the
  // namespace lives on while other processes, a kernel's forks, remain), SIGTERM goes to every
  // process of its namespace, SIGKILL ends the namespace.
  static void signal(const Launched& process, int sig);
  // Groups of their own (as launch's `own_cgroup` gives) for `pid`, a process already in the
  // sandbox (a kernel's fork), moved into them; none where the server makes none.
  CgroupRun cgroupFor(pid_t pid) const;
  // Where the listening socket of each helper goes (one per helper: a new helper, a new
  // network namespace). Before the first command.
  void setProxyListener(std::function<void(UniqueFd)> take) { proxy_listener_ = std::move(take); }
  // Makes the masks of a launched process's namespace `masks` (its processes are stopped
  // while they change). An error ends the process: what it could see would not be what the
  // rules say.
  static Status changeMasks(const Launched& process, const FileMasks& masks);

 private:
  Sandbox(std::vector<std::string> writable, SandboxOptions options);
  // A process started with fork and exec, with its pipes.
  struct Started {
    pid_t pid = -1;
    UniqueFd stdin_w, stdout_r, stderr_r;
    CgroupRun cgroup;
  };
  // Isolated: the helper (request.argv is its command line) in bubblewrap. Otherwise the
  // plain process of --sandbox none. `inherit` are kept open across exec.
  Result<Started> spawn(const RunRequest& request, const std::vector<int>& inherit,
                        bool stdin_pipe) const;
  std::vector<std::string> helperArgs(const RunRequest& request) const;
  Result<RunResult> runUnchecked(const RunRequest& request, const CancelToken& cancel) const;
  // `linger`: the namespace lives on after the command while other processes remain in it
  // (see signal()).
  Result<Launched> launchUnchecked(const RunRequest& request, const std::vector<int>& extra_fds,
                                   bool stdin_pipe, bool own_cgroup, bool linger = false) const;
  // The running helper, started (again) when there is none.
  Result<std::shared_ptr<ZygoteClient>> helper() const;

 public:
  // What the helper and everything below it (commands, kernels) use now; none before the
  // helper has started. The memory ceiling is each run's (--sandbox-memory).
  std::optional<ResourceUse> resourceUse() const;

 private:
  std::vector<std::pair<int, rlim_t>> rlimits() const;
  Status prepare() const;

  const std::vector<std::string> writable_;
  const SandboxOptions options_;

  bool without(std::string_view layer) const;

  // What prepare() finds: written once, by the first verify(), and read only after it.
  struct Prepared {
    SandboxIdentity identity;            // who commands are on the host
    std::unique_ptr<CgroupSet> cgroups;  // null until prepare() has probed them
    UniqueFd exe_fd;                     // this binary, bound into the sandbox as the helper
    std::string layers;
    bool done = false;  // prepare() has run
  };
  mutable Prepared prepared_;
  std::function<void(UniqueFd)> proxy_listener_;
  mutable std::mutex helper_mu_;
  mutable std::shared_ptr<ZygoteClient> helper_;
  mutable std::mutex verify_mu_;
  mutable std::optional<Status> verified_;  // set once the probe has an answer
};

}  // namespace byd
