#include "backends/docker/container_runner.h"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "common/text.h"

namespace byd::docker {

using Clock = std::chrono::steady_clock;

void appendCapped(std::string& out, std::string_view data, size_t cap, bool& truncated) {
  const size_t room = out.size() < cap ? cap - out.size() : 0;
  out.append(data.substr(0, room));
  if (data.size() > room) truncated = true;
}

void LineTracker::feed(std::string_view data,
                       const std::function<void(std::string_view)>& on_line) {
  if (!on_line) return;
  buf_.append(data);
  if (buf_.size() > 4096) buf_.erase(0, buf_.size() - 4096);
  const size_t nl = buf_.rfind('\n');
  if (nl == std::string::npos || Clock::now() - last_ < std::chrono::seconds(1)) return;
  const size_t before = nl == 0 ? std::string::npos : buf_.rfind('\n', nl - 1);
  const size_t begin = before == std::string::npos ? 0 : before + 1;
  on_line(std::string_view(buf_).substr(begin, nl - begin));
  last_ = Clock::now();
}

Result<std::unique_ptr<ContainerRunner>> ContainerRunner::start(
    const Client& client, const std::string& container, const std::string& python,
    const std::vector<std::string>& args, const std::string& user) {
  std::vector<std::string> cmd = {python, "-I", "-S", "-u"};
  cmd.insert(cmd.end(), args.begin(), args.end());
  BYD_ASSIGN_OR_RETURN(
      json made,
      client.request("POST", "/containers/" + container + "/exec",
                     {{"Cmd", cmd},
                      {"Env", {"HOME=/tmp", "LANG=C.UTF-8", "PYTHONDONTWRITEBYTECODE=1"}},
                      {"User", user},
                      {"WorkingDir", "/workspace"},
                      {"AttachStdin", true},
                      {"AttachStdout", true},
                      {"AttachStderr", true},
                      {"Tty", false}}));
  BYD_ASSIGN_OR_RETURN(std::unique_ptr<Hijacked> conn, client.startExec(made.value("Id", "")));
  std::unique_ptr<ContainerRunner> runner(new ContainerRunner(std::move(conn), container));
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  char kind = 0;
  std::string payload;
  while (!runner->nextFrame(&kind, &payload)) {
    if (Clock::now() >= deadline || !runner->pump(100)) {
      return failedPrecondition("the command runner did not start in the container (is " + python +
                                " in the image?)");
    }
  }
  if (kind != 'R') return failedPrecondition("the command runner sent no greeting");
  return runner;
}

ContainerRunner::ContainerRunner(std::unique_ptr<Hijacked> conn, std::string container)
    : conn_(std::move(conn)), container_(std::move(container)) {}

// Closing the connection ends the runner's stdin, and it exits (killing a command left).
ContainerRunner::~ContainerRunner() = default;

Status ContainerRunner::send(const json& message) {
  const std::string body = message.dump(-1, ' ', false, json::error_handler_t::replace);
  const uint32_t n = static_cast<uint32_t>(body.size());
  std::string frame = {static_cast<char>(n >> 24), static_cast<char>(n >> 16),
                       static_cast<char>(n >> 8), static_cast<char>(n)};
  frame += body;
  std::string_view rest = frame;
  while (!rest.empty()) {
    const ssize_t sent = ::send(conn_->fd(), rest.data(), rest.size(), MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent <= 0) return failedPrecondition("the command runner is gone");
    rest.remove_prefix(sent);
  }
  return okStatus();
}

bool ContainerRunner::pump(int wait_ms) {
  pollfd p = {conn_->fd(), POLLIN, 0};
  if (poll(&p, 1, wait_ms) <= 0) return true;
  char buf[1 << 16];
  const ssize_t n = ::read(conn_->fd(), buf, sizeof buf);
  if (n < 0 && errno == EINTR) return true;
  if (n <= 0) return false;
  return demux_.feed(std::string_view(buf, n), [this](int stream, std::string_view data) {
    if (stream == 2) {
      spdlog::warn("docker: command runner: {}", data);
    } else {
      frames_.append(data);
    }
  });
}

bool ContainerRunner::nextFrame(char* kind, std::string* payload) {
  if (frames_.size() < 5) return false;
  const auto* h = reinterpret_cast<const unsigned char*>(frames_.data());
  const size_t n = size_t{h[1]} << 24 | size_t{h[2]} << 16 | size_t{h[3]} << 8 | h[4];
  if (frames_.size() < 5 + n) return false;
  *kind = frames_[0];
  payload->assign(frames_, 5, n);
  frames_.erase(0, 5 + n);
  return true;
}

Result<CommandOutcome> ContainerRunner::run(const CommandSpec& spec, bool* started) {
  *started = false;
  // The exit frame must carry it: the command never sees it, so one it wrote into the runner's
  // output itself (through /proc, where the runtime lets it) is not taken for the runner's.
  const std::string nonce = randomHex(16);
  if (Status s = send({{"type", "run"},
                       {"argv", spec.argv},
                       {"env", spec.env},
                       {"cwd", spec.cwd},
                       {"stdin", spec.stdin_data},
                       {"max_output", spec.max_output},
                       {"nonce", nonce}});
      !s.ok()) {
    usable_ = false;
    return s;
  }
  CommandOutcome out;
  LineTracker lines;
  bool killed = false;
  auto deadline = Clock::now() + spec.timeout;
  char kind = 0;
  std::string payload;
  while (true) {
    while (nextFrame(&kind, &payload)) {
      switch (kind) {
        case 'S':
          *started = true;
          break;
        case 'O':
          appendCapped(out.out, payload, spec.max_output, out.out_truncated);
          lines.feed(payload, spec.on_line);
          break;
        case 'E':
          appendCapped(out.err, payload, spec.max_output, out.err_truncated);
          break;
        case 'L':
          if (spec.on_line) spec.on_line(payload);
          break;
        case 'X': {
          const json end = json::parse(payload, nullptr, false);
          if (!end.is_object() || end.value("nonce", "") != nonce) {
            usable_ = false;
            return internalError("the command runner sent a bad exit frame");
          }
          if (end.contains("error")) return failedPrecondition(end.value("error", ""));
          out.exit_code = killed ? 128 + SIGKILL : end.value("exit_code", -1);
          const json cut = end.value("truncated", json::array());
          if (cut.is_array() && cut.size() == 2) {
            out.out_truncated = out.out_truncated || cut[0] == true;
            out.err_truncated = out.err_truncated || cut[1] == true;
          }
          return out;
        }
        default:
          usable_ = false;
          return internalError("the command runner sent an unknown frame");
      }
    }
    const auto now = Clock::now();
    const bool cancel = spec.cancel != nullptr && spec.cancel->cancelled();
    if (!killed && (now >= deadline || cancel)) {
      out.cancelled = cancel;
      out.timed_out = !cancel;
      killed = true;
      deadline = now + std::chrono::seconds(5);  // for the runner to report the end
      if (!send({{"type", "kill"}}).ok()) usable_ = false;
    } else if (killed && now >= deadline) {
      usable_ = false;  // it did not answer the kill: out of step, or its container is gone
      out.exit_code = 128 + SIGKILL;
      out.no_status = true;
      return out;
    }
    if (!pump(50)) {
      usable_ = false;
      if (!*started) return failedPrecondition("the command runner is gone");
      out.no_status = true;
      if (killed) out.exit_code = 128 + SIGKILL;
      return out;
    }
  }
}

}  // namespace byd::docker
