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
#include "backends/local/sandbox_cgroup.h"
#include "backends/local/sandbox_zygote.h"
#include "common/cancel.h"
#include "common/result.h"

namespace byd {

struct SandboxLimits {
  uint64_t memory_bytes = uint64_t{1} << 30;
  uint64_t processes = 256;
  uint64_t file_size_bytes = uint64_t{1} << 30;
  uint64_t open_files = 1024;
  uint64_t cpu_seconds = 0;  // 0: only the wall-clock timeout
};

struct SandboxOptions {
  bool isolate = true;  // false is --sandbox none: plain processes, rlimits only
  std::string bwrap = "/usr/bin/bwrap";
  SandboxLimits limits;
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
};

using RunResult = ExecResult;

// Writes all of `data` to a pipe; false when the reader has gone. Never raises SIGPIPE, which
// would end a process that has not ignored it.
bool writeNoSigpipe(int fd, std::string_view data);
// One write(2) of as much of `data` as the pipe takes, SIGPIPE-free; -1 with errno on error.
ssize_t writeSomeNoSigpipe(int fd, std::string_view data);

class Sandbox {
 public:
  // Probes what the kernel allows (a sandboxed `true` must run) and prepares the filter.
  // `writable` are the workspace directories, bound read-write at their own paths.
  static Result<std::unique_ptr<Sandbox>> create(std::vector<std::string> writable,
                                                 SandboxOptions options);
  ~Sandbox();

  // Runs a sandboxed `exit 0` once (later calls return the first answer): OK, or why the
  // kernel refuses the sandbox. run() and start() wait for it.
  Status verify() const;
  // One line for the start-up log: the layers in force.
  const std::string& layers() const { return layers_; }
  bool isolated() const { return options_.isolate; }

  Result<RunResult> run(const RunRequest& request, const CancelToken& cancel) const;

  // What a long-lived process (a Python kernel) adds to the launcher.
  struct LaunchExtras {
    std::vector<std::string> args;  // more bwrap arguments, e.g. --ro-bind-data FD DEST
    std::vector<int> fds;           // descriptors those arguments name (kept across exec)
    // --die-with-parent ties the sandbox to the *thread* that forked it. A kernel started from
    // a short-lived thread must not use it; it ends instead when its stdin closes.
    bool die_with_parent = true;
    // The sandbox helper (sandbox_zygote.h): this binary, bound in; in a user namespace made
    // before bwrap starts, so that it keeps CAP_SYS_ADMIN over the sandbox's namespaces to
    // make the commands' own; no seccomp filter and no rlimits, which it gives each command.
    bool helper = false;
  };
  // A started process with its pipes; the caller owns them and the cgroup.
  struct Started {
    pid_t pid = -1;  // the launcher
    int stdin_w = -1, stdout_r = -1, stderr_r = -1;
    CgroupRun cgroup;
  };
  Result<Started> start(const RunRequest& request, const LaunchExtras& extras,
                        bool stdin_pipe) const;

 private:
  Sandbox(std::vector<std::string> writable, SandboxOptions options);
  std::vector<std::string> launcherArgs(const RunRequest& request, int seccomp_fd,
                                        const LaunchExtras& extras) const;
  Result<RunResult> runUnchecked(const RunRequest& request, const CancelToken& cancel) const;
  Result<Started> startUnchecked(const RunRequest& request, const LaunchExtras& extras,
                                 bool stdin_pipe) const;
  Result<RunResult> runInHelper(const RunRequest& request, const CancelToken& cancel) const;
  // The running helper, started (again) when there is none.
  Result<std::shared_ptr<ZygoteClient>> helper() const;
  std::vector<std::pair<int, rlim_t>> rlimits() const;
  Status prepare();

  const std::vector<std::string> writable_;
  const SandboxOptions options_;
  std::string layers_;
  std::vector<char> seccomp_bpf_;       // the compiled filter, copied into a memfd per run
  std::unique_ptr<CgroupSet> cgroups_;  // null until prepare() has probed them
  int exe_fd_ = -1;                     // this binary, bound into the sandbox as the helper
  mutable std::mutex helper_mu_;
  mutable std::shared_ptr<ZygoteClient> helper_;
  mutable std::once_flag verified_once_;
  mutable Status verified_;
};

}  // namespace byd
