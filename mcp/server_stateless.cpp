#include "mcp/server.h"

#include <spdlog/spdlog.h>

#include "mcp/request_scope.h"
#include "mcp/server_helpers.h"

// The dispatcher's side of the stateless revision (2026-07-28): requests that carry their
// session's facts in _meta, their results' metadata, and subscriptions/listen streams.

namespace byd::mcp {

using namespace detail;

namespace {

// Stateless results of these methods say how long a client may cache them (2026-07-28).
bool cacheable(std::string_view method) {
  return method == "server/discover" || method == "tools/list" || method == "prompts/list" ||
         method == "resources/list" || method == "resources/templates/list" ||
         method == "resources/read";
}

}  // namespace

void Server::handleStateless(Message m, const Sink& sink) {
  auto meta = stateless::readMeta(m.params);
  if (auto* e = std::get_if<stateless::MetaError>(&meta)) {
    deliver(sink, makeError(m.id, e->code, e->message, e->data));
    return;
  }
  const auto& request = std::get<stateless::RequestMeta>(meta);
  Caller caller{request.version, request.capabilities, request.log_level, true, CancelToken()};
  if (m.method == "subscriptions/listen") {
    startListen(m, sink, caller);
    return;
  }
  auto it = methods_.find(m.method);
  if (it == methods_.end() || !it->second.stateless) {
    deliver(sink,
            makeError(m.id, rpc::kMethodNotFound,
                      "method not found: " + m.method +
                          (it == methods_.end() ? "" : " (not part of the stateless revision)")));
    return;
  }
  serve(std::move(m), sink, std::move(caller), it->second);
}

json Server::finishStateless(const std::string& method, json result) const {
  if (!result.is_object()) return result;
  if (!result.contains("resultType")) result["resultType"] = "complete";
  result["_meta"][std::string(stateless::kMetaServerInfo)] = {{"name", options_.name},
                                                              {"version", options_.version}};
  if (result["resultType"] == "complete" && cacheable(method)) {
    // Reads follow the files they show; lists change only with the server's configuration.
    const bool read = method == "resources/read" || method == "resources/list";
    result["ttlMs"] = read ? 0 : 60000;
    result["cacheScope"] = "private";
  }
  return result;
}

void Server::startListen(const Message& m, const Sink& sink, const Caller& caller) {
  const json filter = m.params.is_object() ? m.params.value("notifications", json()) : json();
  if (!filter.is_object()) {
    deliver(sink, makeError(m.id, rpc::kInvalidParams,
                            "params.notifications is required and must be an object"));
    return;
  }
  const json caps = capabilities();
  json honored = json::object();
  for (const char* list : {"tools", "prompts", "resources"}) {
    const std::string key = std::string(list) + "ListChanged";
    const auto wanted = filter.find(key);
    if (wanted != filter.end() && *wanted == true && caps.contains(list) &&
        caps[list].value("listChanged", false)) {
      honored[key] = true;
    }
  }
  Listener listener{m.id, json::object(), {}, false};
  if (auto uris = filter.find("resourceSubscriptions");
      uris != filter.end() && uris->is_array() && caps.contains("resources")) {
    for (const json& uri : *uris) {
      if (uri.is_string() && knownResource(uri.get<std::string>())) {
        listener.uris.insert(uri.get<std::string>());
      }
    }
    honored["resourceSubscriptions"] = listener.uris;
  }
  listener.honored = honored;
  {
    std::lock_guard lock(mu_);
    if (in_flight_.contains(idKey(m.id)) || listeners_.contains(idKey(m.id))) {
      deliver(sink, makeError(m.id, rpc::kInvalidRequest,
                              "request id " + idKey(m.id) + " is already in use"));
      return;
    }
    if (listeners_.size() >= options_.max_listeners) {
      deliver(sink, makeError(m.id, rpc::kInvalidRequest,
                              "too many open subscriptions (" +
                                  std::to_string(options_.max_listeners) + ")"));
      return;
    }
    listeners_.emplace(idKey(m.id), std::move(listener));  // inactive until acknowledged
  }
  deliver(sink, std::nullopt);  // the stream stays open: nothing goes into a batch
  spdlog::info("<- subscriptions/listen {} (stateless) for {}", idKey(m.id), honored.dump());
  {
    const RequestScope scope(m.id);  // the acknowledgement opens the listen stream
    transport_.send(
        makeNotification("notifications/subscriptions/acknowledged",
                         {{"_meta", {{std::string(stateless::kMetaSubscriptionId), m.id}}},
                          {"notifications", honored}}));
  }
  std::lock_guard lock(mu_);
  if (auto it = listeners_.find(idKey(m.id)); it != listeners_.end()) it->second.active = true;
  (void)caller;
}

}  // namespace byd::mcp
