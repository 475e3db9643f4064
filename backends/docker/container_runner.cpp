#include "backends/docker/container_runner.h"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <optional>

#include <spdlog/spdlog.h>

#include "backends/local/fork_rendezvous.h"
#include "common/text.h"

namespace byd::docker {
namespace {

// The ends of the streams the runner cut, from its exit frame: the bytes it dropped, then the
// last bytes, which the supervisor keeps as each stream's end.
void takeEnds(Supervisor& sup, const json& exit_frame) {
  const json ends = exit_frame.value("ends", json::array());
  if (!ends.is_array() || ends.size() != 2) return;
  for (size_t i = 0; i < 2; ++i) {
    if (!ends[i].is_object()) continue;
    const bool to_err = i == 1;
    const json& dropped = ends[i].value("dropped", json(0));
    if (dropped.is_number_unsigned()) sup.skipped(to_err, dropped.get<uint64_t>());
    auto data = base64Decode(ends[i].value("data", ""));
    if (data.ok() && !data->empty()) (to_err ? sup.err(*data) : sup.out(*data));
  }
}

}  // namespace

using Clock = std::chrono::steady_clock;

SupervisorOptions supervision(const CommandSpec& spec, std::function<void()> kill) {
  SupervisorOptions o;
  o.timeout = spec.timeout;
  o.max_output = spec.max_output;
  o.cancel = spec.cancel;
  o.on_progress = spec.on_line;
  o.grace = std::chrono::seconds(5);  // for the command's end to be reported after the kill
  o.stop = [kill = std::move(kill)](int step) {
    if (step > 1) return false;
    kill();
    return true;
  };
  return o;
}

Result<std::unique_ptr<ContainerRunner>> ContainerRunner::start(const Client& client,
                                                                const std::string& container,
                                                                std::vector<std::string> cmd,
                                                                const std::string& user,
                                                                const std::string& rendezvous) {
  std::optional<ForkRendezvous::Waiting> waiting;
  if (!rendezvous.empty()) {
    if (auto w = ForkRendezvous::open(); w.ok()) {
      waiting.emplace(std::move(*w));
      cmd.insert(cmd.end(), {"--connect", rendezvous + "/" + waiting->name()});
    }
  }
  BYD_ASSIGN_OR_RETURN(json made, client.request("POST", "/containers/" + container + "/exec",
                                                 {{"Cmd", cmd},
                                                  {"Env", {"HOME=/tmp", "LANG=C.UTF-8"}},
                                                  {"User", user},
                                                  {"WorkingDir", "/workspace"},
                                                  {"AttachStdin", true},
                                                  {"AttachStdout", true},
                                                  {"AttachStderr", true},
                                                  {"Tty", false}}));
  BYD_ASSIGN_OR_RETURN(std::unique_ptr<Hijacked> conn, client.startExec(made.value("Id", "")));
  std::unique_ptr<ContainerRunner> runner(new ContainerRunner(std::move(conn), container));
  // A runner whose exec ends before its greeting cannot run here. One that lives but has not
  // greeted yet is waited for: on an engine starting many containers at once, an exec can take
  // tens of seconds. Its greeting comes over its own connection, or, when it could not make
  // one, over its exec.
  const auto deadline = Clock::now() + kGreetingWait;
  char kind = 0;
  std::string payload;
  while (!runner->nextFrame(&kind, &payload)) {
    if (waiting && !runner->direct()) {
      if (auto peer = waiting->accept(std::chrono::milliseconds(20)); peer.ok()) {
        runner->direct_ = std::move(peer->conn);
      }
    }
    if (!runner->pump(waiting && !runner->direct() ? 20 : 100)) {
      return failedPrecondition("the command runner did not start in the container");
    }
    if (Clock::now() >= deadline) {
      return Status(Code::kDeadlineExceeded, "the command runner did not greet within " +
                                                 std::to_string(kGreetingWait.count()) + " s");
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
    const ssize_t sent = ::send(fd(), rest.data(), rest.size(), MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent <= 0) return failedPrecondition("the command runner is gone");
    rest.remove_prefix(sent);
  }
  return okStatus();
}

bool ContainerRunner::pump(int wait_ms) {
  pollfd p[2] = {{fd(), POLLIN, 0}, {conn_->fd(), POLLIN, 0}};
  const nfds_t n_fds = direct_.valid() ? 2 : 1;
  if (poll(p, n_fds, wait_ms) <= 0) return true;
  char buf[1 << 16];
  if (n_fds == 2 && p[1].revents != 0) {
    // Its exec now carries only what it says on stderr (and ends with it): read, so that
    // the engine's buffer never fills under it.
    const ssize_t n = ::read(conn_->fd(), buf, sizeof buf);
    if (n > 0) drain(std::string_view(buf, n));
  }
  if (p[0].revents == 0) return true;
  const ssize_t n = ::read(fd(), buf, sizeof buf);
  if (n < 0 && errno == EINTR) return true;
  if (n <= 0) return false;
  if (direct_.valid()) {
    frames_.append(buf, n);
    return true;
  }
  return drain(std::string_view(buf, n));
}

bool ContainerRunner::drain(std::string_view data) {
  return demux_.feed(data, [this](int stream, std::string_view part) {
    if (stream == 2) {
      spdlog::warn("docker: command runner: {}", part);
    } else if (!direct_.valid()) {  // (with its own connection, it sends nothing here)
      frames_.append(part);
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
                       {"enter", spec.enter},
                       {"env", spec.env},
                       {"cwd", spec.cwd},
                       {"stdin", spec.stdin_data},
                       {"max_output", spec.max_output},
                       {"nonce", nonce}});
      !s.ok()) {
    usable_ = false;
    return s;
  }
  // A runner that does not answer the kill is out of step, or its container is gone.
  Supervisor sup(supervision(spec, [this] {
    if (!send({{"type", "kill"}}).ok()) usable_ = false;
  }));
  Status failure = okStatus();
  json end;  // the exit frame, once it has come
  bool gone = false;
  auto fail = [&](Status why) -> short {
    usable_ = false;
    failure = std::move(why);
    sup.finish();
    return 0;
  };
  sup.watch(fd(), POLLIN, [&](short) -> short {
    if (!pump(0)) {
      gone = true;
      return 0;
    }
    char kind = 0;
    std::string payload;
    while (nextFrame(&kind, &payload)) {
      switch (kind) {
        case 'S':
          *started = true;
          break;
        case 'O':
          sup.out(payload);
          break;
        case 'E':
          sup.err(payload);
          break;
        case 'L':  // the latest line, past the cap of what the runner forwards
          sup.progressLine(payload);
          break;
        case 'X':
          end = json::parse(payload, nullptr, false);
          if (!end.is_object() || end.value("nonce", "") != nonce) {
            return fail(internalError("the command runner sent a bad exit frame"));
          }
          takeEnds(sup, end);
          sup.finish();
          return 0;
        default:
          return fail(internalError("the command runner sent an unknown frame"));
      }
    }
    return POLLIN;
  });
  const bool waited = sup.run();
  if (!failure.ok()) return failure;
  CommandOutcome out;
  static_cast<Captured&>(out) = std::move(sup.captured());
  const bool killed = sup.stopping();
  if (end.is_object()) {
    if (end.contains("error")) return failedPrecondition(end.value("error", ""));
    out.exit_code = killed ? 128 + SIGKILL : end.value("exit_code", -1);
    const json cut = end.value("truncated", json::array());
    if (cut.is_array() && cut.size() == 2) {
      out.out_truncated = out.out_truncated || cut[0] == true;
      out.err_truncated = out.err_truncated || cut[1] == true;
    }
    return out;
  }
  usable_ = false;  // gone, or it did not answer the kill
  if (gone && !*started) return failedPrecondition("the command runner is gone");
  out.no_status = true;
  if (killed || !waited) out.exit_code = 128 + SIGKILL;
  return out;
}

}  // namespace byd::docker
