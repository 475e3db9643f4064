#pragma once
// The sandbox every command and Python kernel of the Local backend runs in: bubblewrap with new
// user, mount, pid, net, ipc and uts namespaces (only the workspace writable, the system
// read-only, a private /tmp, a fresh /proc, a minimal /dev, loopback only), no capabilities,
// no_new_privs, a seccomp filter, rlimits, and a pids/memory cgroup where the server may make
// one. run() drains the pipes to the end, kills the whole process tree on timeout or
// cancellation, and never blocks on a full pipe. Thread-safe: runs share nothing mutable.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backends/backend.h"
#include "common/cancel.h"
#include "common/result.h"

namespace byd {

class CgroupSet;

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

class Sandbox {
 public:
  // Probes what the kernel allows (a sandboxed `true` must run) and prepares the filter.
  // `writable` are the workspace directories, bound read-write at their own paths.
  static Result<std::unique_ptr<Sandbox>> create(std::vector<std::string> writable,
                                                 SandboxOptions options);
  ~Sandbox();

  // One line for the start-up log: the layers in force.
  const std::string& layers() const { return layers_; }
  bool isolated() const { return options_.isolate; }

  Result<RunResult> run(const RunRequest& request, const CancelToken& cancel) const;

 private:
  Sandbox(std::vector<std::string> writable, SandboxOptions options);
  std::vector<std::string> launcherArgs(const RunRequest& request, int seccomp_fd) const;
  Status prepare();

  const std::vector<std::string> writable_;
  const SandboxOptions options_;
  std::string layers_;
  std::vector<char> seccomp_bpf_;       // the compiled filter, copied into a memfd per run
  std::unique_ptr<CgroupSet> cgroups_;  // null until prepare() has probed them
};

}  // namespace byd
