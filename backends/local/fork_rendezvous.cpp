#include "backends/local/fork_rendezvous.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "common/text.h"

namespace byd {

namespace {

// One directory per user, the same for every server: a kept container binds it for good, and
// a later server that reattaches that container must make its sockets where the container
// sees them. Sockets have names of 128 random bits and are removed one by one; the directory
// stays. Should that path be taken (not a directory of this user's alone), a fresh one is made
// for this server, removed at its end (a kept container is then made again).
struct Dir {
  std::string path;
  bool own = false;  // made for this server alone
  Status status = okStatus();
  Dir() {
    const char* env = getenv("XDG_RUNTIME_DIR");
    const std::string base = env && *env ? env : "/tmp";
    const std::string shared = base + "/backyard-mcp-forks-" + std::to_string(geteuid());
    struct stat st;
    if ((mkdir(shared.c_str(), 0711) == 0 || errno == EEXIST) && lstat(shared.c_str(), &st) == 0 &&
        S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
        ((st.st_mode & 07777) == 0711 || chmod(shared.c_str(), 0711) == 0)) {
      path = shared;
      return;
    }
    std::string tmpl = base + "/backyard-mcp-forks-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr || chmod(tmpl.c_str(), 0711) != 0) {
      status = internalError("cannot make a directory for forked sessions in " + base + ": " +
                             strerror(errno));
      return;
    }
    path = tmpl;
    own = true;
  }
  ~Dir() {
    if (!own) return;
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

Dir& theDir() {
  static Dir dir;
  return dir;
}

}  // namespace

Result<std::string> ForkRendezvous::dir() {
  Dir& d = theDir();
  BYD_RETURN_IF_ERROR(d.status);
  return d.path;
}

Result<ForkRendezvous::Waiting> ForkRendezvous::open() {
  BYD_ASSIGN_OR_RETURN(const std::string base, dir());
  Waiting w;
  w.name_ = randomHex(16) + ".sock";
  w.path_ = base + "/" + w.name_;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (w.path_.size() >= sizeof addr.sun_path) {
    return internalError("the path for a forked session is too long: " + w.path_);
  }
  memcpy(addr.sun_path, w.path_.c_str(), w.path_.size() + 1);
  w.listener_.reset(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!w.listener_.valid() ||
      bind(w.listener_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return internalError("cannot listen for a forked session at " + w.path_ + ": " +
                         strerror(errno));
  }
  // Whoever the sandbox's code runs as may connect; the name is what keeps others out.
  if (chmod(w.path_.c_str(), 0666) != 0 || listen(w.listener_.get(), 1) != 0) {
    return internalError("cannot listen for a forked session at " + w.path_ + ": " +
                         strerror(errno));
  }
  return w;
}

ForkRendezvous::Waiting::~Waiting() {
  if (!path_.empty()) unlink(path_.c_str());
}

Result<ForkRendezvous::Waiting::Peer> ForkRendezvous::Waiting::accept(
    std::chrono::milliseconds timeout) {
  if (!listener_.valid()) return failedPrecondition("no socket for a forked session");
  pollfd p{listener_.get(), POLLIN, 0};
  int n;
  do {
    n = poll(&p, 1, static_cast<int>(timeout.count()));
  } while (n < 0 && errno == EINTR);
  if (n <= 0) return Status(Code::kDeadlineExceeded, "the forked session did not connect");
  Peer peer;
  peer.conn.reset(accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (!peer.conn.valid()) {
    return internalError(std::string("cannot take the forked session's connection: ") +
                         strerror(errno));
  }
  ucred cred{};
  socklen_t len = sizeof cred;
  if (getsockopt(peer.conn.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) peer.pid = cred.pid;
  // One fork per socket: the name is spent.
  unlink(path_.c_str());
  path_.clear();
  listener_.reset();
  return peer;
}

}  // namespace byd
