#pragma once
// What the Docker backend's files share (docker_backend.cpp: files, commands and kernels;
// containers.cpp: the containers themselves): where the server's programs sit in a container,
// and who starts them. Not for use outside them.

#include <cstdio>
#include <string>
#include <vector>

namespace byd::docker {

inline constexpr const char* kKernelDir = "/opt/backyard";
// Processes the server starts to run the code (the command runner, a kernel's launcher) start
// as the container's root, which the code never is: it cannot signal or trace them.
inline constexpr const char* kRoot = "0:0";
// A kernel's pid, written by root in its container before any code runs there.
inline constexpr const char* kKernelPidFile = "/tmp/.byd-kernel.pid";
// Where the proxy's socket directory is bound in a container, the socket's name in it, and the
// port of the relay on the container's loopback.
inline constexpr const char* kProxyDir = "/run/backyard-net";
// Where the server's rendezvous directory of forked sessions (fork_rendezvous.h) is bound.
inline constexpr const char* kForkDir = "/run/backyard-forks";
inline constexpr const char* kProxySocket = "proxy.sock";
inline constexpr int kProxyPort = 3128;
// Idle command containers kept beside the first, for commands that run at once.
inline constexpr size_t kIdleExtraBoxes = 1;

// The arguments after `python -I -S -u` that run `script` under the sandbox's seccomp filter
// (confine.py): gVisor does not apply the engine's profile to what `docker exec` starts.
inline std::vector<std::string> confined(const std::string& script) {
  return {std::string(kKernelDir) + "/confine.py", std::string(kKernelDir) + "/seccomp.bpf",
          script};
}

// byd-enter (enter.cpp), copied into each container: started as root, it becomes the code's
// user.
inline std::string enterPath() { return std::string(kKernelDir) + "/byd-enter"; }

}  // namespace byd::docker
