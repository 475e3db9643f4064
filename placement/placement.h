#pragma once
// Where a session's sandbox is made beyond this server: an engine built for placing, restarting
// and draining workloads (Kubernetes with agent-sandbox, Docker Swarm) makes a sandbox that
// runs backyard-mcp as its agent, and says where the agent listens. The front routes the
// session's tools there (--backend remote) and gives the sandbox back when the session ends.

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "common/cancel.h"
#include "common/result.h"

namespace byd::placement {

// A session's sandbox: what release() removes, the sandbox that serves it, and the agent's
// endpoint.
struct Placed {
  std::string claim;    // a SandboxClaim's name; a Swarm service's name
  std::string sandbox;  // the Sandbox (Kubernetes); the service's task (Swarm)
  std::string url;      // http://NAME:PORT/mcp
};

// What a session's sandbox is made of.
struct Spec {
  // The runtime it asked for (--runtimes): its name, and its image and limits in place of the
  // placement's own. None (an empty name): the placement's image and limits.
  std::string runtime;
  std::string image;
  std::optional<int64_t> memory_bytes;
  std::optional<double> cpus;
  std::optional<int64_t> pids;
  // A named session's name: where the placement can, its workspace outlives its sandbox and is
  // found again by the next session of its tenant and name, until forget(). "": an unnamed
  // session's, gone with its sandbox.
  std::string named;
};

// When a kept workspace's session ended is noted on the engine's object (a label, an
// annotation) as unix seconds: now, and a note read back (none when it is no such number).
inline std::string unixSecondsNow() {
  return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count());
}
inline std::optional<std::chrono::system_clock::time_point> unixSeconds(const std::string& note) {
  char* end = nullptr;
  const long long at = std::strtoll(note.c_str(), &end, 10);
  if (note.empty() || end == nullptr || *end != '\0') return std::nullopt;
  return std::chrono::system_clock::time_point(std::chrono::seconds(at));
}

// A named session's workspace that outlives its sandbox (Spec::named), and when its last
// session ended.
struct KeptWorkspace {
  std::string tenant;
  std::string name;
  std::chrono::system_clock::time_point closed;
};

class Placement {
 public:
  virtual ~Placement() = default;
  // Makes a sandbox for `session` (an id of the front's own, fit for a label or a name) of
  // `tenant` as `spec` says, waits until its agent is ready and says where it listens. A
  // sandbox that does not become ready in time, or whose wait is cancelled, is removed, and
  // the error says why.
  virtual Result<Placed> place(const std::string& tenant, const std::string& session,
                               const Spec& spec, const CancelToken& cancel) = 0;
  // Removes a placed sandbox; one already gone is no error.
  virtual Status release(const std::string& claim) = 0;
  // Removes the workspace a named session of `tenant` kept (Spec::named); notFound when it
  // kept none.
  virtual Status forget(const std::string& tenant, const std::string& name) = 0;
  // The workspaces it keeps, for --workspace-ttl (none where workspaces go with their
  // sandboxes).
  virtual Result<std::vector<KeptWorkspace>> keptWorkspaces() {
    return std::vector<KeptWorkspace>{};
  }
  // What it places, for the log and the instructions: "agent-sandbox's warm pool NAME".
  virtual std::string describe() const = 0;
};

}  // namespace byd::placement
