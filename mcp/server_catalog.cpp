#include "mcp/server.h"

#include "mcp/request_scope.h"
#include "mcp/server_helpers.h"

// The dispatcher's catalog features (resources, templates, subscriptions, prompts and
// completions), which only examples/conformance_server offers.

namespace byd::mcp {

using namespace detail;

Result<json> Server::onListResources(const ListParams& p, const Caller&) {
  std::vector<json> list;
  for (const Resource& r : options_.catalog->resources) list.push_back(r.definition);
  return page(std::move(list), p.cursor, "resources", options_.page_size);
}

Result<json> Server::onListResourceTemplates(const ListParams& p, const Caller&) {
  std::vector<json> list;
  for (const ResourceTemplate& t : options_.catalog->templates) list.push_back(t.definition);
  return page(std::move(list), p.cursor, "resourceTemplates", options_.page_size);
}

Result<json> Server::onReadResource(const UriParams& p, const Caller&) {
  for (const Resource& r : options_.catalog->resources) {
    if (r.definition.value("uri", "") == p.uri) {
      BYD_ASSIGN_OR_RETURN(json contents, r.read(p.uri));
      return json{{"contents", std::move(contents)}};
    }
  }
  for (const ResourceTemplate& t : options_.catalog->templates) {
    if (auto vars = matchUriTemplate(t.definition.value("uriTemplate", ""), p.uri)) {
      BYD_ASSIGN_OR_RETURN(json contents, t.read(p.uri, *vars));
      return json{{"contents", std::move(contents)}};
    }
  }
  return resourceNotFound(p.uri);
}

bool Server::knownResource(const std::string& uri) const {
  for (const Resource& r : options_.catalog->resources) {
    if (r.definition.value("uri", "") == uri) return true;
  }
  for (const ResourceTemplate& t : options_.catalog->templates) {
    if (matchUriTemplate(t.definition.value("uriTemplate", ""), uri)) return true;
  }
  return false;
}

Result<json> Server::onSubscribe(const UriParams& p, const Caller&) {
  if (!knownResource(p.uri)) return resourceNotFound(p.uri);
  std::lock_guard lock(mu_);
  subscriptions_.insert(p.uri);
  return json::object();
}

Result<json> Server::onUnsubscribe(const UriParams& p, const Caller&) {
  std::lock_guard lock(mu_);
  subscriptions_.erase(p.uri);  // unsubscribing from what was never subscribed is no error
  return json::object();
}

void Server::resourceUpdated(const std::string& uri) {
  std::vector<json> listeners;
  bool subscribed;
  {
    std::lock_guard lock(mu_);
    subscribed = subscriptions_.contains(uri);
    for (const auto& [key, l] : listeners_) {
      if (l.active && l.uris.contains(uri)) listeners.push_back(l.id);
    }
  }
  if (subscribed) {
    transport_.send(makeNotification("notifications/resources/updated", {{"uri", uri}}));
  }
  for (const json& id : listeners) {
    const RequestScope scope(id);  // on that listener's stream
    transport_.send(makeNotification(
        "notifications/resources/updated",
        {{"_meta", {{std::string(stateless::kMetaSubscriptionId), id}}}, {"uri", uri}}));
  }
}

void Server::listChanged(std::string_view list) {
  const std::string method = "notifications/" + std::string(list) + "/list_changed";
  const std::string key = std::string(list) + "ListChanged";
  std::vector<json> listeners;
  bool session;
  {
    std::lock_guard lock(mu_);
    session = !protocol_version_.empty();
    for (const auto& [k, l] : listeners_) {
      if (l.active && l.honored.value(key, false)) listeners.push_back(l.id);
    }
  }
  const json caps = capabilities();
  if (session && caps.contains(list) && caps[std::string(list)].value("listChanged", false)) {
    transport_.send(makeNotification(method, nullptr));
  }
  for (const json& id : listeners) {
    const RequestScope scope(id);
    transport_.send(
        makeNotification(method, {{"_meta", {{std::string(stateless::kMetaSubscriptionId), id}}}}));
  }
}

const json* Server::catalogToolDefinition(std::string_view name) const {
  const CatalogTool* tool = findCatalogTool(name);
  return tool != nullptr ? &tool->definition : nullptr;
}

Result<json> Server::onListPrompts(const ListParams& p, const Caller&) {
  std::vector<json> list;
  for (const Prompt& prompt : options_.catalog->prompts) list.push_back(prompt.definition);
  return page(std::move(list), p.cursor, "prompts", options_.page_size);
}

Result<json> Server::onGetPrompt(const GetPromptParams& p, const Caller& caller) {
  for (const Prompt& prompt : options_.catalog->prompts) {
    if (prompt.definition.value("name", "") != p.name) continue;
    for (const json& arg : prompt.definition.value("arguments", json::array())) {
      const std::string name = arg.value("name", "");
      if (arg.value("required", false) && !p.arguments.contains(name)) {
        return invalidArgument("prompt " + p.name + " needs the argument '" + name + "'");
      }
    }
    return withPeer("prompts/get", p.name, json(p.arguments), p.input, nullptr, caller,
                    [&](Peer& peer) { return prompt.get(p.arguments, peer); });
  }
  return invalidArgument("unknown prompt: " + p.name);
}

Result<json> Server::onComplete(const CompleteParams& p, const Caller&) {
  const std::string type = p.ref.value("type", "");
  bool known = false;
  if (type == "ref/prompt") {
    const std::string name = p.ref.value("name", "");
    for (const Prompt& prompt : options_.catalog->prompts) {
      known = known || prompt.definition.value("name", "") == name;
    }
    if (!known) return invalidArgument("unknown prompt: " + name);
  } else {
    const std::string uri = p.ref.value("uri", "");
    for (const ResourceTemplate& t : options_.catalog->templates) {
      known = known || t.definition.value("uriTemplate", "") == uri;
    }
    if (!known) return invalidArgument("unknown resource template: " + uri);
  }
  BYD_ASSIGN_OR_RETURN(std::vector<std::string> values,
                       options_.catalog->complete(p.ref, p.argument, p.value, p.context));
  constexpr size_t kMaxValues = 100;  // the most one answer may carry
  const size_t total = values.size();
  if (values.size() > kMaxValues) values.resize(kMaxValues);
  return json{
      {"completion", {{"values", values}, {"total", total}, {"hasMore", total > kMaxValues}}}};
}

}  // namespace byd::mcp
