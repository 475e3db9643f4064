#pragma once
// Sessions' sandboxes made by Kubernetes with agent-sandbox (kubernetes-sigs/agent-sandbox,
// API extensions.agents.x-k8s.io/v1beta1): a SandboxClaim per session, checked out of a
// SandboxWarmPool (whose SandboxTemplate runs backyard-mcp as the sandbox's agent), watched
// until its Sandbox is Ready, reached at the Sandbox's headless Service (status.serviceFQDN)
// on the agent's port, and deleted when the session ends.
//
// The client speaks to the API server with libcurl (loaded on first use), as a pod does: the
// service account's token, read again for each request (bound tokens are renewed on disk),
// and the cluster's CA. Watches resume from the last resourceVersion seen; one the server no
// longer has (410 Gone) starts over from a fresh read of the claim. A named session's claim
// is kept between its sessions, its Sandbox suspended (see forget()).

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/cancel.h"
#include "common/result.h"
#include "placement/placement.h"

namespace byd::placement {

struct KubernetesOptions {
  // The API server ("https://HOST:PORT"); from KUBERNETES_SERVICE_HOST and _PORT in a pod.
  std::string api_server;
  std::string ca_file;     // its CA ("": the system's); the service account's ca.crt in a pod
  std::string token_file;  // the service account's token ("": none)
  std::string namespace_;  // where the claims are made; the service account's in a pod
  std::string warm_pool;   // the SandboxWarmPool sessions are checked out of
  // This front's pod name, a label of its claims ("": unlabelled): its claims that a killed
  // run of it left, and those of a front whose pod is gone, are deleted by releaseOrphans().
  std::string front;
  std::string workspace_size = "1Gi";  // a named session's PVC
  int agent_port = 8080;               // where the agent listens in the sandbox
  std::string agent_path = "/mcp";
  // How long a claim may take to become ready, and one request (a watch is cut into pieces
  // of at most this, each resumed where the last ended).
  std::chrono::milliseconds ready_timeout{std::chrono::seconds(120)};
  std::chrono::milliseconds request_timeout{std::chrono::seconds(30)};
};

// The options a pod's own service account gives, from the environment and
// /var/run/secrets/kubernetes.io/serviceaccount (an error names what is missing).
Result<KubernetesOptions> inClusterOptions();

class KubernetesPlacement final : public Placement {
 public:
  explicit KubernetesPlacement(KubernetesOptions options);

  // Claims a sandbox for a session (its id a label, which it must be fit for; its tenant an
  // annotation), waits until it is ready and says where its agent listens. A claim that does
  // not become ready in time, or whose wait is cancelled, is deleted, and the error names its
  // last Ready reason and message; a create that failed midway is looked for by its label.
  Result<Placed> place(const std::string& tenant, const std::string& session, const Spec& spec,
                       const CancelToken& cancel) override;
  // Deletes a claim (and with it, by agent-sandbox's ownership, its Sandbox and pod); one
  // already gone is no error.
  Status release(const std::string& claim) override;
  // A named session's claim (labelled backyard-mcp/named with a digest of its tenant and
  // name) asks for a PVC of its own, `workspace` (volumeClaimTemplates: a cold start, not a
  // warm pool's pod). When its session ends its Sandbox is suspended (the pod goes, the
  // Sandbox and its PVC stay) and the claim annotated with the time; the next session of
  // that name resumes it. forget() deletes the claim, and with it the Sandbox and the PVC.
  Status forget(const std::string& tenant, const std::string& name) override;
  Result<std::vector<KeptWorkspace>> keptWorkspaces() override;
  std::string describe() const override {
    return "agent-sandbox's warm pool " + options_.warm_pool + " in namespace " +
           options_.namespace_;
  }
  // Deletes every claim labelled with `session`.
  Status releaseSession(const std::string& session);
  // At start: deletes the claims this front's earlier runs left (labelled with its pod name)
  // and those of fronts whose pods are gone (a replaced front's pod has another name), and
  // suspends such a claim of a named session that still runs; the claims of fronts that live
  // are theirs. Says how many it deleted or suspended.
  Result<size_t> releaseOrphans();

  struct Reply {
    long status = 0;
    std::string body;
  };
  // One request to the API server: its status and body, or why none came. With `line`, the
  // body is handed over line by line as it comes (a watch) and `line` returns false to stop.
  Result<Reply> request(const std::string& verb, const std::string& path,
                        const nlohmann::json& body, const CancelToken& cancel,
                        const std::function<bool(const std::string& line)>& line = nullptr,
                        std::chrono::milliseconds timeout = std::chrono::milliseconds(0));

 private:
  std::string claimsPath() const;
  // The label value of a named session's claim, and the claim when there is one.
  std::string namedKey(const std::string& tenant, const std::string& name) const;
  Result<std::optional<nlohmann::json>> namedClaim(const std::string& key);
  // Watches `claim` until it is ready and says where its agent listens; one not ready in time
  // is deleted (a named one suspended: its workspace is kept).
  Result<Placed> waitReady(nlohmann::json claim, bool named, const CancelToken& cancel);
  // A named claim's Sandbox suspended (its pod ends; it and its PVC stay), the time noted.
  Status suspend(const std::string& claim, const std::string& sandbox);
  Status patch(const std::string& path, const nlohmann::json& body, const std::string& what,
               nlohmann::json* answer = nullptr);
  // The claim's Ready condition and Sandbox name once it is ready; or what it says it waits
  // for (the reason and message of its Ready condition) in `waiting`.
  static bool ready(const nlohmann::json& claim, std::string* sandbox, std::string* waiting);
  Result<std::string> sandboxUrl(const std::string& sandbox, const CancelToken& cancel);
  Status apiError(const std::string& what, const Reply& reply) const;

  const KubernetesOptions options_;
  std::mutex mu_;
  std::map<std::string, std::string> named_claims_;  // a placed named claim -> its Sandbox
};

}  // namespace byd::placement
