#pragma once
// One run_python session: a CPython kernel (backends/python/kernel.py, embedded in the binary)
// running in the sandbox in pid and mount namespaces of its own, spoken to in framed JSON (4-byte
// big-endian length + JSON) over pipes. exec() interrupts a cell at its timeout with SIGINT and
// kills the kernel when that does not stop it within a second. Not thread-safe: one exec at a
// time (PythonSessions serializes per session).

#include <chrono>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "backends/local/sandbox.h"
#include "common/cancel.h"
#include "common/result.h"

namespace byd {

class PythonKernel {
 public:
  // Starts a kernel with `python` in `cwd` and waits (up to 10 s) for its ready message.
  static Result<std::unique_ptr<PythonKernel>> start(const Sandbox& sandbox,
                                                     const std::string& python,
                                                     const std::string& cwd);
  ~PythonKernel();

  struct Outcome {
    nlohmann::json reply;     // the kernel's result message
    bool timed_out = false;   // interrupted at the timeout (the session lives on)
    bool state_lost = false;  // the kernel had to be killed: its globals are gone
  };
  Result<Outcome> exec(const std::string& code, std::chrono::milliseconds timeout,
                       size_t max_output, const CancelToken& cancel);
  bool alive() const { return alive_; }

 private:
  PythonKernel() = default;
  Status send(const nlohmann::json& message);
  // The next frame, or DeadlineExceeded at `deadline`; drains the kernel's stderr meanwhile.
  Result<nlohmann::json> receive(std::chrono::steady_clock::time_point deadline,
                                 const CancelToken* cancel);
  void kill();

  Sandbox::Launched proc_;
  bool alive_ = true;
  uint64_t next_id_ = 1;
  std::string in_buf_;
};

}  // namespace byd
