#pragma once
// Sessions' sandboxes made by Docker Swarm: a service of one replica per session, from the
// agent's image (deploy/agent/Dockerfile), on an overlay network that is internal (no route
// out) and attachable (the front's container joins it), reached by the service's name on that
// network. Swarm places it on a node, restarts it where it failed, and moves it off a node
// that is lost; the front removes it when the session ends.
//
// The agent's token is a Swarm secret (made once from the token, named by its hash), mounted
// at /run/secrets/backyard-agent-token; its workspace is the image's, in the container's own
// layer (removed with it). A named session's is a volume on its node instead, kept when the
// session ends and mounted again by the next session of its name while that node lives (a
// Swarm config of the volume's name records the node); purged, a job on the node removes it.
// It runs as uid 65532 with no capabilities, under the service's
// limits (a runtime's, when the session asked for one: its image and limits). The
// service's endpoint mode is dnsrr: its name resolves to its task's address on the network, so
// no virtual IP (and no IPVS in the node's kernel) stands between the front and the agent.

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/docker/docker_client.h"
#include "placement/placement.h"

namespace byd::placement {

// A node labelled with this and a runtime's name, "=true", is preferred for that runtime's
// sessions: `docker node update --label-add io.backyard-mcp.runtime.NAME=true NODE`.
inline constexpr const char* kRuntimeNodeLabel = "io.backyard-mcp.runtime.";

struct SwarmOptions {
  std::string docker_host;                  // a manager's engine (DOCKER_HOST syntax)
  std::string network = "backyard-agents";  // made when missing
  std::string image = "backyard-mcp/agent:local";
  std::string token;  // what every agent takes
  int agent_port = 8080;
  // What this front's services are labelled with, so that those a previous run of it left
  // (it was killed) are removed when it starts again.
  std::string front;
  int64_t memory_bytes = int64_t{1} << 30;
  double cpus = 1.0;
  int64_t pids = 256;
  std::chrono::milliseconds ready_timeout{std::chrono::seconds(120)};
};

class SwarmPlacement final : public Placement {
 public:
  // Checks that the engine is a Swarm manager, makes the network and the token's secret when
  // missing, and removes the services a previous run of this front left.
  static Result<std::unique_ptr<SwarmPlacement>> open(SwarmOptions options);

  // A service named byd-SESSION, labelled with the session, the tenant and the front; ready
  // when its task runs and its agent answers its health check.
  Result<Placed> place(const std::string& tenant, const std::string& session, const Spec& spec,
                       const CancelToken& cancel) override;
  Status release(const std::string& service) override;
  // The kept volume removed on its node, and the config that named the node.
  Status forget(const std::string& tenant, const std::string& name) override;
  // From the configs: when the last session of each ended (a label set when its service is
  // removed; one without it, a front killed meanwhile, counts from now).
  Result<std::vector<KeptWorkspace>> keptWorkspaces() override;
  std::string describe() const override {
    return "a Docker Swarm service from " + options_.image + " on network " + options_.network;
  }
  // Removes every service this front labelled.
  Status releaseAll();

 private:
  SwarmPlacement(SwarmOptions options, docker::Client client)
      : options_(std::move(options)), client_(std::move(client)) {}
  // `volume`: a named session's kept workspace ("" none).
  nlohmann::json serviceSpec(const std::string& tenant, const std::string& session,
                             const Spec& spec, const std::string& volume,
                             const std::vector<std::string>& constraints) const;
  // Where `runtime`'s sessions go: the nodes labelled for it (kRuntimeNodeLabel + its name =
  // true) when one of them is ready and active, else any node (none: no constraint).
  Result<std::vector<std::string>> constraintsFor(const Spec& spec) const;
  // A named session's kept workspace: the volume's name, and the Swarm config of that name
  // which says the node that holds it (none: nothing kept).
  struct Kept {
    std::string config;  // its id
    std::string node;
  };
  std::string keptVolume(const std::string& tenant, const std::string& name) const;
  Result<std::optional<Kept>> keptOn(const std::string& volume) const;
  Status rememberNode(const std::string& volume, const std::string& tenant, const std::string& name,
                      const std::string& node);
  // DELETE of an engine object; one already gone is no error.
  Status remove(const std::string& path, const std::string& what);
  Status removeConfig(const std::string& id);
  // Sets the config's label of when its session ended to now.
  Status markClosed(const std::string& id);
  // Whether `node` is in the swarm, ready and active.
  Result<bool> nodeLives(const std::string& node) const;
  // Removes `volume` on `node`, by a job there.
  Status removeVolume(const std::string& volume, const std::string& node);
  // What the service's tasks say: whether one runs (and on which node), the state of the one
  // Swarm wants running, and how many have failed (with the last one's error).
  struct Tasks {
    bool running = false;
    std::string node;
    std::string state = "pending";
    int failed = 0;
    std::string error;
  };
  Result<Tasks> tasks(const std::string& service) const;

  const SwarmOptions options_;
  docker::Client client_;
  std::string network_id_;
  std::string secret_id_, secret_name_;
  std::mutex mu_;
  std::map<std::string, std::string> named_volumes_;  // a named session's service -> volume
};

}  // namespace byd::placement
