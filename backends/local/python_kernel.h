#pragma once
// One run_python session: a CPython kernel (backends/python/kernel.py, embedded in the binary)
// running in the sandbox in pid and mount namespaces of its own, spoken to in framed JSON (4-byte
// big-endian length + JSON) over pipes. exec() interrupts a cell at its timeout with SIGINT and
// kills the kernel when that does not stop it within a second. Not thread-safe: one exec at a
// time (PythonSessions serializes per session).

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/local/sandbox.h"
#include "backends/local/shared_masks.h"
#include "common/cancel.h"
#include "common/result.h"

namespace byd {

// The process a kernel runs as, wherever that is (the Local sandbox, a container): the pipes
// to speak to it and the signals it takes.
class KernelProcess {
 public:
  virtual ~KernelProcess() = default;
  virtual int stdinFd() const = 0;   // frames to the kernel
  virtual int stdoutFd() const = 0;  // frames from it
  virtual int stderrFd() const = 0;  // its stray output
  virtual void interrupt() = 0;      // SIGINT to the kernel: KeyboardInterrupt in the cell
  virtual void kill() = 0;           // ends the kernel and everything it started
  // Makes what the kernel sees of the workspace `masks` (see workspace_index.h) for a cell,
  // and keeps it so while the hold lives (kernels sharing a namespace share its masks: see
  // shared_masks.h). Where nothing can be masked, any mask is an error.
  virtual Result<SharedMasks::Hold> holdMasks(const FileMasks& masks, const CancelToken* cancel,
                                              SharedMasks::Deadline deadline) {
    (void)cancel;
    (void)deadline;
    if (!masks.empty()) return unimplemented("this kernel's files cannot be masked");
    return SharedMasks::Hold();
  }
  // Forks (PythonKernel::fork): where the server's rendezvous directory (fork_rendezvous.h)
  // is, as the kernel sees it ("": this kernel cannot fork), and the process of a fork that
  // connected on `conn`: `host_pid` as the server sees it (0: unknown), `pid` as its sandbox
  // does. A fork lives in its parent's sandbox or container, which lasts while any of them does.
  virtual std::string forkDir() const { return ""; }
  virtual Result<std::unique_ptr<KernelProcess>> adoptFork(UniqueFd conn, pid_t host_pid, int pid) {
    (void)conn, (void)host_pid, (void)pid;
    return unimplemented("this kernel cannot fork");
  }
};

class PythonKernel {
 public:
  // Starts a kernel with `python` in `cwd` of the sandbox and waits (up to 10 s) for its ready
  // message. `packages`: the directory of packages installed on demand ("": none).
  static Result<std::unique_ptr<PythonKernel>> start(const Sandbox& sandbox,
                                                     const std::string& python,
                                                     const std::string& cwd,
                                                     const std::string& packages = "");
  // Speaks to a kernel already started as `process`; waits for its ready message.
  static Result<std::unique_ptr<PythonKernel>> attach(std::unique_ptr<KernelProcess> process);
  ~PythonKernel();

  struct Outcome {
    nlohmann::json reply;     // the kernel's result message
    bool timed_out = false;   // interrupted at the timeout (the session lives on)
    bool state_lost = false;  // the kernel had to be killed: its globals are gone
  };
  Result<Outcome> exec(const std::string& code, std::chrono::milliseconds timeout,
                       size_t max_output, const CancelToken& cancel);
  // An isolated run in a fork of this kernel, a template (see backends/python/README.md):
  // nothing of the run stays in the template, its sandbox or any later run.
  struct Isolated {
    std::string code, stdin_data;
    std::chrono::milliseconds timeout{30000};
    size_t max_output = 100 * 1024;
    uint64_t memory_bytes = 0;  // the run's address space (0: the sandbox's limits alone)
  };
  Result<Outcome> runIsolated(const Isolated& run, const CancelToken& cancel);
  // A new session whose state is a copy of this one's (see backends/python/README.md): the
  // kernel forks in its sandbox and the fork serves on a channel of its own. This kernel must
  // be idle.
  Result<std::unique_ptr<PythonKernel>> fork();
  // Imports `modules` into this kernel (a template); the ones that failed, with why.
  Result<std::vector<std::string>> preload(const std::vector<std::string>& modules);
  // See KernelProcess::holdMasks (which knows what is in force: the same masks cost nothing).
  // An error other than a cancelled wait ends the kernel.
  Result<SharedMasks::Hold> holdMasks(const FileMasks& masks, const CancelToken* cancel,
                                      SharedMasks::Deadline deadline);
  bool alive() const { return alive_; }
  // The kernel's process has gone (its output pipe hung up), without being asked: a spare
  // that died while it waited.
  bool exited() const;

 private:
  PythonKernel() = default;
  Status send(const nlohmann::json& message);
  // Sends `request` (given an id here) and waits for its result, interrupting the kernel at
  // `timeout` (or on cancel) and killing it if that brings no answer within a second.
  Result<Outcome> roundTrip(nlohmann::json request, std::chrono::milliseconds timeout,
                            size_t max_output, const CancelToken& cancel);
  // The next frame, or DeadlineExceeded at `deadline`; drains the kernel's stderr meanwhile.
  Result<nlohmann::json> receive(std::chrono::steady_clock::time_point deadline,
                                 const CancelToken* cancel);
  void kill();

  std::unique_ptr<KernelProcess> proc_;
  // The largest frame accepted now (cell code can write to the kernel's channel: a larger
  // header ends the session rather than growing the buffer), and why the kernel broke its
  // protocol, once it has.
  size_t max_frame_ = size_t{1} << 20;
  std::string violation_;
  bool alive_ = true;
  uint64_t next_id_ = 1;
  std::string in_buf_;
};

}  // namespace byd
