#pragma once
// The server's end of a command runner kept alive in a container (byd-enter --runner,
// backends/docker/enter_runner.h, copied in beside the Python kernel): a command of execute
// starts with a fork inside the container instead of an engine exec, and a timeout or cancel
// kills its process group from there, which needs no new process even when the pids limit is
// exhausted. A runner runs one command at a time; the Docker backend keeps the idle ones. Not
// thread-safe: one user at a time.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backends/docker/docker_client.h"
#include "common/cancel.h"
#include "common/result.h"
#include "common/supervisor.h"
#include "common/unique_fd.h"

namespace byd::docker {

// One command and what to do with its output.
struct CommandSpec {
  std::vector<std::string> argv;
  std::vector<std::string> enter;  // byd-enter's options for it (its filter, its masks)
  std::vector<std::string> env;    // "NAME=value": the whole environment
  std::string cwd;                 // absolute, in the container
  std::string stdin_data;
  std::chrono::milliseconds timeout{120000};
  size_t max_output = 100 * 1024;  // per stream
  const CancelToken* cancel = nullptr;
  std::function<void(std::string_view)> on_line;  // the latest stdout line, about once a second
};

// What a command did: its output (each stream cut at max_output), whether the timeout or a
// cancel ended it (then every process of its user in the container was killed), its exit code.
struct CommandOutcome : Captured {
  int exit_code = -1;
  bool container_lost = false;  // the container stopped during it
  bool no_status = false;       // the command's status never came
};

// The supervisor's options for `spec`, from now: at the deadline or a cancel, `kill` once, then
// 5 s for the command's end to be reported before the supervisor gives up.
SupervisorOptions supervision(const CommandSpec& spec, std::function<void()> kill);

class ContainerRunner {
 public:
  // How long a runner that lives is waited for to greet.
  static constexpr std::chrono::seconds kGreetingWait{60};

  // Starts a runner in `container` through one exec of `cmd`, as `user`. With `rendezvous`,
  // where the container sees ForkRendezvous::dir(), the runner is asked to connect to a socket
  // there (`--connect PATH` after `cmd`), and its frames then pass between it and the server
  // alone, not through the engine and the container's shim; a runner that cannot connect
  // speaks through its exec, as without. Failed precondition when its exec ends without a
  // greeting: then use one exec per command. Deadline exceeded when it lives but has not
  // greeted within kGreetingWait.
  static Result<std::unique_ptr<ContainerRunner>> start(const Client& client,
                                                        const std::string& container,
                                                        std::vector<std::string> cmd,
                                                        const std::string& user,
                                                        const std::string& rendezvous = "");
  // Whether its frames pass over its own connection (see start()).
  bool direct() const { return direct_.valid(); }
  ~ContainerRunner();

  const std::string& container() const { return container_; }
  // False once the runner is gone or out of step: drop it.
  bool usable() const { return usable_; }
  // Runs one command to its end. `started` says whether the runner started it: after an error
  // with `started` false, the command never ran and may be run again by another runner.
  Result<CommandOutcome> run(const CommandSpec& spec, bool* started);

 private:
  ContainerRunner(std::unique_ptr<Hijacked> conn, std::string container);
  Status send(const json& message);
  // Reads what the connection has (waiting up to `wait_ms`) into frames_; false at its end.
  bool pump(int wait_ms);
  // Takes what the exec sent: its stderr is logged, its stdout taken as frames (unless the
  // runner has its own connection).
  bool drain(std::string_view data);
  // The next whole frame from the runner, if one has come: its kind and payload.
  bool nextFrame(char* kind, std::string* payload);

  // The connection of its frames: its own (direct_) when it made one, else its exec's.
  int fd() const { return direct_.valid() ? direct_.get() : conn_->fd(); }

  std::unique_ptr<Hijacked> conn_;  // its exec: its stdin and stdout, or only its stderr
  UniqueFd direct_;
  const std::string container_;
  StreamDemuxer demux_;
  std::string frames_;  // what the runner sent: frames not yet taken
  bool usable_ = true;
};

}  // namespace byd::docker
