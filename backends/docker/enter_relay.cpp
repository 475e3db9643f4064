#include "backends/docker/enter_relay.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace byd::enter {
namespace {

constexpr size_t kBuffer = 1 << 16;  // per direction
constexpr size_t kMaxPairs = 512;

int cannot(const char* what) {
  fprintf(stderr, "byd-enter: relay: cannot %s: %s\n", what, strerror(errno));
  return 126;
}

// One client and its connection to the proxy; side 0 is the client, 1 the proxy. buf[i] holds
// what side i sent that the other side has not taken yet.
struct Pair {
  int fd[2] = {-1, -1};
  std::string buf[2];
  bool eof[2] = {false, false};   // side i sent its end
  bool shut[2] = {false, false};  // side i was told of the other's end
  bool dead = false;
  ~Pair() {
    for (int f : fd) {
      if (f >= 0) close(f);
    }
  }
};

int connectProxy(const char* path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 && errno != EINPROGRESS) {
    close(fd);
    return -1;
  }
  return fd;
}

// Moves what it can of pair `p` on the events of side `i`.
void pump(Pair& p, int i, short revents) {
  const int other = 1 - i;
  if (revents & POLLERR) {
    p.dead = true;
    return;
  }
  if ((revents & (POLLIN | POLLHUP | POLLERR)) && !p.eof[i] && p.buf[i].size() < kBuffer) {
    char chunk[kBuffer];
    const ssize_t n = recv(p.fd[i], chunk, kBuffer - p.buf[i].size(), MSG_DONTWAIT);
    if (n > 0) {
      p.buf[i].append(chunk, static_cast<size_t>(n));
    } else if (n == 0) {
      p.eof[i] = true;
    } else if (errno != EAGAIN && errno != EINTR) {
      p.dead = true;
      return;
    }
  }
  if ((revents & POLLOUT) && !p.buf[other].empty()) {
    const ssize_t n =
        send(p.fd[i], p.buf[other].data(), p.buf[other].size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      p.buf[other].erase(0, static_cast<size_t>(n));
    } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
      p.dead = true;
      return;
    }
  }
  for (int s = 0; s < 2; ++s) {
    if (p.eof[s] && p.buf[s].empty() && !p.shut[1 - s]) {
      shutdown(p.fd[1 - s], SHUT_WR);
      p.shut[1 - s] = true;
    }
  }
  if (p.shut[0] && p.shut[1]) p.dead = true;
}

}  // namespace

int relay(const char* socket_path, int port) {
  signal(SIGPIPE, SIG_IGN);
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listener < 0) return cannot("make a socket");
  const int one = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return cannot("listen on the container's loopback");
  }
  if (listen(listener, 128) != 0) return cannot("listen on the container's loopback");
  // Nothing more is needed of root but its files: every capability goes.
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || syscall(SYS_capset, &header, data) != 0) {
    return cannot("drop its capabilities");
  }
  std::vector<std::unique_ptr<Pair>> pairs;
  std::vector<pollfd> polled;
  for (;;) {
    polled.clear();
    polled.push_back({listener, POLLIN, 0});
    for (const auto& p : pairs) {
      for (int i = 0; i < 2; ++i) {
        short events = 0;
        if (!p->eof[i] && p->buf[i].size() < kBuffer) events |= POLLIN;
        if (!p->buf[1 - i].empty()) events |= POLLOUT;
        polled.push_back({p->fd[i], events, 0});
      }
    }
    if (poll(polled.data(), polled.size(), -1) < 0) {
      if (errno == EINTR) continue;
      return cannot("wait");
    }
    for (size_t k = 0; k < pairs.size(); ++k) {
      for (int i = 0; i < 2; ++i) {
        const short revents = polled[1 + 2 * k + i].revents;
        if (revents != 0 && !pairs[k]->dead) pump(*pairs[k], i, revents);
      }
    }
    std::erase_if(pairs, [](const auto& p) { return p->dead; });
    if (polled[0].revents & POLLIN) {
      const int client = accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (client < 0) continue;
      const int upstream = pairs.size() < kMaxPairs ? connectProxy(socket_path) : -1;
      if (upstream < 0) {
        close(client);  // no proxy to reach: the program sees its connection end
        continue;
      }
      auto p = std::make_unique<Pair>();
      p->fd[0] = client;
      p->fd[1] = upstream;
      pairs.push_back(std::move(p));
    }
  }
}

}  // namespace byd::enter
