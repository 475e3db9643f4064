#include "backends/local/sandbox_zygote.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

namespace byd {
namespace zygote {

constexpr size_t kMaxFds = 8;

bool sendMessage(int sock, std::string_view payload, const std::vector<int>& fds) {
  if (fds.size() > kMaxFds) return false;
  iovec iov{const_cast<char*>(payload.data()), payload.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)] = {};
  if (!fds.empty()) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  ssize_t n;
  do {
    n = sendmsg(sock, &msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(payload.size());
}

bool writeSmallFile(const char* path, std::string_view data) {
  const int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = write(fd, data.data(), data.size()) == static_cast<ssize_t>(data.size());
  close(fd);
  return ok;
}

ssize_t receiveMessage(int sock, std::string& payload, std::vector<int>& fds) {
  payload.resize(64 * 1024);
  iovec iov{payload.data(), payload.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)];
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  fds.clear();
  if (n >= 0) {
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      const size_t first = fds.size();
      fds.resize(first + count);
      memcpy(fds.data() + first, CMSG_DATA(c), count * sizeof(int));
    }
  }
  payload.resize(n > 0 ? n : 0);
  return n;
}

}  // namespace zygote

ZygoteClient::ZygoteClient(pid_t pid, UniqueFd control, UniqueFd stderr_r, CgroupRun cgroup)
    : pid_(pid),
      control_(std::move(control)),
      stderr_r_(std::move(stderr_r)),
      pidfd_(static_cast<int>(syscall(SYS_pidfd_open, pid, 0))),
      cgroup_(std::move(cgroup)) {
  fcntl(stderr_r_.get(), F_SETFL, O_NONBLOCK);
}

ZygoteClient::~ZygoteClient() {
  // Without its control socket the helper exits, and its pid namespace (every command still
  // running) with it. A helper that does not is killed, with its cgroup.
  control_.reset();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (waitpid(pid_, nullptr, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() >= deadline) {
      kill(pid_, SIGKILL);
      cgroup_.killAll();
      waitpid(pid_, nullptr, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

bool ZygoteClient::alive() const {
  std::lock_guard lock(mu_);
  if (lost_) return false;
  pollfd p{pidfd_.get(), POLLIN, 0};
  if (pidfd_.valid() && poll(&p, 1, 0) == 1) lost_ = true;  // a pidfd is readable once it exits
  return !lost_;
}

std::string ZygoteClient::lastWords() const {
  char buf[512];
  const ssize_t n = read(stderr_r_.get(), buf, sizeof buf);
  return n > 0 ? ": " + std::string(buf, n) : "";
}

Result<ZygoteClient::Run> ZygoteClient::start(const std::string& spec, const std::vector<int>& fds,
                                              bool& lost) const {
  lost = false;
  // The spec travels in a memfd: a command may be larger than a socket message.
  UniqueFd spec_fd(memfd_create("byd-spec", MFD_CLOEXEC));
  if (!spec_fd.valid() ||
      write(spec_fd.get(), spec.data(), spec.size()) != static_cast<ssize_t>(spec.size())) {
    return resourceExhausted("cannot hand the command to the sandbox: " +
                             std::string(strerror(errno)));
  }
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    return resourceExhausted("cannot create a socket: " + std::string(strerror(errno)));
  }
  UniqueFd ours(sv[0]), theirs(sv[1]);
  bool sent;
  {
    std::lock_guard lock(mu_);
    std::vector<int> all = {spec_fd.get(), theirs.get()};
    all.insert(all.end(), fds.begin(), fds.end());
    sent = !lost_ && zygote::sendMessage(control_.get(), std::string(1, zygote::kRun), all);
    if (!sent) lost_ = true;
  }
  spec_fd.reset();
  theirs.reset();
  auto fail = [&](std::string why) -> Status {
    std::lock_guard lock(mu_);
    lost_ = lost = true;
    return internalError("the sandbox's launcher has gone (" + why + lastWords() + ")");
  };
  if (!sent) return fail("it no longer reads requests");
  // The helper answers one request after another; under load (many sessions starting
  // commands at once on few cores) the queue ahead may take seconds. A helper that has exited
  // is lost at once; one that lives is waited for, up to a minute.
  pollfd p[2] = {{ours.get(), POLLIN, 0}, {pidfd_.get(), POLLIN, 0}};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    const int ready = poll(p, pidfd_.valid() ? 2 : 1, std::max<int>(0, left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready > 0 && p[0].revents != 0) break;
    if (ready > 0) return fail("it has exited");
    return fail("it did not answer within 60 s");
  }
  std::string payload;
  std::vector<int> got;
  const ssize_t n = zygote::receiveMessage(ours.get(), payload, got);
  std::vector<UniqueFd> received(got.begin(), got.end());
  if (n > 0 && payload[0] == zygote::kStarted && received.size() == 1) {
    return Run{std::move(received[0]), std::move(ours)};
  }
  if (n > 0 && payload[0] == zygote::kError) {
    return resourceExhausted("the sandbox could not start the command: " + payload.substr(1));
  }
  return fail(n == 0 ? "it closed the request" : "its answer was garbled");
}

}  // namespace byd
