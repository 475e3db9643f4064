#include "placement/swarm.h"

#include <algorithm>
#include <thread>

#include <spdlog/spdlog.h>

#include "common/text.h"
#include "mcp/crypto.h"

namespace byd::placement {

namespace {

using Clock = std::chrono::steady_clock;
using docker::urlEncode;
using nlohmann::json;

constexpr const char* kManaged = "io.backyard-mcp.placement";
constexpr const char* kSessionLabel = "io.backyard-mcp.session";
constexpr const char* kTenantLabel = "io.backyard-mcp.tenant";
constexpr const char* kFrontLabel = "io.backyard-mcp.front";
constexpr const char* kRuntimeLabel = "io.backyard-mcp.runtime";
constexpr const char* kNamedLabel = "io.backyard-mcp.named";
constexpr const char* kNodeLabel = "io.backyard-mcp.node";
constexpr const char* kClosedLabel = "io.backyard-mcp.closed";  // unix seconds
constexpr const char* kWorkspace = "/workspace";
constexpr const char* kSecretFile = "backyard-agent-token";
constexpr int64_t kAgentUid = 65532;

std::string filters(const std::string& key, const std::string& value) {
  return urlEncode(json{{key, {value}}}.dump());
}

}  // namespace

Result<std::unique_ptr<SwarmPlacement>> SwarmPlacement::open(SwarmOptions options) {
  BYD_ASSIGN_OR_RETURN(docker::Endpoint endpoint, docker::parseHost(options.docker_host));
  std::unique_ptr<SwarmPlacement> p(
      new SwarmPlacement(std::move(options), docker::Client(endpoint)));
  const SwarmOptions& o = p->options_;
  BYD_ASSIGN_OR_RETURN(json info, p->client_.request("GET", "/info"));
  const json swarm = info.value("Swarm", json::object());
  if (swarm.value("LocalNodeState", "") != "active" || !swarm.value("ControlAvailable", false)) {
    return failedPrecondition("--placement docker-swarm: the engine at " + endpoint.text +
                              " is not a Swarm manager (its swarm is '" +
                              swarm.value("LocalNodeState", "inactive") +
                              "'): run `docker swarm init` there, or name a manager with "
                              "--docker-host");
  }
  // The network: internal (no route out) and attachable (the front's container joins it).
  auto network = p->client_.request("GET", "/networks/" + urlEncode(o.network));
  if (!network.ok() && network.status().code() == Code::kNotFound) {
    network = p->client_.request("POST", "/networks/create",
                                 json{{"Name", o.network},
                                      {"Driver", "overlay"},
                                      {"Internal", true},
                                      {"Attachable", true},
                                      {"CheckDuplicate", true},
                                      {"Labels", {{kManaged, "swarm"}}}});
    if (network.ok()) network = p->client_.request("GET", "/networks/" + urlEncode(o.network));
  }
  if (!network.ok()) return network.status();
  if (network->value("Driver", "") != "overlay" || network->value("Scope", "") != "swarm") {
    return failedPrecondition("--swarm-network " + o.network + " is a network of driver '" +
                              network->value("Driver", "") + "', not a Swarm overlay network");
  }
  if (!network->value("Internal", false)) {
    spdlog::warn("--swarm-network {} is not internal: its agents have a route out", o.network);
  }
  p->network_id_ = network->value("Id", "");
  // The agents' token, as a secret named by its hash: a new token makes a new secret.
  BYD_ASSIGN_OR_RETURN(const std::string hash, mcp::sha256Hex(o.token));
  p->secret_name_ = "backyard-agent-token-" + hash.substr(0, 16);
  BYD_ASSIGN_OR_RETURN(
      json secrets,
      p->client_.request("GET", "/secrets?filters=" + filters("name", p->secret_name_)));
  for (const json& s : secrets.is_array() ? secrets : json::array()) {
    if (s.value("Spec", json::object()).value("Name", "") == p->secret_name_) {
      p->secret_id_ = s.value("ID", "");
    }
  }
  if (p->secret_id_.empty()) {
    BYD_ASSIGN_OR_RETURN(json made, p->client_.request("POST", "/secrets/create",
                                                       json{{"Name", p->secret_name_},
                                                            {"Data", base64Encode(o.token)},
                                                            {"Labels", {{kManaged, "swarm"}}}}));
    p->secret_id_ = made.value("ID", "");
  }
  if (Status s = p->releaseAll(); !s.ok()) {
    spdlog::warn("services a previous run of this front left: {}", s.message());
  }
  return p;
}

json SwarmPlacement::serviceSpec(const std::string& tenant, const std::string& session,
                                 const Spec& spec, const std::string& volume,
                                 const std::vector<std::string>& constraints) const {
  const SwarmOptions& o = options_;
  const std::string name = "byd-" + session;
  const std::string health = "http://127.0.0.1:" + std::to_string(o.agent_port) + "/healthz";
  const json container = {
      {"Image", spec.image.empty() ? o.image : spec.image},
      {"Env",
       {"BACKYARD_TOKEN_FILE=/run/secrets/" + std::string(kSecretFile),
        "BACKYARD_LISTEN=0.0.0.0:" + std::to_string(o.agent_port),
        // The front reaches it by the service's name.
        "BACKYARD_ALLOW_HOST=" + name}},
      {"User", std::to_string(kAgentUid) + ":" + std::to_string(kAgentUid)},
      // The workspace is the image's /workspace (the agent's own) in the container's layer,
      // gone with the container (a named session's, a volume: below). Not a tmpfs: the
      // engine's Swarm tmpfs mounts are root's and noexec, whatever mode is asked.
      {"CapabilityDrop", {"ALL"}},
      {"Secrets",
       {{{"File",
          {{"Name", kSecretFile},
           {"UID", std::to_string(kAgentUid)},
           {"GID", std::to_string(kAgentUid)},
           {"Mode", 0400}}},
         {"SecretID", secret_id_},
         {"SecretName", secret_name_}}}},
      // Ready as soon as it answers (the image checks every 2 s).
      {"Healthcheck",
       {{"Test", {"CMD", "curl", "-sf", "-o", "/dev/null", health}},
        {"Interval", int64_t{200'000'000}},
        {"Timeout", int64_t{2'000'000'000}},
        {"Retries", 300}}}};
  json labels = {{kManaged, "swarm"},
                 {kSessionLabel, session},
                 {kTenantLabel, tenant},
                 {kFrontLabel, o.front}};
  if (!spec.runtime.empty()) labels[kRuntimeLabel] = spec.runtime;
  json task_container = container;
  if (!volume.empty()) {
    // A named session's workspace: a volume on its node, which a new volume starts as a copy
    // of the image's /workspace (its owner the agent).
    task_container["Mounts"] = {
        {{"Type", "volume"},
         {"Source", volume},
         {"Target", kWorkspace},
         {"VolumeOptions",
          {{"Labels", {{kManaged, "swarm"}, {kTenantLabel, tenant}, {kNamedLabel, spec.named}}}}}}};
  }
  return {{"Name", name},
          {"Labels", labels},
          {"TaskTemplate",
           {{"ContainerSpec", task_container},
            {"Resources",
             {{"Limits",
               {{"MemoryBytes", spec.memory_bytes.value_or(o.memory_bytes)},
                {"NanoCPUs", static_cast<int64_t>(spec.cpus.value_or(o.cpus) * 1e9)},
                {"Pids", spec.pids.value_or(o.pids)}}}}},
            {"Placement", {{"Constraints", constraints}}},
            {"RestartPolicy", {{"Condition", "any"}, {"Delay", int64_t{100'000'000}}}},
            {"Networks", {{{"Target", network_id_}, {"Aliases", {name}}}}}}},
          {"Mode", {{"Replicated", {{"Replicas", 1}}}}},
          {"EndpointSpec", {{"Mode", "dnsrr"}}}};
}

Result<std::vector<std::string>> SwarmPlacement::constraintsFor(const Spec& spec) const {
  if (spec.runtime.empty()) return std::vector<std::string>{};
  const std::string label = kRuntimeNodeLabel + spec.runtime;
  BYD_ASSIGN_OR_RETURN(json nodes, client_.request("GET", "/nodes"));
  for (const json& n : nodes.is_array() ? nodes : json::array()) {
    const json spec = n.value("Spec", json::object());
    const json labels = spec.value("Labels", json::object());
    const auto it = labels.find(label);
    if (it != labels.end() && it->is_string() && *it == "true" &&
        spec.value("Availability", "") == "active" &&
        n.value("Status", json::object()).value("State", "") == "ready") {
      return std::vector<std::string>{"node.labels." + label + "==true"};
    }
  }
  return std::vector<std::string>{};  // no node is labelled for it (or none of those lives)
}

Result<SwarmPlacement::Tasks> SwarmPlacement::tasks(const std::string& service) const {
  BYD_ASSIGN_OR_RETURN(json list,
                       client_.request("GET", "/tasks?filters=" + filters("service", service)));
  Tasks out;
  for (const json& t : list.is_array() ? list : json::array()) {
    const json status = t.value("Status", json::object());
    const std::string state = status.value("State", "pending");
    // A task of the agent ends only when it fails (or its agent exits at once, "complete").
    if (state == "failed" || state == "rejected" || state == "complete") {
      ++out.failed;
      out.error = state + ": " + status.value("Err", "");
    }
    if (t.value("DesiredState", "") != "running") continue;
    out.state = state;
    out.node = t.value("NodeID", "");
    if (state == "running") out.running = true;
  }
  return out;
}

Result<Placed> SwarmPlacement::place(const std::string& tenant, const std::string& session,
                                     const Spec& spec, const CancelToken& cancel) {
  if (session.empty() || session.size() > 40 ||
      !std::all_of(session.begin(), session.end(),
                   [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) != 0; })) {
    return invalidArgument("session id '" + session + "' is no service name (letters, digits)");
  }
  const std::string name = "byd-" + session;
  // A named session's workspace is kept in a volume on the node that ran it last: there again
  // while that node lives, else afresh where Swarm places it.
  std::string volume;
  std::optional<Kept> kept;
  std::vector<std::string> constraints;
  if (!spec.named.empty()) {
    volume = keptVolume(tenant, spec.named);
    BYD_ASSIGN_OR_RETURN(kept, keptOn(volume));
    if (kept) {
      BYD_ASSIGN_OR_RETURN(const bool lives, nodeLives(kept->node));
      if (lives) {
        constraints.push_back("node.id==" + kept->node);
      } else {
        spdlog::warn(
            "session '{}' of tenant '{}': its workspace (volume {}) is on node {}, which is "
            "down or gone: it starts afresh on another node",
            spec.named, tenant, volume, kept->node);
        if (Status s = removeConfig(kept->config); !s.ok()) spdlog::warn("{}", s.message());
        kept.reset();
      }
    }
  }
  if (constraints.empty()) {
    BYD_ASSIGN_OR_RETURN(constraints, constraintsFor(spec));
  }
  BYD_ASSIGN_OR_RETURN(json created,
                       client_.request("POST", "/services/create",
                                       serviceSpec(tenant, session, spec, volume, constraints)));
  (void)created;
  const auto fail = [&](Status s) -> Result<Placed> {
    if (Status gone = release(name); !gone.ok()) spdlog::warn("{}", gone.message());
    return s;
  };
  const auto deadline = Clock::now() + options_.ready_timeout;
  Tasks now;
  while (true) {
    if (cancel.cancelled()) return fail(cancelled("cancelled"));
    auto seen = tasks(name);
    if (!seen.ok()) return fail(seen.status());
    now = std::move(*seen);
    if (now.running) break;
    // Swarm starts another task after each failure, by the restart policy: three are enough.
    if (now.failed >= 3) {
      return fail(failedPrecondition("Swarm service " + name + " could not start its agent (" +
                                     std::to_string(now.failed) + " tasks failed; the last " +
                                     now.error + "); it was removed"));
    }
    if (Clock::now() >= deadline) {
      return fail(Status(Code::kDeadlineExceeded,
                         "Swarm service " + name + " was not running within " +
                             std::to_string(options_.ready_timeout.count() / 1000) +
                             " s: its task is " + now.state + "; it was removed"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!volume.empty() && !now.node.empty() && (!kept || kept->node != now.node)) {
    // Where the workspace is, for the next session of that name.
    Status remembered = kept ? removeConfig(kept->config) : okStatus();
    if (remembered.ok()) remembered = rememberNode(volume, tenant, spec.named, now.node);
    if (!remembered.ok()) spdlog::warn("volume {}: {}", volume, remembered.message());
  }
  if (!volume.empty()) {
    std::lock_guard lock(mu_);
    named_volumes_[name] = volume;
  }
  Placed placed;
  placed.claim = name;
  placed.sandbox = now.node.empty() ? name : name + " on node " + now.node.substr(0, 12);
  if (!volume.empty()) placed.sandbox += ", its workspace kept in volume " + volume;
  placed.url = "http://" + name + ":" + std::to_string(options_.agent_port) + "/mcp";
  return placed;
}

Status SwarmPlacement::release(const std::string& service) {
  BYD_RETURN_IF_ERROR(remove("/services/" + urlEncode(service), "Swarm service " + service));
  std::string volume;
  {
    std::lock_guard lock(mu_);
    if (auto it = named_volumes_.find(service); it != named_volumes_.end()) {
      volume = it->second;
      named_volumes_.erase(it);
    }
  }
  if (volume.empty()) return okStatus();
  // --workspace-ttl counts from now.
  BYD_ASSIGN_OR_RETURN(const std::optional<Kept> kept, keptOn(volume));
  return kept ? markClosed(kept->config) : okStatus();
}

std::string SwarmPlacement::keptVolume(const std::string& tenant, const std::string& name) const {
  // By the network too: two fronts' swarms on one engine keep apart.
  auto digest = mcp::sha256Hex(options_.network + "\n" + tenant + "\n" + name);
  return "byd-ws-" + (digest.ok() ? digest->substr(0, 24) : name);
}

Result<std::optional<SwarmPlacement::Kept>> SwarmPlacement::keptOn(
    const std::string& volume) const {
  BYD_ASSIGN_OR_RETURN(json configs,
                       client_.request("GET", "/configs?filters=" + filters("name", volume)));
  for (const json& c : configs.is_array() ? configs : json::array()) {
    const json spec = c.value("Spec", json::object());
    if (spec.value("Name", "") != volume) continue;  // the filter matches a prefix
    const json labels = spec.value("Labels", json::object());
    return std::optional<Kept>(
        Kept{.config = c.value("ID", ""), .node = labels.value(kNodeLabel, "")});
  }
  return std::optional<Kept>();
}

Status SwarmPlacement::rememberNode(const std::string& volume, const std::string& tenant,
                                    const std::string& name, const std::string& node) {
  return client_
      .request("POST", "/configs/create",
               json{{"Name", volume},
                    {"Data", base64Encode(node)},
                    {"Labels",
                     {{kManaged, "swarm"},
                      {kTenantLabel, tenant},
                      {kNamedLabel, name},
                      {kNodeLabel, node}}}})
      .status();
}

Status SwarmPlacement::remove(const std::string& path, const std::string& what) {
  auto r = client_.call("DELETE", path);
  if (!r.ok()) return r.status();
  if (r->status == 200 || r->status == 204 || r->status == 404) return okStatus();
  return failedPrecondition("the engine could not remove " + what + " (HTTP " +
                            std::to_string(r->status) + ": " + r->body.substr(0, 200) + ")");
}

Status SwarmPlacement::removeConfig(const std::string& id) {
  return remove("/configs/" + urlEncode(id), "Swarm config " + id);
}

Status SwarmPlacement::markClosed(const std::string& id) {
  // Only a config's labels may change: its spec is sent back whole, at its version.
  BYD_ASSIGN_OR_RETURN(json config, client_.request("GET", "/configs/" + urlEncode(id)));
  json spec = config.value("Spec", json::object());
  spec["Labels"][kClosedLabel] = unixSecondsNow();
  const int64_t version = config.value("Version", json::object()).value("Index", int64_t{0});
  auto r = client_.call("POST",
                        "/configs/" + urlEncode(id) + "/update?version=" + std::to_string(version),
                        spec.dump());
  if (!r.ok()) return r.status();
  if (r->status == 200) return okStatus();
  return failedPrecondition("the engine could not label Swarm config " + id + " (HTTP " +
                            std::to_string(r->status) + ": " + r->body.substr(0, 200) + ")");
}

Result<std::vector<KeptWorkspace>> SwarmPlacement::keptWorkspaces() {
  BYD_ASSIGN_OR_RETURN(
      json configs,
      client_.request("GET", "/configs?filters=" + filters("label", std::string(kNamedLabel))));
  std::vector<KeptWorkspace> out;
  for (const json& c : configs.is_array() ? configs : json::array()) {
    const json spec = c.value("Spec", json::object());
    const json labels = spec.value("Labels", json::object());
    if (labels.value(kManaged, "") != "swarm" ||
        spec.value("Name", "") !=
            keptVolume(labels.value(kTenantLabel, ""), labels.value(kNamedLabel, ""))) {
      continue;  // another network's, or no workspace's
    }
    KeptWorkspace kept{.tenant = labels.value(kTenantLabel, ""),
                       .name = labels.value(kNamedLabel, ""),
                       .closed = std::chrono::system_clock::now()};
    if (const auto closed = unixSeconds(labels.value(kClosedLabel, ""))) {
      kept.closed = *closed;
    } else if (Status s = markClosed(c.value("ID", "")); !s.ok()) {
      spdlog::warn("{}", s.message());
    }
    out.push_back(std::move(kept));
  }
  return out;
}

Result<bool> SwarmPlacement::nodeLives(const std::string& node) const {
  if (node.empty()) return false;
  auto r = client_.request("GET", "/nodes/" + urlEncode(node));
  if (!r.ok()) {
    if (r.status().code() == Code::kNotFound) return false;
    return r.status();
  }
  return r->value("Spec", json::object()).value("Availability", "") == "active" &&
         r->value("Status", json::object()).value("State", "") == "ready";
}

Status SwarmPlacement::forget(const std::string& tenant, const std::string& name) {
  const std::string volume = keptVolume(tenant, name);
  BYD_ASSIGN_OR_RETURN(const std::optional<Kept> kept, keptOn(volume));
  if (!kept) {
    return notFound("no workspace of session '" + name + "' of tenant '" + tenant + "' is kept");
  }
  BYD_ASSIGN_OR_RETURN(const bool lives, nodeLives(kept->node));
  if (!lives) {
    BYD_RETURN_IF_ERROR(removeConfig(kept->config));
    return failedPrecondition(
        "the workspace of session '" + name + "' (volume " + volume + ") is on node " + kept->node +
        ", which is down or gone: remove it there (docker volume rm " + volume + ")");
  }
  BYD_RETURN_IF_ERROR(removeVolume(volume, kept->node));
  return removeConfig(kept->config);
}

Status SwarmPlacement::removeVolume(const std::string& volume, const std::string& node) {
  // Only the node's engine removes its volume: a job on that node asks it, through its socket,
  // until the session's container that still holds the volume is gone (at most a minute).
  const std::string job = "byd-forget-" + randomHex(6);
  const std::string script =
      "for i in $(seq 120); do c=$(curl -s -o /dev/null -w '%{http_code}' --unix-socket "
      "/var/run/docker.sock -X DELETE http://localhost/volumes/" +
      volume +
      "); case $c in 204|404) exit 0;; esac; sleep 0.5; done; echo \"HTTP $c\" >&2; exit 1";
  const json spec = {
      {"Name", job},
      {"Labels", {{kManaged, "swarm"}, {kFrontLabel, options_.front}}},
      {"TaskTemplate",
       {{"ContainerSpec",
         {{"Image", options_.image},
          {"Command", {"/bin/sh", "-c", script}},
          {"User", "0:0"},
          {"Healthcheck", {{"Test", {"NONE"}}}},
          {"Mounts",
           {{{"Type", "bind"},
             {"Source", "/var/run/docker.sock"},
             {"Target", "/var/run/docker.sock"}}}}}},
        {"Placement", {{"Constraints", {"node.id==" + node}}}},
        {"RestartPolicy", {{"Condition", "none"}}}}},
      {"Mode", {{"ReplicatedJob", {{"MaxConcurrent", 1}, {"TotalCompletions", 1}}}}}};
  BYD_ASSIGN_OR_RETURN(json created, client_.request("POST", "/services/create", spec));
  (void)created;
  const auto deadline = Clock::now() + std::chrono::seconds(90);
  Status done = okStatus();
  while (true) {
    auto seen = client_.request("GET", "/tasks?filters=" + filters("service", job));
    if (!seen.ok()) {
      done = seen.status();
      break;
    }
    std::string state = "pending", error;
    for (const json& t : seen->is_array() ? *seen : json::array()) {
      const json status = t.value("Status", json::object());
      state = status.value("State", "pending");
      error = status.value("Err", "");
    }
    if (state == "complete") break;
    if (state == "failed" || state == "rejected") {
      done = failedPrecondition("node " + node + " could not remove volume " + volume + " (" +
                                state + ": " + error + ")");
      break;
    }
    if (Clock::now() >= deadline) {
      done = Status(Code::kDeadlineExceeded, "node " + node + " did not remove volume " + volume +
                                                 " within 90 s (its job is " + state + ")");
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  if (Status gone = release(job); !gone.ok()) spdlog::warn("{}", gone.message());
  return done;
}

Status SwarmPlacement::releaseAll() {
  BYD_ASSIGN_OR_RETURN(
      json services,
      client_.request("GET", "/services?filters=" + filters("label", std::string(kFrontLabel) +
                                                                         "=" + options_.front)));
  for (const json& s : services.is_array() ? services : json::array()) {
    const std::string name = s.value("Spec", json::object()).value("Name", "");
    if (name.empty()) continue;
    spdlog::info("removing Swarm service {}, left by a previous run of this front", name);
    BYD_RETURN_IF_ERROR(release(name));
  }
  return okStatus();
}

}  // namespace byd::placement
