#pragma once
// The run_python sessions of one client connection: named kernels (at most `max_sessions`),
// each used by one call at a time, stopped after `idle` without use, and one spare kernel
// started ahead of need so a new session does not wait for Python to boot: from the start when
// warm() asks for it (stdio), else once the connection has needed a second kernel (an HTTP
// server's many connections mostly run one session each, and pay for one kernel). Thread-safe.

#include <chrono>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/local/python_kernel.h"

namespace byd {

struct PythonOptions {
  std::string python = "/usr/bin/python3";
  size_t max_sessions = 8;
  std::chrono::seconds idle{30 * 60};
  // Packages on demand (package_installer.h): where from, and where to ("" until the server
  // has chosen; none when installs are off).
  std::string package_index = "https://pypi.org/simple";
  std::string packages_dir;
  // New sessions are forks of one kernel kept for that (it runs no cell): a fork, not an
  // interpreter's start, and each in cgroups of its own. They then share its sandbox's /tmp
  // and pid namespace, and take turns where their cells' file masks differ (shared_masks.h).
  // Off (the default): each session is a kernel in a sandbox of its own, from the spare.
  bool fork_sessions = false;
  // What a template kernel of isolated runs imports before its first run (comma-separated).
  std::string preload =
      "json,re,math,random,collections,itertools,functools,operator,string,datetime,decimal,"
      "fractions,statistics,heapq,bisect,copy,dataclasses,typing,enum";
};

class PythonSessions {
 public:
  // `start` starts one kernel (in the sandbox, in a container); `start_template`, where given,
  // the template of new sessions (PythonOptions::fork_sessions; else a spare is).
  using Starter = std::function<Result<std::unique_ptr<PythonKernel>>()>;
  PythonSessions(Starter start, PythonOptions options, Starter start_template = nullptr);
  PythonSessions(const Sandbox& sandbox, std::string cwd, PythonOptions options);
  ~PythonSessions();

  struct Run {
    PythonKernel::Outcome outcome;
    bool new_session = false;  // this call started the session (or restarted it)
    bool revived = false;      // its kernel had died since the last call (state gone)
    std::string forked_from;   // the session this call forked it from
  };
  // `masks`: the workspace as the cell may see it, set in the kernel's namespace before the
  // cell runs (null: left as it is).
  Result<Run> run(const std::string& session, const std::string& code, bool reset,
                  std::chrono::milliseconds timeout, size_t max_output, const CancelToken& cancel,
                  std::shared_ptr<const FileMasks> masks = nullptr);
  // Starts session `name` as a fork of session `from`: a copy of its state now, in its
  // sandbox (see PythonKernel::fork). A session of that name is replaced. A cell running in
  // `from` is waited for, up to `wait`; then the fork is refused.
  Status fork(const std::string& from, const std::string& name, std::chrono::milliseconds wait);
  // Runs code isolated: in a fork of an idle template kernel (one per concurrent run, kept
  // for the next), which sees and leaves nothing of any session or other run.
  Result<Run> runIsolated(const PythonKernel::Isolated& run, const CancelToken& cancel,
                          std::shared_ptr<const FileMasks> masks = nullptr);
  // Starts the spare kernel now, unless one is already there or starting. Without this, the
  // first session starts the first spare (HTTP: many sessions, most idle, none should cost a
  // kernel); stdio calls it once the server has answered its first message. `ahead`: a spare
  // is kept ahead from then on; false: this one only, later ones as without warm() (a session
  // made ahead, which may never need a second kernel).
  void warm(bool ahead = true);

 private:
  struct Session {
    std::timed_mutex busy;  // one exec at a time
    std::unique_ptr<PythonKernel> kernel;
    std::chrono::steady_clock::time_point last_used;
  };
  // The spare, or a kernel started now when there is none or it died while it waited; starts
  // the next spare when the connection keeps one ahead.
  Result<std::unique_ptr<PythonKernel>> spareOrStart();
  // A kernel for a new session: a fork of the sessions' template (fork_sessions), else the
  // spare's.
  Result<std::unique_ptr<PythonKernel>> newSessionKernel();
  // An idle template, or a new one (a spare, with the preload imported).
  Result<std::unique_ptr<PythonKernel>> takeTemplate();
  void startSpare();
  void reapIdle();
  // The session of that name, made when there is none and the limit allows (mu_ held).
  Result<std::shared_ptr<Session>> named(const std::string& name);

  const Starter start_, start_template_;
  const PythonOptions options_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Session>> sessions_;
  std::future<Result<std::unique_ptr<PythonKernel>>> spare_;
  bool ahead_ = false;        // a spare is kept ahead (warm(), or a second kernel was needed)
  size_t kernels_taken_ = 0;  // kernels this connection's sessions have taken
  std::vector<std::unique_ptr<PythonKernel>> templates_;  // idle ones
  std::mutex sessions_template_mu_;                       // one fork of it at a time
  std::unique_ptr<PythonKernel> sessions_template_;
  bool sessions_unforkable_ = false;  // its kernels cannot fork: new sessions start as spares
};

// Runs `request` in `sessions`: in its session, or isolated.
Result<PythonSessions::Run> runPythonIn(PythonSessions& sessions, const PythonRequest& request,
                                        const CancelToken& cancel,
                                        std::shared_ptr<const FileMasks> masks);

// The tool-facing result of one run: output, value, error, images and what became of the kernel.
PythonResult pythonResult(const PythonSessions::Run& run);

}  // namespace byd
