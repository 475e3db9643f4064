#include "backends/local/python_kernel.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <future>
#include <mutex>
#include <system_error>

#include <spdlog/spdlog.h>

#include "backends/local/fork_rendezvous.h"

namespace byd {

extern const char kPythonKernelSource[];

namespace {

constexpr const char* kKernelPath = "/dev/fd/3";

void writeAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data += n;
    size -= n;
  }
}

// What the kernels of one sandbox share, a session's and its forks': the sandbox's namespaces,
// which last while any of them lives, and the masks in force there.
class SandboxFamily {
 public:
  SandboxFamily(const Sandbox& sandbox, Sandbox::Launched ns)
      : sandbox_(sandbox),
        ns_(std::move(ns)),
        masks_(std::make_shared<SharedMasks>([this](const FileMasks& masks) {
          if (!ns_.sock.valid()) return failedPrecondition("the kernel has ended");
          Status made = Sandbox::changeMasks(ns_, masks);
          // Half made, they hold for no one: the namespace ends, with every kernel in it.
          if (!made.ok()) Sandbox::signal(ns_, SIGKILL);
          return made;
        })) {}
  ~SandboxFamily() {
    Sandbox::signal(ns_, SIGKILL);
    ns_.close();
  }
  const Sandbox& sandbox() const { return sandbox_; }
  const Sandbox::Launched& ns() const { return ns_; }
  SharedMasks& masks() { return *masks_; }
  std::string forkDir() const {
    auto dir = ForkRendezvous::dir();
    if (!dir.ok()) return "";
    const auto& bound = sandbox_.readonlyDirs();
    return std::find(bound.begin(), bound.end(), *dir) != bound.end() ? *dir : "";
  }
  // Moving a process between cgroups takes milliseconds (a global lock of the kernel's), so a
  // fork moves into groups of its own beside its first cell. Until then it is in its parent's,
  // and ending them would take it along: a member ends its groups only once no move is due.
  std::future<CgroupRun> moveToOwnGroups(pid_t host_pid) {
    {
      std::lock_guard lock(moves_mu_);
      ++moving_;
    }
    auto moved = [this] {
      std::lock_guard lock(moves_mu_);
      if (--moving_ == 0) moves_done_.notify_all();
    };
    try {
      return std::async(std::launch::async, [this, host_pid, moved] {
        struct Done {
          std::function<void()> done;
          ~Done() { done(); }
        } done{moved};
        return sandbox_.cgroupFor(host_pid);
      });
    } catch (const std::system_error& e) {  // no thread to move it: it stays in its parent's
      moved();
      spdlog::warn("a forked kernel stays in its parent's cgroups: {}", e.what());
      return {};
    }
  }
  void waitForMoves() {
    std::unique_lock lock(moves_mu_);
    moves_done_.wait(lock, [this] { return moving_ == 0; });
  }

 private:
  const Sandbox& sandbox_;
  Sandbox::Launched ns_;
  std::shared_ptr<SharedMasks> masks_;  // launched with none
  std::mutex moves_mu_;
  std::condition_variable moves_done_;
  int moving_ = 0;
};

// A kernel of a sandbox's family: what a session's kernel and its forks do alike.
class SandboxMember : public KernelProcess {
 public:
  explicit SandboxMember(std::shared_ptr<SandboxFamily> family) : family_(std::move(family)) {}
  Result<SharedMasks::Hold> holdMasks(const FileMasks& masks, const CancelToken* cancel,
                                      SharedMasks::Deadline deadline) override {
    if (!family_) return failedPrecondition("the kernel has ended");
    return family_->masks().hold(masks, cancel, deadline);
  }
  std::string forkDir() const override { return family_ ? family_->forkDir() : ""; }
  Result<std::unique_ptr<KernelProcess>> adoptFork(UniqueFd conn, pid_t host_pid, int pid) override;

 protected:
  std::shared_ptr<SandboxFamily> family_;  // null once this kernel was killed
};

// A fork of a kernel of the sandbox: its process, moved into groups of its own, and the
// connection it made.
class ForkedSandboxKernel : public SandboxMember {
 public:
  ForkedSandboxKernel(std::shared_ptr<SandboxFamily> family, UniqueFd conn, pid_t host_pid)
      : SandboxMember(std::move(family)), conn_(std::move(conn)), host_pid_(host_pid) {
    pidfd_.reset(static_cast<int>(syscall(SYS_pidfd_open, host_pid, 0)));
    // What the fork starts before the move stays in its parent's groups, and in its own
    // process group, which kill() ends. Without a pidfd the fork is gone already, and its
    // number may be another's.
    if (pidfd_.valid()) cgroup_ = family_->moveToOwnGroups(host_pid);
  }
  ~ForkedSandboxKernel() override { kill(); }
  int stdinFd() const override { return conn_.get(); }
  int stdoutFd() const override { return conn_.get(); }
  int stderrFd() const override { return -1; }  // its stray output goes nowhere
  void interrupt() override {
    if (pidfd_.valid()) syscall(SYS_pidfd_send_signal, pidfd_.get(), SIGINT, nullptr, 0);
  }
  void kill() override {
    if (!family_) return;
    // Held open, the pidfd keeps the number from being reused: its group is still its own.
    if (pidfd_.valid()) {
      ::kill(-host_pid_, SIGKILL);
      syscall(SYS_pidfd_send_signal, pidfd_.get(), SIGKILL, nullptr, 0);
    }
    // What it started, in its groups, ends too; not the forks still moving out of them.
    family_->waitForMoves();
    if (cgroup_.valid()) cgroup_.get().reset();
    pidfd_.reset();
    conn_.reset();
    family_.reset();
  }

 private:
  UniqueFd conn_, pidfd_;
  pid_t host_pid_;
  std::future<CgroupRun> cgroup_;
};

// A kernel launched by the sandbox helper, in pid and mount namespaces of its own.
class SandboxKernel : public SandboxMember {
 public:
  SandboxKernel(const Sandbox& sandbox, Sandbox::Launched launched)
      : SandboxMember(nullptr),
        in_(std::move(launched.stdin_w)),
        out_(std::move(launched.stdout_r)),
        err_(std::move(launched.stderr_r)) {
    family_ = std::make_shared<SandboxFamily>(sandbox, std::move(launched));
  }
  ~SandboxKernel() override { kill(); }
  int stdinFd() const override { return in_.get(); }
  int stdoutFd() const override { return out_.get(); }
  int stderrFd() const override { return err_.get(); }
  void interrupt() override {
    if (family_) Sandbox::signal(family_->ns(), SIGINT);
  }
  void kill() override {
    if (!family_) return;
    // Its process group ends; its namespace with it, unless its forks live on there.
    Sandbox::signal(family_->ns(), SIGUSR1);
    family_.reset();
    in_.reset();
    out_.reset();
    err_.reset();
  }

 private:
  UniqueFd in_, out_, err_;
};

Result<std::unique_ptr<KernelProcess>> SandboxMember::adoptFork(UniqueFd conn, pid_t host_pid,
                                                                int /*pid*/) {
  if (!family_ || host_pid <= 0) return failedPrecondition("the fork cannot be told apart");
  return std::unique_ptr<KernelProcess>(
      std::make_unique<ForkedSandboxKernel>(family_, std::move(conn), host_pid));
}

// A kernel run as a plain process (--sandbox none or container): no namespaces, so no forks
// and no masks; SIGINT to it, and its process group and groups killed at the end.
class PlainKernel : public KernelProcess {
 public:
  explicit PlainKernel(Sandbox::Plain p) : p_(std::move(p)) {}
  ~PlainKernel() override { kill(); }
  int stdinFd() const override { return p_.stdin_w.get(); }
  int stdoutFd() const override { return p_.stdout_r.get(); }
  int stderrFd() const override { return p_.stderr_r.get(); }
  void interrupt() override {
    if (p_.pid > 0) ::kill(p_.pid, SIGINT);
  }
  void kill() override {
    if (p_.pid <= 0) return;
    ::kill(-p_.pid, SIGKILL);  // its session's group: what it started and did not move away
    p_.cgroup.killAll();       // and what did, where it has groups of its own
    waitpid(p_.pid, nullptr, 0);
    p_.cgroup.reset();
    p_.pid = -1;
    for (UniqueFd* fd : {&p_.stdin_w, &p_.stdout_r, &p_.stderr_r}) fd->reset();
  }

 private:
  Sandbox::Plain p_;
};

// The kernel's source as a descriptor, which the interpreter reads as its script.
Result<UniqueFd> kernelSource() {
  UniqueFd source(memfd_create("byd-kernel", MFD_CLOEXEC));
  if (!source.valid()) return internalError("cannot prepare a kernel");
  writeAll(source.get(), kPythonKernelSource, strlen(kPythonKernelSource));
  return source;
}

}  // namespace

Result<std::unique_ptr<PythonKernel>> PythonKernel::start(const Sandbox& sandbox,
                                                          const std::string& python,
                                                          const std::string& cwd,
                                                          const std::string& packages) {
  BYD_ASSIGN_OR_RETURN(UniqueFd source, kernelSource());
  RunRequest request;
  request.argv = {python, "-I", "-S", "-u", kKernelPath};
  request.cwd = cwd;
  request.env = {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8", "TERM=dumb"};
  if (!packages.empty()) request.env.push_back("BYD_PYTHON_PACKAGES=" + packages);
  if (!sandbox.isolated()) {
    // A plain process keeps its descriptors' numbers: the script is read from the source's.
    request.argv.back() = "/dev/fd/" + std::to_string(source.get());
    auto plain = sandbox.launchPlain(request, {source.get()});
    source.reset();
    if (!plain.ok()) return plain.status();
    return attach(std::make_unique<PlainKernel>(std::move(*plain)));
  }
  // The kernel's source goes in as descriptor 3.
  auto launched = sandbox.launch(request, {source.get()}, /*own_cgroup=*/true);
  source.reset();  // the kernel holds its own copy
  if (!launched.ok()) return launched.status();
  return attach(std::make_unique<SandboxKernel>(sandbox, std::move(*launched)));
}

Result<SharedMasks::Hold> PythonKernel::holdMasks(const FileMasks& masks, const CancelToken* cancel,
                                                  SharedMasks::Deadline deadline) {
  if (!alive_) return failedPrecondition("the Python kernel is gone");
  auto hold = proc_->holdMasks(masks, cancel, deadline);
  if (!hold.ok() && hold.status().code() != Code::kCancelled &&
      hold.status().code() != Code::kDeadlineExceeded) {
    kill();  // its masks are not known: it cannot run a cell
  }
  return hold;
}

Result<std::unique_ptr<PythonKernel>> PythonKernel::attach(std::unique_ptr<KernelProcess> process) {
  std::unique_ptr<PythonKernel> k(new PythonKernel());
  k->proc_ = std::move(process);
  for (int fd : {k->proc_->stdoutFd(), k->proc_->stderrFd()}) {
    if (fd >= 0) fcntl(fd, F_SETFL, O_NONBLOCK);
  }
  // A kernel that exits is seen at once (its stdout ends); one that lives is waited for, long
  // enough for a machine starting many sandboxes or containers at once.
  auto ready = k->receive(std::chrono::steady_clock::now() + std::chrono::seconds(60), nullptr);
  if (!ready.ok() && ready.status().code() == Code::kDeadlineExceeded) {
    return Status(Code::kDeadlineExceeded,
                  "the Python kernel did not start: it gave no sign of life within 60 s");
  }
  if (!ready.ok() || ready->value("type", "") != "ready") {
    return failedPrecondition("the Python kernel did not start (" +
                              (ready.ok() ? ready->dump() : ready.status().message()) + ")");
  }
  return k;
}

PythonKernel::~PythonKernel() {
  if (alive_) {
    send({{"type", "shutdown"}}).ok();
  }
  kill();
}

bool PythonKernel::exited() const {
  if (!alive_ || !proc_) return true;
  pollfd p = {proc_->stdoutFd(), POLLIN, 0};
  return poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR)) != 0;
}

void PythonKernel::kill() {
  if (proc_) proc_->kill();
  alive_ = false;
}

Status PythonKernel::send(const nlohmann::json& message) {
  const std::string body = message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  const uint32_t n = static_cast<uint32_t>(body.size());
  const char header[4] = {static_cast<char>(n >> 24), static_cast<char>(n >> 16),
                          static_cast<char>(n >> 8), static_cast<char>(n)};
  std::string frame(header, 4);
  frame += body;
  return writeNoSigpipe(proc_->stdinFd(), frame) ? okStatus()
                                                 : failedPrecondition("the Python kernel is gone");
}

Result<nlohmann::json> PythonKernel::receive(std::chrono::steady_clock::time_point deadline,
                                             const CancelToken* cancel) {
  char buf[1 << 16];
  while (true) {
    if (in_buf_.size() >= 4) {
      const auto* h = reinterpret_cast<const unsigned char*>(in_buf_.data());
      const size_t n = size_t{h[0]} << 24 | size_t{h[1]} << 16 | size_t{h[2]} << 8 | h[3];
      if (n > max_frame_) {
        violation_ = "the Python kernel announced a message of " + std::to_string(n) +
                     " bytes, more than its output limits allow (" + std::to_string(max_frame_) +
                     "): something in the session wrote to the kernel's channel";
        return internalError(violation_);
      }
      if (in_buf_.size() >= 4 + n) {
        auto doc = nlohmann::json::parse(std::string_view(in_buf_).substr(4, n), nullptr, false);
        in_buf_.erase(0, 4 + n);
        if (in_buf_.capacity() > (size_t{1} << 20) && in_buf_.size() < (size_t{1} << 16)) {
          in_buf_.shrink_to_fit();  // a large reply's buffer is not kept for the session's life
        }
        if (!doc.is_object()) {
          violation_ =
              "the Python kernel sent a malformed message: something in the session "
              "wrote to the kernel's channel";
          return internalError(violation_);
        }
        return doc;
      }
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return Status(Code::kDeadlineExceeded, "no answer in time");
    if (cancel && cancel->cancelled()) return cancelled("cancelled");
    const int wait_ms = static_cast<int>(std::min<int64_t>(
        50, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1));
    pollfd fds[2] = {{proc_->stdoutFd(), POLLIN, 0}, {proc_->stderrFd(), POLLIN, 0}};
    poll(fds, 2, wait_ms);
    if (fds[1].revents) {
      // The kernel's stderr carries only stray output and its own failures: log, never block.
      const ssize_t n = read(proc_->stderrFd(), buf, sizeof buf);
      if (n > 0) spdlog::debug("python kernel: {}", std::string_view(buf, n));
    }
    if (fds[0].revents) {
      const ssize_t n = read(proc_->stdoutFd(), buf, sizeof buf);
      if (n == 0) return failedPrecondition("the Python kernel exited");
      if (n > 0) in_buf_.append(buf, n);
    }
  }
}

Result<PythonKernel::Outcome> PythonKernel::exec(const std::string& code,
                                                 std::chrono::milliseconds timeout,
                                                 size_t max_output, const CancelToken& cancel) {
  return roundTrip({{"type", "exec"}, {"code", code}, {"max_output", max_output}}, timeout,
                   max_output, cancel);
}

Result<PythonKernel::Outcome> PythonKernel::runIsolated(const Isolated& run,
                                                        const CancelToken& cancel) {
  // The template ends the run at its timeout and answers; the server's own deadline, a little
  // later, is for a template that does not.
  BYD_ASSIGN_OR_RETURN(Outcome out,
                       roundTrip({{"type", "isolated"},
                                  {"code", run.code},
                                  {"stdin", run.stdin_data},
                                  {"max_output", run.max_output},
                                  {"timeout_ms", run.timeout.count()},
                                  {"memory", run.memory_bytes},
                                  {"sweep", true}},
                                 run.timeout + std::chrono::seconds(2), run.max_output, cancel));
  if (!out.state_lost) out.timed_out = out.reply.value("timed_out", false);
  return out;
}

Result<std::unique_ptr<PythonKernel>> PythonKernel::fork() {
  if (!alive_) return failedPrecondition("the Python kernel is gone");
  const std::string dir = proc_->forkDir();
  if (dir.empty()) return unimplemented("this session's kernel cannot fork");
  BYD_ASSIGN_OR_RETURN(ForkRendezvous::Waiting waiting, ForkRendezvous::open());
  max_frame_ = size_t{1} << 16;
  const uint64_t id = next_id_++;
  BYD_RETURN_IF_ERROR(send({{"type", "fork"}, {"id", id}, {"path", dir + "/" + waiting.name()}}));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int pid = 0;
  while (true) {
    auto reply = receive(deadline, nullptr);
    if (!reply.ok()) {
      kill();
      return failedPrecondition("the Python kernel did not fork (" + reply.status().message() +
                                "); the session was ended");
    }
    if (reply->value("id", nlohmann::json()) != id) continue;  // a stray message
    if (reply->value("type", "") == "error") {
      return failedPrecondition("the session cannot fork: " + reply->value("message", ""));
    }
    pid = reply->value("forked", 0);
    break;
  }
  auto peer = waiting.accept(std::chrono::seconds(10));
  if (!peer.ok()) {
    return failedPrecondition("the session's fork did not reach the server (" +
                              peer.status().message() + ")");
  }
  BYD_ASSIGN_OR_RETURN(std::unique_ptr<KernelProcess> process,
                       proc_->adoptFork(std::move(peer->conn), peer->pid, pid));
  return attach(std::move(process));
}

Result<std::vector<std::string>> PythonKernel::preload(const std::vector<std::string>& modules) {
  if (!alive_) return failedPrecondition("the Python kernel is gone");
  max_frame_ = size_t{1} << 20;
  BYD_RETURN_IF_ERROR(send({{"type", "preload"}, {"id", next_id_++}, {"modules", modules}}));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (true) {
    auto reply = receive(deadline, nullptr);
    if (!reply.ok()) {
      kill();
      return failedPrecondition("the Python kernel did not finish its imports (" +
                                reply.status().message() + ")");
    }
    if (reply->value("type", "") != "preloaded") continue;
    std::vector<std::string> failed;
    for (const auto& f : reply->value("failed", nlohmann::json::array())) {
      if (f.is_string()) failed.push_back(f.get<std::string>());
    }
    return failed;
  }
}

Result<PythonKernel::Outcome> PythonKernel::roundTrip(nlohmann::json request,
                                                      std::chrono::milliseconds timeout,
                                                      size_t max_output,
                                                      const CancelToken& cancel) {
  if (!alive_) return failedPrecondition("the Python kernel is gone");
  // Four texts of at most max_output bytes (stdout, stderr, result, error), each up to six
  // times longer once JSON-escaped, the figures, and room for the rest.
  constexpr size_t kImageBudget = 8 << 20;  // kernel.py's IMAGE_BUDGET
  max_frame_ = std::min<size_t>(24 * max_output + kImageBudget + (size_t{1} << 16), 0xFFFFFFFFu);
  const uint64_t id = next_id_++;
  request["id"] = id;
  BYD_RETURN_IF_ERROR(send(request));
  Outcome out;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  bool interrupted = false;
  while (true) {
    auto reply = receive(deadline, interrupted ? nullptr : &cancel);
    if (reply.ok()) {
      if (reply->value("type", "") == "result" && reply->value("id", uint64_t{0}) == id) {
        out.reply = std::move(*reply);
        return out;
      }
      continue;  // a stray message (an old pong): skip it
    }
    if (!violation_.empty()) {
      // Whatever wrote it may write more: the kernel and its state go, with a clear error.
      spdlog::warn("python kernel ended: {}", violation_);
      kill();
      return failedPrecondition(violation_ + "; the session was ended and its state is lost");
    }
    const Code code_ = reply.status().code();
    if ((code_ == Code::kDeadlineExceeded || code_ == Code::kCancelled) && !interrupted) {
      // First the gentle way: KeyboardInterrupt in the cell, the session survives.
      out.timed_out = code_ == Code::kDeadlineExceeded;
      proc_->interrupt();
      interrupted = true;
      deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
      if (code_ == Code::kCancelled) out.timed_out = false;
      continue;
    }
    // No answer even to SIGINT, or the kernel died: it is gone, and its state with it.
    spdlog::warn("python kernel lost: {}", reply.status().message());
    kill();
    out.state_lost = true;
    out.reply = nlohmann::json::object();
    if (cancel.cancelled()) return cancelled("cancelled");
    return out;
  }
}

}  // namespace byd
