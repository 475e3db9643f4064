#pragma once
// Where a forked Python session reaches the server. A session's kernel forks inside its
// sandbox or container (see PythonKernel::fork); the fork connects to a unix socket the server
// listens on, in a directory of this user's (the same for every server, so that a kept container
// that binds it serves a later server too) bound into every sandbox and container, and that
// connection is its channel from then on. The directory (mode 0711) cannot be listed
// from inside, and each socket has a random name told to the forking kernel alone, so no
// other session can take a fork's place; the socket is removed once the fork has connected.

#include <sys/types.h>

#include <chrono>
#include <string>
#include <utility>

#include "common/result.h"
#include "common/unique_fd.h"

namespace byd {

class ForkRendezvous {
 public:
  // The directory, made on first use: $XDG_RUNTIME_DIR (else /tmp)/backyard-mcp-forks-UID, or,
  // when that path is not a directory of this user's alone, a fresh one removed at exit.
  static Result<std::string> dir();

  // One socket, waiting for one fork.
  class Waiting {
   public:
    Waiting() = default;
    Waiting(Waiting&& other) noexcept
        : listener_(std::move(other.listener_)),
          name_(std::move(other.name_)),
          path_(std::exchange(other.path_, {})) {}
    Waiting& operator=(Waiting&&) = delete;
    ~Waiting();
    const std::string& name() const { return name_; }  // within dir()

    struct Peer {
      UniqueFd conn;
      pid_t pid = 0;  // as this process sees it (0 where the runtime cannot say: gVisor)
    };
    // The fork's connection, or DeadlineExceeded after `timeout`.
    Result<Peer> accept(std::chrono::milliseconds timeout);

   private:
    friend class ForkRendezvous;
    UniqueFd listener_;
    std::string name_, path_;
  };
  static Result<Waiting> open();
};

}  // namespace byd
