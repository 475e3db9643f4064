#pragma once
// The command launcher of the sandbox. Starting bubblewrap costs about 10 ms, and joining
// cgroups more, on every command; so the sandbox is built once, around a small helper (this
// binary, started with kHelperFlag), and each command is a request to it. The helper clones
// the command into a fresh pid and mount namespace (its own /proc and /tmp), where it runs in
// a user namespace of its own with no capabilities, no_new_privs, the seccomp filter and the
// rlimits. The first process of that pid namespace waits for the command; when it ends, the
// kernel kills everything the command left behind.
//
// The protocol is SOCK_SEQPACKET messages whose first byte is a tag, with descriptors passed
// alongside:
//   server -> helper, control socket: kRun + [spec memfd, run socket, stdin, stdout, stderr,
//                                     and up to three more for descriptors 3, 4, 5]
//   helper -> server, run socket:     kStarted + [pidfd of the command's namespace init]
//                                     kStatus + the command's wait status (int), or
//                                     kError + text, when it could not start.
//   helper -> server, control socket: kListener + [a listening socket on the sandbox's
//                                     loopback], first, when the helper was asked for one
//   server -> init, run socket:       kMasks + [memfd of {"masks": [...]}]: change the masks
//                                     of a running process's namespace (a kernel's, between
//                                     cells); answered kMasksDone, or kError + text.

#include <sys/types.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/local/sandbox_cgroup.h"
#include "common/result.h"
#include "common/unique_fd.h"

namespace byd {

namespace zygote {
constexpr const char* kHelperFlag = "--sandbox-helper";
// In the helper's arguments, between the writable directories and the read-only ones.
constexpr const char* kReadonlyFlag = "--readonly";
constexpr const char* kHelperPath = "/run/backyard/sandbox-helper";
// Where a command's namespace keeps the placeholders its masks are made of (sandbox_masks.h).
constexpr const char* kMaskSource = "/run/backyard";
enum Tag : char {
  kRun = 'R',
  kStarted = 'P',
  kStatus = 'S',
  kError = 'E',
  kMasks = 'M',
  kMasksDone = 'D',
  kListener = 'L'
};

// One message, with up to eight descriptors; false when the peer has gone.
bool sendMessage(int sock, std::string_view payload, const std::vector<int>& fds);
// One message into `payload` and `fds` (received close-on-exec); 0 at end of stream, -1 on
// error, else the payload's size.
ssize_t receiveMessage(int sock, std::string& payload, std::vector<int>& fds);

// Writes `data` to the existing file `path` in one write(2) (/proc and cgroup files take
// their value whole). Async-signal-safe and allocation-free: usable between fork and exec.
bool writeSmallFile(const char* path, std::string_view data);
}  // namespace zygote

// For main() of every binary that may start a sandbox: when argv asks for the helper, runs it
// and returns its exit code.
std::optional<int> runSandboxHelper(int argc, char** argv);

// The server's end of one running helper. Thread-safe.
class ZygoteClient {
 public:
  ZygoteClient(pid_t pid, UniqueFd control, UniqueFd stderr_r, CgroupRun cgroup);
  // The helper's process (on this machine's pids): every command and kernel runs below it.
  pid_t pid() const { return pid_; }
  ~ZygoteClient();
  ZygoteClient(const ZygoteClient&) = delete;
  ZygoteClient& operator=(const ZygoteClient&) = delete;

  // False once the helper has gone (it exited, or a request found it unresponsive).
  bool alive() const;

  struct Run {
    UniqueFd pidfd;  // the command's namespace init: signal it to stop the command
    UniqueFd sock;   // readable when the command has ended (kStatus, or end of stream)
  };
  // Starts the command `spec` (JSON) with `fds` as its descriptors 0, 1, 2, ... (at most six).
  // On failure `lost` says whether the helper itself has gone (then a new one may be tried).
  Result<Run> start(const std::string& spec, const std::vector<int>& fds, bool& lost) const;

 private:
  std::string lastWords() const;

  const pid_t pid_;
  UniqueFd control_, stderr_r_, pidfd_;
  CgroupRun cgroup_;
  mutable std::mutex mu_;
  mutable bool lost_ = false;
};

}  // namespace byd
