#include "placement/kubernetes.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <sstream>

#include <spdlog/spdlog.h>

#include "backends/docker/lazy_libs.h"
#include "common/text.h"
#include "mcp/crypto.h"

namespace byd::placement {

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

constexpr const char* kClaimsApi = "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/";
constexpr const char* kSandboxesApi = "/apis/agents.x-k8s.io/v1beta1/namespaces/";
constexpr const char* kPodsApi = "/api/v1/namespaces/";
constexpr const char* kFrontLabel = "backyard-mcp/front";
constexpr const char* kNamedLabel = "backyard-mcp/named";
constexpr const char* kTenantNote = "backyard-mcp/tenant";
constexpr const char* kNameNote = "backyard-mcp/name";
constexpr const char* kClosedNote = "backyard-mcp/closed";  // unix seconds

std::string claimName(const json& claim) {
  return claim.is_object() ? claim.value("metadata", json::object()).value("name", "") : "";
}

// The Sandbox a claim was given (a cold start's is named as the claim).
std::string claimSandbox(const json& claim) {
  const std::string given =
      claim.value("status", json::object()).value("sandbox", json::object()).value("name", "");
  return given.empty() ? claimName(claim) : given;
}
constexpr const char* kServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";
constexpr size_t kMaxBody = 16 << 20;

// The first line of a file; "" when it cannot be read.
std::string firstLine(const std::string& path) { return firstLineOf(path).value_or(""); }

// What a request's callbacks share.
struct Transfer {
  const docker::CurlApi* api = nullptr;
  CURL* easy = nullptr;
  std::string failure;  // why an event could not be read
  const std::function<bool(const std::string&)>* line = nullptr;
  const CancelToken* cancel = nullptr;
  std::string body;      // the whole body, or (lines) the part not yet ended by a newline
  bool stopped = false;  // `line` asked to stop
  bool too_large = false;

  static size_t onBody(char* ptr, size_t size, size_t n, void* user) {
    auto* t = static_cast<Transfer*>(user);
    const size_t len = size * n;
    if (t->body.size() + len > kMaxBody) {
      t->too_large = true;
      return 0;
    }
    t->body.append(ptr, len);
    if (t->line == nullptr || !*t->line) return len;
    // Events come with a 200; another status's body (the server's Status) is kept whole.
    long status = 0;
    t->api->easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
    if (status != 200) return len;
    size_t start = 0;
    try {
      for (size_t nl; (nl = t->body.find('\n', start)) != std::string::npos; start = nl + 1) {
        if (nl > start && !(*t->line)(t->body.substr(start, nl - start))) {
          t->stopped = true;
          return 0;
        }
      }
    } catch (const std::exception& e) {  // an event of an unexpected shape
      t->failure = e.what();
      return 0;
    }
    t->body.erase(0, start);
    return len;
  }
  static int onProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    auto* t = static_cast<Transfer*>(user);
    return t->cancel != nullptr && t->cancel->cancelled() ? 1 : 0;
  }
};

// The message of the API server's Status object in `body`, else the body's start.
std::string statusMessage(const std::string& body) {
  json status = json::parse(body, nullptr, false);
  if (status.is_object() && status.contains("message") && status["message"].is_string()) {
    return status["message"].get<std::string>();
  }
  return body.substr(0, 200);
}

std::string condition(const json& object, const std::string& type, const std::string& field) {
  const json conditions = object.value("status", json::object()).value("conditions", json::array());
  if (!conditions.is_array()) return "";
  for (const json& c : conditions) {
    if (c.is_object() && c.value("type", "") == type) return c.value(field, "");
  }
  return "";
}

// A label value: at most 63 of [A-Za-z0-9-_.], beginning and ending alphanumeric.
bool labelValue(const std::string& v) {
  if (v.empty() || v.size() > 63 || !std::isalnum(static_cast<unsigned char>(v.front())) ||
      !std::isalnum(static_cast<unsigned char>(v.back()))) {
    return false;
  }
  return std::all_of(v.begin(), v.end(), [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.';
  });
}

std::string seconds(std::chrono::milliseconds ms) {
  return std::to_string(std::max<int64_t>(1, (ms.count() + 999) / 1000));
}

}  // namespace

Result<KubernetesOptions> inClusterOptions() {
  const char* host = getenv("KUBERNETES_SERVICE_HOST");
  const char* port = getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || port == nullptr) {
    return failedPrecondition(
        "not in a Kubernetes pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not "
        "set");
  }
  KubernetesOptions options;
  const std::string h = host;
  options.api_server =
      "https://" + (h.find(':') != std::string::npos ? "[" + h + "]" : h) + ":" + port;
  const std::string dir = kServiceAccountDir;
  options.ca_file = dir + "/ca.crt";
  options.token_file = dir + "/token";
  options.namespace_ = firstLine(dir + "/namespace");
  if (options.namespace_.empty()) {
    return failedPrecondition("no service account namespace in " + dir +
                              "/namespace: is the token mounted (automountServiceAccountToken)?");
  }
  return options;
}

KubernetesPlacement::KubernetesPlacement(KubernetesOptions options)
    : options_(std::move(options)) {}

std::string KubernetesPlacement::claimsPath() const {
  return kClaimsApi + options_.namespace_ + "/sandboxclaims";
}

Result<KubernetesPlacement::Reply> KubernetesPlacement::request(
    const std::string& verb, const std::string& path, const json& body, const CancelToken& cancel,
    const std::function<bool(const std::string&)>& line, std::chrono::milliseconds timeout) {
  BYD_ASSIGN_OR_RETURN(const docker::CurlApi* api, docker::curlApi());
  const docker::CurlApi& c = *api;
  std::unique_ptr<CURL, void (*)(CURL*)> easy(c.easy_init(), c.easy_cleanup);
  if (!easy) return internalError("cannot make a libcurl handle");
  curl_slist* headers = nullptr;
  std::unique_ptr<curl_slist, void (*)(curl_slist*)> header_list(nullptr, c.slist_free_all);
  std::vector<std::string> lines = {"Accept: application/json"};
  if (!body.is_null()) {
    lines.push_back(verb == "PATCH" ? "Content-Type: application/merge-patch+json"
                                    : "Content-Type: application/json");
  }
  if (!options_.token_file.empty()) {
    const std::string token = firstLine(options_.token_file);
    if (token.empty()) {
      return failedPrecondition("the service account token " + options_.token_file +
                                " cannot be read");
    }
    lines.push_back("Authorization: Bearer " + token);
  }
  for (const std::string& l : lines) headers = c.slist_append(headers, l.c_str());
  header_list.reset(headers);
  const std::string url = options_.api_server + path;
  const std::string payload = body.is_null() ? "" : body.dump();
  Transfer t;
  t.api = &c;
  t.easy = easy.get();
  t.line = &line;
  t.cancel = &cancel;
  CURL* e = easy.get();
  c.easy_setopt(e, CURLOPT_URL, url.c_str());
  c.easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  c.easy_setopt(e, CURLOPT_CUSTOMREQUEST, verb.c_str());
  c.easy_setopt(e, CURLOPT_HTTPHEADER, headers);
  if (!body.is_null()) {
    c.easy_setopt(e, CURLOPT_POSTFIELDS, payload.data());
    c.easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(payload.size()));
  }
  if (!options_.ca_file.empty()) c.easy_setopt(e, CURLOPT_CAINFO, options_.ca_file.c_str());
  c.easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
  const auto limit = timeout.count() > 0 ? timeout : options_.request_timeout;
  c.easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(limit.count()));
  c.easy_setopt(e, CURLOPT_WRITEFUNCTION, &Transfer::onBody);
  c.easy_setopt(e, CURLOPT_WRITEDATA, &t);
  c.easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
  c.easy_setopt(e, CURLOPT_XFERINFOFUNCTION, &Transfer::onProgress);
  c.easy_setopt(e, CURLOPT_XFERINFODATA, &t);
  const CURLcode rc = c.easy_perform(e);
  Reply reply;
  c.easy_getinfo(e, CURLINFO_RESPONSE_CODE, &reply.status);
  if (cancel.cancelled()) return cancelled("cancelled");
  if (rc == CURLE_OPERATION_TIMEDOUT && line != nullptr && reply.status == 200) {
    return reply;  // a watch that ran to its end: resumed by the caller
  }
  if (!t.failure.empty()) {
    return failedPrecondition("the Kubernetes API server sent an event of an unexpected shape on " +
                              path + ": " + t.failure);
  }
  if (rc != CURLE_OK && !(rc == CURLE_WRITE_ERROR && t.stopped)) {
    return failedPrecondition(
        "the Kubernetes API server at " + options_.api_server + " did not answer " + verb + " " +
        path + ": " +
        (t.too_large ? std::string("its answer is too large") : std::string(c.easy_strerror(rc))));
  }
  reply.body = std::move(t.body);
  return reply;
}

Status KubernetesPlacement::apiError(const std::string& what, const Reply& reply) const {
  const std::string detail =
      what + " (HTTP " + std::to_string(reply.status) + ": " + statusMessage(reply.body) + ")";
  switch (reply.status) {
    case 401:
    case 403:
      return permissionDenied("the Kubernetes API server refused to " + detail +
                              ": the front's service account needs the Role of "
                              "deploy/kubernetes/front-rbac.yaml in namespace " +
                              options_.namespace_);
    case 404:
      return notFound("the Kubernetes API server found nothing to " + detail +
                      ": is agent-sandbox (v0.5 or later) installed?");
    case 409:
      return alreadyExists("the Kubernetes API server could not " + detail);
    default:
      return failedPrecondition("the Kubernetes API server could not " + detail);
  }
}

bool KubernetesPlacement::ready(const json& claim, std::string* sandbox, std::string* waiting) {
  const std::string status = condition(claim, "Ready", "status");
  const std::string name =
      claim.value("status", json::object()).value("sandbox", json::object()).value("name", "");
  if (status == "True" && !name.empty()) {
    *sandbox = name;
    return true;
  }
  if (!status.empty()) {
    *waiting = "Ready " + status + ", " + condition(claim, "Ready", "reason") + ": " +
               condition(claim, "Ready", "message");
  }
  return false;
}

Result<std::string> KubernetesPlacement::sandboxUrl(const std::string& sandbox,
                                                    const CancelToken& cancel) {
  BYD_ASSIGN_OR_RETURN(Reply r,
                       request("GET", kSandboxesApi + options_.namespace_ + "/sandboxes/" + sandbox,
                               nullptr, cancel));
  if (r.status != 200) return apiError("read Sandbox " + sandbox, r);
  const json object = json::parse(r.body, nullptr, false);
  const std::string fqdn =
      object.is_object() ? object.value("status", json::object()).value("serviceFQDN", "") : "";
  if (fqdn.empty()) {
    return failedPrecondition("Sandbox " + sandbox +
                              " has no Service (its status.serviceFQDN is empty): the "
                              "SandboxTemplate of warm pool " +
                              options_.warm_pool + " needs `service: true`");
  }
  return "http://" + fqdn + ":" + std::to_string(options_.agent_port) + options_.agent_path;
}

Result<Placed> KubernetesPlacement::place(const std::string& tenant, const std::string& session,
                                          const Spec& spec, const CancelToken& cancel) {
  if (!spec.runtime.empty()) {
    return invalidArgument("runtime '" + spec.runtime + "': the warm pool's SandboxTemplate " +
                           "names the image and limits of every sandbox it claims from");
  }
  if (!labelValue(session)) {
    return invalidArgument("session id '" + session +
                           "' is no Kubernetes label value (at most 63 letters, digits, '-', "
                           "'_' or '.', beginning and ending with a letter or digit)");
  }
  // The session is a label (claims are found by it), and so is the front; the tenant's name,
  // which may be no label value, an annotation.
  json labels = {{"app.kubernetes.io/managed-by", "backyard-mcp"},
                 {"backyard-mcp/session", session}};
  if (labelValue(options_.front)) labels[kFrontLabel] = options_.front;
  json annotations = {{kTenantNote, tenant}};
  json claim_spec = {{"warmPoolRef", {{"name", options_.warm_pool}}}};
  const bool named = !spec.named.empty();
  if (named) {
    const std::string key = namedKey(tenant, spec.named);
    BYD_ASSIGN_OR_RETURN(std::optional<json> kept, namedClaim(key));
    if (kept) {
      // Resumed: the claim is this session's now, and its Sandbox runs again.
      const std::string name = claimName(*kept);
      const std::string sandbox = claimSandbox(*kept);
      json resumed;
      BYD_RETURN_IF_ERROR(patch(claimsPath() + "/" + name,
                                {{"metadata",
                                  {{"labels",
                                    {{"backyard-mcp/session", session},
                                     {kFrontLabel, labels.value(kFrontLabel, json())}}},
                                   {"annotations", {{kClosedNote, nullptr}}}}}},
                                "take SandboxClaim " + name, &resumed));
      BYD_RETURN_IF_ERROR(patch(kSandboxesApi + options_.namespace_ + "/sandboxes/" + sandbox,
                                {{"spec", {{"operatingMode", "Running"}}}},
                                "resume Sandbox " + sandbox));
      return waitReady(std::move(resumed), true, cancel);
    }
    labels[kNamedLabel] = key;
    annotations[kNameNote] = spec.named;
    // Its workspace a PVC of its own, in place of the template's volume of that name.
    claim_spec["volumeClaimTemplates"] = {
        {{"metadata", {{"name", "workspace"}}},
         {"spec",
          {{"accessModes", {"ReadWriteOnce"}},
           {"resources", {{"requests", {{"storage", options_.workspace_size}}}}}}}}};
  }
  const json claim_body = {
      {"apiVersion", "extensions.agents.x-k8s.io/v1beta1"},
      {"kind", "SandboxClaim"},
      {"metadata", {{"generateName", "byd-"}, {"labels", labels}, {"annotations", annotations}}},
      {"spec", claim_spec}};
  // The claim is made whatever happens meanwhile: a create cut short may have been made all
  // the same, and is then found by its label and deleted.
  const CancelToken never;
  Reply created;
  for (int attempt = 0;; ++attempt) {
    auto sent = request("POST", claimsPath(), claim_body, never);
    if (!sent.ok()) {
      if (Status s = releaseSession(session); !s.ok()) spdlog::warn("{}", s.message());
      return sent.status();
    }
    created = std::move(*sent);
    // A generated name that another claim took meanwhile: the server says so with 409, and a
    // new one is generated on the next try.
    if (created.status == 409 && attempt == 0) continue;
    break;
  }
  if (created.status != 201 && created.status != 200) {
    return apiError("create a SandboxClaim in namespace " + options_.namespace_, created);
  }
  return waitReady(json::parse(created.body, nullptr, false), named, cancel);
}

Result<Placed> KubernetesPlacement::waitReady(json claim, bool named, const CancelToken& cancel) {
  const std::string name = claimName(claim);
  if (name.empty()) return internalError("the API server answered a claim without a name");
  std::string rv = claim["metadata"].value("resourceVersion", "0");
  Placed placed;
  placed.claim = name;
  const std::string sandbox = claimSandbox(claim);  // for a suspend
  const auto fail = [&](Status s) -> Result<Placed> {
    // A named session's claim keeps its workspace: suspended, not deleted.
    if (Status gone = named ? suspend(name, sandbox) : release(name); !gone.ok()) {
      spdlog::warn("{}", gone.message());
    }
    return s;
  };
  if (cancel.cancelled()) return fail(cancelled("cancelled"));
  std::string waiting = "no Ready condition yet";
  const auto deadline = Clock::now() + options_.ready_timeout;
  while (!ready(claim, &placed.sandbox, &waiting)) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      return fail(Status(Code::kDeadlineExceeded,
                         "SandboxClaim " + name + " (warm pool " + options_.warm_pool +
                             ") was not ready within " + seconds(options_.ready_timeout) + " s: " +
                             waiting + (named ? "; it was suspended" : "; it was deleted")));
    }
    const auto piece = std::min(left, options_.request_timeout);
    bool gone = false, deleted = false;
    std::string watch_error;
    const std::string path =
        claimsPath() + "?watch=1&allowWatchBookmarks=true&fieldSelector=" + "metadata.name%3D" +
        name + "&resourceVersion=" + rv + "&timeoutSeconds=" + seconds(piece);
    auto watched = request(
        "GET", path, nullptr, cancel,
        [&](const std::string& line) {
          const json event = json::parse(line, nullptr, false);
          if (!event.is_object()) return true;
          const std::string type = event.value("type", "");
          if (type != "ADDED" && type != "MODIFIED" && type != "DELETED" && type != "BOOKMARK" &&
              type != "ERROR") {
            return true;  // not an event
          }
          const json object = event.value("object", json::object());
          if (type == "ERROR") {
            if (object.value("code", 0) == 410) {
              gone = true;
            } else {
              watch_error = object.value("message", line);
            }
            return false;
          }
          if (object.is_object() && object.contains("metadata")) {
            rv = object["metadata"].value("resourceVersion", rv);
          }
          if (type == "DELETED") {
            deleted = true;
            return false;
          }
          if (type == "BOOKMARK") return true;
          claim = object;
          return !ready(claim, &placed.sandbox, &waiting);
        },
        // The server ends the watch at timeoutSeconds; the client's deadline bounds it too.
        std::min<std::chrono::milliseconds>(piece + std::chrono::seconds(5),
                                            left + std::chrono::milliseconds(500)));
    if (!watched.ok()) return fail(watched.status());
    if (watched->status == 410) gone = true;
    if (!gone && watched->status != 200) {
      return fail(apiError("watch SandboxClaim " + name, *watched));
    }
    if (!watch_error.empty())
      return fail(failedPrecondition("watching SandboxClaim " + name + " failed: " + watch_error));
    if (deleted) {
      return failedPrecondition("SandboxClaim " + name +
                                " was deleted (by another hand) before it was ready");
    }
    if (gone) {
      // The server no longer has the history from `rv`: the claim as it is now, and a watch
      // from there.
      BYD_ASSIGN_OR_RETURN(Reply now, request("GET", claimsPath() + "/" + name, nullptr, cancel));
      if (now.status == 404) {
        return failedPrecondition("SandboxClaim " + name + " was deleted before it was ready");
      }
      if (now.status != 200) return fail(apiError("read SandboxClaim " + name, now));
      claim = json::parse(now.body, nullptr, false);
      if (!claim.is_object()) return fail(internalError("the claim read back is not JSON"));
      rv = claim.value("metadata", json::object()).value("resourceVersion", "0");
    }
  }
  auto url = sandboxUrl(placed.sandbox, cancel);
  if (!url.ok()) return fail(url.status());
  placed.url = *url;
  if (named) {
    std::lock_guard lock(mu_);
    named_claims_[name] = placed.sandbox;
  }
  return placed;
}

std::string KubernetesPlacement::namedKey(const std::string& tenant,
                                          const std::string& name) const {
  auto digest = mcp::sha256Hex(options_.namespace_ + "\n" + tenant + "\n" + name);
  return digest.ok() ? digest->substr(0, 40) : "0";
}

Result<std::optional<json>> KubernetesPlacement::namedClaim(const std::string& key) {
  CancelToken never;
  BYD_ASSIGN_OR_RETURN(Reply found,
                       request("GET", claimsPath() + "?labelSelector=backyard-mcp%2Fnamed%3D" + key,
                               nullptr, never));
  if (found.status != 200) return apiError("list the claims of a named session", found);
  const json list = json::parse(found.body, nullptr, false);
  if (list.is_object() && list.contains("items") && list["items"].is_array()) {
    for (const json& item : list["items"]) {
      if (!claimName(item).empty()) return std::optional<json>(item);
    }
  }
  return std::optional<json>();
}

Status KubernetesPlacement::patch(const std::string& path, const json& body,
                                  const std::string& what, json* answer) {
  CancelToken never;
  BYD_ASSIGN_OR_RETURN(Reply r, request("PATCH", path, body, never));
  if (r.status != 200) return apiError(what, r);
  if (answer != nullptr) *answer = json::parse(r.body, nullptr, false);
  return okStatus();
}

Status KubernetesPlacement::suspend(const std::string& name, const std::string& sandbox) {
  BYD_RETURN_IF_ERROR(patch(kSandboxesApi + options_.namespace_ + "/sandboxes/" + sandbox,
                            {{"spec", {{"operatingMode", "Suspended"}}}},
                            "suspend Sandbox " + sandbox));
  return patch(claimsPath() + "/" + name,
               {{"metadata", {{"annotations", {{kClosedNote, unixSecondsNow()}}}}}},
               "note when SandboxClaim " + name + "'s session ended");
}

Status KubernetesPlacement::forget(const std::string& tenant, const std::string& name) {
  BYD_ASSIGN_OR_RETURN(std::optional<json> kept, namedClaim(namedKey(tenant, name)));
  if (!kept) {
    return notFound("no workspace of session '" + name + "' of tenant '" + tenant + "' is kept");
  }
  const std::string name_of = claimName(*kept);
  {
    std::lock_guard lock(mu_);
    named_claims_.erase(name_of);  // deleted, not suspended
  }
  return release(name_of);  // its Sandbox and PVC go with it
}

Result<std::vector<KeptWorkspace>> KubernetesPlacement::keptWorkspaces() {
  CancelToken never;
  BYD_ASSIGN_OR_RETURN(
      Reply found,
      request("GET", claimsPath() + "?labelSelector=backyard-mcp%2Fnamed", nullptr, never));
  if (found.status != 200) return apiError("list the claims of named sessions", found);
  const json list = json::parse(found.body, nullptr, false);
  std::vector<KeptWorkspace> out;
  if (!list.is_object() || !list.contains("items") || !list["items"].is_array()) return out;
  for (const json& item : list["items"]) {
    if (!item.is_object()) continue;
    const json notes = item.value("metadata", json::object()).value("annotations", json::object());
    KeptWorkspace kept{.tenant = notes.value(kTenantNote, ""),
                       .name = notes.value(kNameNote, ""),
                       .closed = std::chrono::system_clock::now()};
    if (kept.name.empty()) continue;
    if (const auto closed = unixSeconds(notes.value(kClosedNote, ""))) {
      kept.closed = *closed;
    } else if (Status s =
                   patch(claimsPath() + "/" + claimName(item),
                         {{"metadata", {{"annotations", {{kClosedNote, unixSecondsNow()}}}}}},
                         "note when SandboxClaim " + claimName(item) + " was seen");
               !s.ok()) {
      spdlog::warn("{}", s.message());  // counted from now (and again at the next look)
    }
    out.push_back(std::move(kept));
  }
  return out;
}

Status KubernetesPlacement::releaseSession(const std::string& session) {
  CancelToken never;
  BYD_ASSIGN_OR_RETURN(
      Reply found,
      request("GET", claimsPath() + "?labelSelector=backyard-mcp%2Fsession%3D" + session, nullptr,
              never));
  if (found.status != 200) return apiError("list the claims of session " + session, found);
  const json list = json::parse(found.body, nullptr, false);
  if (!list.is_object() || !list.contains("items") || !list["items"].is_array()) return okStatus();
  for (const json& item : list["items"]) {
    const std::string name =
        item.is_object() ? item.value("metadata", json::object()).value("name", "") : "";
    if (!name.empty()) BYD_RETURN_IF_ERROR(release(name));
  }
  return okStatus();
}

Result<size_t> KubernetesPlacement::releaseOrphans() {
  CancelToken never;
  BYD_ASSIGN_OR_RETURN(
      Reply found,
      request("GET", claimsPath() + "?labelSelector=app.kubernetes.io%2Fmanaged-by%3Dbackyard-mcp",
              nullptr, never));
  if (found.status != 200) return apiError("list the claims backyard-mcp made", found);
  const json list = json::parse(found.body, nullptr, false);
  if (!list.is_object() || !list.contains("items") || !list["items"].is_array()) return 0;
  std::map<std::string, bool> lives;  // by pod name
  size_t deleted = 0;
  for (const json& item : list["items"]) {
    if (!item.is_object()) continue;
    const json meta = item.value("metadata", json::object());
    const std::string name = meta.value("name", "");
    const std::string front = meta.value("labels", json::object()).value(kFrontLabel, "");
    if (name.empty() || front.empty()) continue;  // none of a front's (made before the label)
    if (front != options_.front && !lives.contains(front)) {
      BYD_ASSIGN_OR_RETURN(
          Reply pod,
          request("GET", kPodsApi + options_.namespace_ + "/pods/" + front, nullptr, never));
      if (pod.status != 200 && pod.status != 404) {
        return apiError(
            "read pod " + front + " (whether the front that made claim " + name + " lives)", pod);
      }
      lives[front] = pod.status == 200;
    }
    if (front != options_.front && lives[front]) continue;
    const std::string by = front == options_.front ? "an earlier run of this front"
                                                   : "front " + front + ", which is gone";
    if (meta.value("labels", json::object()).contains(kNamedLabel)) {
      // A named session's is kept: suspended (already, unless its front died while it ran).
      if (meta.value("annotations", json::object()).contains(kClosedNote)) continue;
      spdlog::info("suspending SandboxClaim {} of a named session, left by {}", name, by);
      BYD_RETURN_IF_ERROR(suspend(name, claimSandbox(item)));
    } else {
      spdlog::info("deleting SandboxClaim {}, left by {}", name, by);
      BYD_RETURN_IF_ERROR(release(name));
    }
    ++deleted;
  }
  return deleted;
}

Status KubernetesPlacement::release(const std::string& claim) {
  std::string sandbox;
  {
    std::lock_guard lock(mu_);
    if (auto it = named_claims_.find(claim); it != named_claims_.end()) {
      sandbox = it->second;
      named_claims_.erase(it);
    }
  }
  if (!sandbox.empty()) {
    return suspend(claim, sandbox);
  }
  CancelToken never;
  BYD_ASSIGN_OR_RETURN(Reply r, request("DELETE", claimsPath() + "/" + claim, nullptr, never));
  if (r.status == 200 || r.status == 202 || r.status == 404) return okStatus();
  return apiError("delete SandboxClaim " + claim, r);
}

}  // namespace byd::placement
