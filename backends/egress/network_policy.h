#pragma once
// What one call's code may reach over the network (see egress_proxy.h). The permissions layer
// gives each execute and run_python call one; the backend's proxy judges every connection by
// the latest, also between calls (when nobody can be asked).

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/egress/egress_proxy.h"

namespace byd::egress {

class NetworkPolicy {
 public:
  virtual ~NetworkPolicy() = default;
  // Whether some target may be reached (a rule allows or asks): without, there is no proxy.
  virtual bool open() const = 0;
  virtual Verdict judge(const std::string& host, uint16_t port) = 0;
};

// A backend's proxy: each connection is judged by the policy of the latest call (before any:
// refused). Thread-safe.
class CallProxy {
 public:
  CallProxy();
  // The latest call's policy; a null one changes nothing.
  void take(const std::shared_ptr<NetworkPolicy>& policy);
  Status serve(UniqueFd listener) { return proxy_.serve(std::move(listener)); }

 private:
  std::mutex mu_;
  std::shared_ptr<NetworkPolicy> policy_;
  Proxy proxy_;  // last: stopped before the policy goes
};

// The variables that point programs at the proxy on 127.0.0.1:`port` (curl, pip, git, npm and
// Python's urllib read them), "NAME=value".
std::vector<std::string> proxyEnvironment(uint16_t port);

}  // namespace byd::egress
