#pragma once
// The only way out of a sandbox: a proxy in the server that speaks HTTP (forwarding of
// absolute-form requests, and CONNECT) and SOCKS5 (CONNECT, for any other TCP) on the same
// port, telling them apart by the first byte. Each connection names a target (host and port);
// the judge (the ruleset's `network` operation) says whether it may be reached; the proxy
// resolves names itself and never connects to a loopback, link-local, private, multicast or
// otherwise special address (address_policy.h) unless the judge's rule names that IP literal,
// judging the address it actually connects to. A refusal says why: an HTTP 403 whose body
// names the target and the rule, or SOCKS5's "not allowed by ruleset". Every attempt is
// logged with target, decision and rule.
//
// The proxy accepts on listening sockets it is handed (serve()), which may belong to another
// network namespace: the Local sandbox's helper makes one on the sandbox's loopback and
// passes it out, so the sandbox keeps no route of its own. One thread accepts per listener and
// one relays per connection; the destructor stops them all. Thread-safe.

#include <sys/socket.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"

namespace byd::egress {

struct Verdict {
  bool allow = false;
  std::string rule;    // what decided ("network rule 2 (pypi.org:443)", "network default")
  std::string reason;  // for a refusal: why, as the user should read it
  // The deciding rule names the target's IP literal itself: the address may be a special one.
  bool names_literal = false;
};
// `host` is lower-cased (an IPv6 literal without brackets); `port` 1-65535.
using Judge = std::function<Verdict(const std::string& host, uint16_t port)>;

class Proxy {
 public:
  explicit Proxy(Judge judge);
  ~Proxy();
  Proxy(const Proxy&) = delete;
  Proxy& operator=(const Proxy&) = delete;

  // Accepts connections on `listener` (a listening stream socket) until the proxy ends.
  Status serve(UniqueFd listener);

  // The connection-time check, exposed for tests: nullopt when `address` may be connected to
  // for `verdict`, else why not ("169.254.169.254 is link-local").
  static std::optional<std::string> refuses(const sockaddr_storage& address,
                                            const Verdict& verdict);

  // For tests: connections being served now.
  int active() const { return active_.load(); }

 private:
  void acceptLoop(int listener);
  void handle(UniqueFd client);
  // One connection, by its protocol; `head` is what it sent first.
  void socks5(int client_fd, std::string head);
  void http(int client_fd, std::string head);

  const Judge judge_;
  UniqueFd stop_;  // an eventfd, readable once the proxy ends
  std::vector<std::thread> acceptors_;
  std::vector<UniqueFd> listeners_;
  std::mutex mu_;
  std::condition_variable idle_;
  std::atomic<int> active_{0};
  std::atomic<bool> stopping_{false};
};

}  // namespace byd::egress
