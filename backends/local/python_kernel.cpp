#include "backends/local/python_kernel.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include <spdlog/spdlog.h>

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

// A kernel launched by the sandbox helper, in pid and mount namespaces of its own.
class SandboxKernel : public KernelProcess {
 public:
  explicit SandboxKernel(Sandbox::Launched launched) : proc_(std::move(launched)) {}
  ~SandboxKernel() override { kill(); }
  int stdinFd() const override { return proc_.stdin_w.get(); }
  int stdoutFd() const override { return proc_.stdout_r.get(); }
  int stderrFd() const override { return proc_.stderr_r.get(); }
  void interrupt() override {
    if (proc_.pidfd.valid()) Sandbox::signal(proc_, SIGINT);
  }
  void kill() override {
    if (proc_.pidfd.valid()) Sandbox::signal(proc_, SIGKILL);  // ends its whole namespace
    proc_.close();
  }
  Status setMasks(const FileMasks& masks) override {
    if (!proc_.sock.valid()) return failedPrecondition("the kernel has ended");
    return Sandbox::changeMasks(proc_, masks);
  }

 private:
  Sandbox::Launched proc_;
};

}  // namespace

Result<std::unique_ptr<PythonKernel>> PythonKernel::start(const Sandbox& sandbox,
                                                          const std::string& python,
                                                          const std::string& cwd,
                                                          const std::string& packages) {
  if (!sandbox.isolated()) {
    return failedPrecondition("run_python needs the sandbox (it is off: --sandbox none)");
  }
  // The kernel's source goes in as descriptor 3, which the interpreter reads as its script.
  UniqueFd source(memfd_create("byd-kernel", MFD_CLOEXEC));
  if (!source.valid()) return internalError("cannot prepare a kernel");
  writeAll(source.get(), kPythonKernelSource, strlen(kPythonKernelSource));
  RunRequest request;
  request.argv = {python, "-I", "-S", "-u", kKernelPath};
  request.cwd = cwd;
  request.env = {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8", "TERM=dumb"};
  if (!packages.empty()) request.env.push_back("BYD_PYTHON_PACKAGES=" + packages);
  auto launched = sandbox.launch(request, {source.get()}, /*own_cgroup=*/true);
  source.reset();  // the kernel holds its own copy
  if (!launched.ok()) return launched.status();
  return attach(std::make_unique<SandboxKernel>(std::move(*launched)));
}

Status PythonKernel::setMasks(std::shared_ptr<const FileMasks> masks) {
  if (masks == masks_ || (masks_ && *masks == *masks_) || (!masks_ && masks->empty())) {
    masks_ = std::move(masks);
    return okStatus();
  }
  Status s = proc_->setMasks(*masks);
  if (!s.ok()) {
    kill();
    return s;
  }
  masks_ = std::move(masks);
  return okStatus();
}

Result<std::unique_ptr<PythonKernel>> PythonKernel::attach(std::unique_ptr<KernelProcess> process) {
  std::unique_ptr<PythonKernel> k(new PythonKernel());
  k->proc_ = std::move(process);
  for (int fd : {k->proc_->stdoutFd(), k->proc_->stderrFd()}) fcntl(fd, F_SETFL, O_NONBLOCK);
  auto ready = k->receive(std::chrono::steady_clock::now() + std::chrono::seconds(10), nullptr);
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
