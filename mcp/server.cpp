#include "mcp/server.h"

#include <chrono>

#include <spdlog/spdlog.h>

#include "common/memory.h"
#include "mcp/elicitation.h"
#include "mcp/request_scope.h"
#include "mcp/server_helpers.h"
#include "permissions/guarded_backend.h"
#include "schemas/validator.h"
#include "tools/registry.h"

namespace byd::mcp {
namespace detail {

std::string idKey(const json& id) { return serialize(id); }

double msSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// One page of `items` as {key: [...], nextCursor}. Cursors are opaque to clients; ours are
// "<key>:<index>".
Result<json> page(std::vector<json> items, const std::optional<std::string>& cursor,
                  const std::string& key, size_t page_size) {
  size_t begin = 0;
  if (cursor) {
    const std::string& c = *cursor;
    const size_t digits = key.size() + 1;
    if (!c.starts_with(key + ":") || c.size() == digits || c.size() > digits + 10 ||
        c.find_first_not_of("0123456789", digits) != std::string::npos) {
      return invalidArgument("invalid cursor");
    }
    begin = std::stoul(c.substr(digits));
    if (begin > items.size()) return invalidArgument("invalid cursor");
  }
  const size_t end = std::min(items.size(), begin + std::max<size_t>(page_size, 1));
  json list = json::array();
  for (size_t i = begin; i < end; ++i) list.push_back(std::move(items[i]));
  json result = {{key, std::move(list)}};
  if (end < items.size()) result["nextCursor"] = key + ":" + std::to_string(end);
  return result;
}

// What a client at `version` understands of a tool definition: titles and output schemas
// came with 2025-06-18, annotations with 2025-03-26.
json toolForVersion(json tool, const std::string& version) {
  if (!atLeast(version, "2025-06-18")) {
    tool.erase("title");
    tool.erase("outputSchema");
  }
  if (!atLeast(version, "2025-03-26")) tool.erase("annotations");
  return tool;
}

// The capability a client must have declared to be asked `method`.
const char* capabilityFor(std::string_view method) {
  if (method == "sampling/createMessage") return "sampling";
  if (method == "elicitation/create") return "elicitation";
  if (method == "roots/list") return "roots";
  return nullptr;
}

Status checkQuestions(const json& questions, const std::function<bool(const char*)>& has,
                      const std::function<bool(const std::string&, const std::string&)>& answered) {
  if (!questions.is_object()) return invalidArgument("questions must be an object");
  for (const auto& [key, q] : questions.items()) {
    const std::string method = q.value("method", "");
    const char* capability = capabilityFor(method);
    if (capability == nullptr) return invalidArgument("cannot ask the client " + method);
    if (!has(capability) && !answered(key, method)) return missingCapability(capability, method);
  }
  return okStatus();
}

Status missingCapability(std::string_view capability, std::string_view method) {
  return failedPrecondition("the client did not declare the capability " + std::string(capability) +
                            " that " + std::string(method) + " needs")
      .withDetail(kCapabilityDetail, std::string(capability));
}

Status resourceNotFound(const std::string& uri) {
  return notFound("resource not found: " + uri).withDetail(kUriDetail, uri);
}

}  // namespace detail

using namespace detail;

namespace {

Result<json> parseAnyParams(const json& params) { return params; }

}  // namespace

// A batch collects the answers to its messages and sends them as one array when the last
// message is done. Notifications and cancelled requests contribute nothing.
struct Server::Batch {
  std::mutex mu;
  size_t pending = 0;
  json responses = json::array();
};

Server::Server(Transport& transport, Backend& backend, Limits limits, ServerOptions options,
               const permissions::Guard* guard)
    : transport_(transport),
      backend_(backend),
      limits_(limits),
      options_(std::move(options)),
      guard_(guard),
      client_requests_(transport),
      tasks_(options_.tasks ? options_.tasks : std::make_shared<TaskStore>()),
      // A worker idle for a second gives back what its heap freed (large answers' pages).
      // One worker stays; more start while calls overlap, and end after 10 s without work.
      pool_(options_.workers, std::chrono::microseconds(500), releaseFreedMemory,
            std::chrono::milliseconds(1000), 1, std::chrono::seconds(10)) {
  bindMethods();
}

Server::~Server() {
  cancelAll();
  tasks_->stopOwnedBy(this);  // what has ended stays in a shared store
  drain();
}

template <typename P>
void Server::bind(std::string name, Result<P> (*parse)(const json&),
                  Result<json> (Server::*fn)(const P&, const Caller&), bool before_init,
                  bool stateless, bool pooled) {
  methods_[std::move(name)] =
      Method{[this, parse, fn](const json& params, const Caller& caller) -> Result<json> {
               BYD_ASSIGN_OR_RETURN(P p, parse(params));
               return (this->*fn)(p, caller);
             },
             before_init, stateless, pooled};
}

void Server::bindMethods() {
  // name, parse, handler, before initialize (sessions), in the stateless revision
  bind("initialize", parseInitialize, &Server::onInitialize, true, false);
  bind("ping", parseAnyParams, &Server::onPing, true, false);
  bind("server/discover", parseAnyParams, &Server::onDiscover, true, true);
  // With a remote, the list is the remote's: asked on a worker, not on the reading thread.
  bind("tools/list", parseList, &Server::onListTools, false, true,
       /*pooled=*/options_.remote != nullptr);
  bind("tools/call", parseCallTool, &Server::onCallTool, false, true, /*pooled=*/true);
  bind("logging/setLevel", parseSetLevel, &Server::onSetLevel, false, false);
  // The tasks extension (server_tasks.cpp).
  bind("tasks/get", parseAnyParams, &Server::onTaskGet, false, true);
  bind("tasks/update", parseAnyParams, &Server::onTaskUpdate, false, true);
  bind("tasks/cancel", parseAnyParams, &Server::onTaskCancel, false, true);
  // subscriptions/listen is served apart (startListen): its stream stays open.
  const Catalog* catalog = options_.catalog.get();
  if (catalog == nullptr) return;
  if (!catalog->resources.empty() || !catalog->templates.empty()) {
    bind("resources/list", parseList, &Server::onListResources, false, true);
    bind("resources/templates/list", parseList, &Server::onListResourceTemplates, false, true);
    bind("resources/read", parseUri, &Server::onReadResource, false, true);
    bind("resources/subscribe", parseUri, &Server::onSubscribe, false, false);
    bind("resources/unsubscribe", parseUri, &Server::onUnsubscribe, false, false);
  }
  if (!catalog->prompts.empty()) {
    bind("prompts/list", parseList, &Server::onListPrompts, false, true);
    // Pooled: a prompt may ask the client, whose answer arrives on the reading thread.
    bind("prompts/get", parseGetPrompt, &Server::onGetPrompt, false, true, /*pooled=*/true);
  }
  if (catalog->complete) {
    bind("completion/complete", parseComplete, &Server::onComplete, false, true);
  }
}

Caller Server::sessionCaller() const {
  std::lock_guard lock(mu_);
  return Caller{protocol_version_, client_.capabilities, std::nullopt, false, CancelToken()};
}

json Server::errorFor(const json& id, const Status& status, const Caller& caller) const {
  const std::string& message = status.message();
  if (auto uri = status.detail(kUriDetail); uri && caller.stateless) {
    // 2026-07-28: an unknown resource is invalid params, naming the URI.
    return makeError(id, rpc::kInvalidParams, message, {{"uri", *uri}});
  }
  if (auto capability = status.detail(kCapabilityDetail); capability && caller.stateless) {
    // An extension ("extensions/NAME") is named inside the capabilities' "extensions".
    json required = {{*capability, json::object()}};
    if (capability->starts_with("extensions/")) {
      required = {{"extensions", {{capability->substr(11), json::object()}}}};
    }
    return makeError(id, stateless::kMissingCapability, message,
                     {{"requiredCapabilities", std::move(required)}});
  }
  if (auto remote = status.detail(kRemoteErrorDetail)) {
    // The remote's own error, as it sent it.
    json error = json::parse(*remote, nullptr, false);
    if (error.is_object() && error.contains("code") && error["code"].is_number_integer()) {
      return makeError(id, error["code"].get<int>(), error.value("message", message),
                       error.value("data", json()));
    }
  }
  return errorFromStatus(id, status);
}

std::string Server::protocolVersion() const {
  std::lock_guard lock(mu_);
  return protocol_version_;
}

void Server::onFrame(std::string_view frame) {
  try {
    handleFrame(frame);
  } catch (const std::exception& e) {
    // The reading thread must survive anything one message can cause (bad_alloc included).
    spdlog::error("message handling threw: {}", e.what());
    transport_.send(makeError(nullptr, rpc::kInternalError, "internal error"));
  }
}

void Server::onMessage(json message) {
  try {
    handleValue(message);
  } catch (const std::exception& e) {
    spdlog::error("message handling threw: {}", e.what());
    transport_.send(makeError(nullptr, rpc::kInternalError, "internal error"));
  }
}

void Server::handleFrame(std::string_view frame) {
  auto value = parseJson(frame);
  if (!value.ok()) {
    transport_.send(
        makeError(nullptr, rpc::kParseError, "parse error: " + value.status().message()));
    return;
  }
  handleValue(*value);
}

void Server::handleValue(json& value) {
  if (!value.is_array()) {
    dispatch(value, nullptr);
    return;
  }
  // JSON-RPC batches exist only in the 2025-03-26 revision of MCP.
  if (protocolVersion() != "2025-03-26") {
    transport_.send(makeError(nullptr, rpc::kInvalidRequest,
                              "batch requests are only supported at protocol version 2025-03-26"));
    return;
  }
  if (value.empty()) {
    transport_.send(makeError(nullptr, rpc::kInvalidRequest, "empty batch"));
    return;
  }
  auto batch = std::make_shared<Batch>();
  batch->pending = value.size();
  for (json& element : value) dispatch(element, batch);
}

void Server::onOversizedFrame(size_t bytes) {
  spdlog::warn("refused a message of {} bytes (limit exceeded)", bytes);
  transport_.send(makeError(
      nullptr, rpc::kInvalidRequest,
      "message of " + std::to_string(bytes) + " bytes exceeds the size limit and was discarded"));
}

void Server::dispatch(json& value, const Sink& sink) {
  Message m = classify(std::move(value));
  switch (m.kind) {
    case Kind::kRequest: {
      const json id = m.id;
      try {
        handleRequest(std::move(m), sink);
      } catch (const std::exception& e) {
        // Whatever one request causes, it is answered (with its id) and the rest go on.
        spdlog::error("handling a request threw: {}", e.what());
        deliver(sink, makeError(id, rpc::kInternalError, "internal error"));
      }
      return;
    }
    case Kind::kNotification:
      handleNotification(m);
      deliver(sink, std::nullopt);
      return;
    case Kind::kResponse:  // an answer to one of our questions (elicitation)
      if (!client_requests_.onReply(value)) spdlog::debug("ignored a response to nothing asked");
      deliver(sink, std::nullopt);
      return;
    case Kind::kInvalid:
      deliver(sink, makeError(m.id, rpc::kInvalidRequest, "invalid request: " + m.problem));
      return;
  }
}

void Server::deliver(const Sink& sink, std::optional<json> response) {
  if (!sink) {
    if (response) transport_.send(*response);
    return;
  }
  std::lock_guard lock(sink->mu);
  if (response) sink->responses.push_back(std::move(*response));
  if (--sink->pending == 0 && !sink->responses.empty()) transport_.send(sink->responses);
}

void Server::handleRequest(Message m, const Sink& sink) {
  Caller caller = sessionCaller();
  const bool initialized = !caller.version.empty();
  // A session's requests stay in the session, whatever their _meta says.
  if (options_.stateless_only ||
      (!initialized && (m.method == "server/discover" || stateless::hasModernMeta(m.params)))) {
    handleStateless(std::move(m), sink);
    return;
  }
  auto it = methods_.find(m.method);
  if (it == methods_.end()) {
    deliver(sink, makeError(m.id, rpc::kMethodNotFound, "method not found: " + m.method));
  } else if (!initialized && !it->second.before_init) {
    deliver(sink, makeError(m.id, rpc::kInvalidRequest,
                            "the session is not initialized: send initialize first"));
  } else {
    serve(std::move(m), sink, std::move(caller), it->second);
  }
}

void Server::serve(Message m, const Sink& sink, Caller caller, const Method& method) {
  auto answer = [this](const json& id, const std::string& name, Result<json> result,
                       const Caller& caller) {
    if (!result.ok()) return errorFor(id, result.status(), caller);
    if (!result->is_object()) {
      spdlog::error("{} answered with a result that is no object", name);
      return makeError(id, rpc::kInternalError, "internal error");
    }
    return makeResult(
        id, caller.stateless ? finishStateless(name, std::move(*result)) : std::move(*result));
  };
  if (!method.pooled) {
    const auto start = std::chrono::steady_clock::now();
    json response = answer(m.id, m.method, method.handler(m.params, caller), caller);
    spdlog::info("<- {}{} {:.2f} ms", m.method, caller.stateless ? " (stateless)" : "",
                 msSince(start));
    deliver(sink, std::move(response));
    return;
  }
  {
    std::lock_guard lock(mu_);
    if (in_flight_.contains(idKey(m.id)) || listeners_.contains(idKey(m.id))) {
      deliver(sink, makeError(m.id, rpc::kInvalidRequest,
                              "request id " + idKey(m.id) + " is already in use"));
      return;
    }
    in_flight_.emplace(idKey(m.id), caller.cancel);
    ++active_;
  }
  // The log names what was called: "tools/call ls", "prompts/get review".
  std::string label = m.method;
  if (m.params.is_object() && m.params.contains("name") && m.params["name"].is_string()) {
    label += " " + m.params["name"].get<std::string>();
  }
  pool_.post([this, m = std::move(m), sink, caller, handler = method.handler, answer,
              label = std::move(label)] {
    const RequestScope scope(m.id);  // what this thread sends belongs to this request
    const auto start = std::chrono::steady_clock::now();
    const CancelToken& token = caller.cancel;
    json response;
    try {
      // Cancelled while it waited in the queue: skip the work, the answer is dropped anyway.
      response = answer(
          m.id, m.method,
          token.cancelled() ? Result<json>(cancelled("cancelled")) : handler(m.params, caller),
          caller);
    } catch (const std::exception& e) {
      // Never pass exception text to the client: it may hold paths or internals.
      spdlog::error("{} threw: {}", label, e.what());
      response = makeError(m.id, rpc::kInternalError, "internal error");
    }
    spdlog::info("<- {}{} {:.2f} ms{}", label, caller.stateless ? " (stateless)" : "",
                 msSince(start),
                 token.cancelled()            ? " (cancelled)"
                 : response.contains("error") ? " (error)"
                 : response["result"].contains("isError") && response["result"]["isError"] == true
                     ? " (tool error)"
                     : "");
    {
      std::lock_guard lock(mu_);
      in_flight_.erase(idKey(m.id));
    }
    // A cancelled request gets no answer at all (MCP cancellation); its stream ends now that
    // its work has stopped.
    if (token.cancelled() && !sink) transport_.unanswered(idKey(m.id));
    deliver(sink, token.cancelled() ? std::nullopt : std::optional<json>(std::move(response)));
    std::lock_guard lock(mu_);
    if (--active_ == 0) idle_.notify_all();
  });
}

void Server::cancelRequest(const json& request_id) {
  bool listened = false;
  {
    std::lock_guard lock(mu_);
    if (auto it = in_flight_.find(idKey(request_id)); it != in_flight_.end()) {
      it->second.cancel();
      spdlog::info("cancelled request {}", it->first);
    }
    listened = listeners_.erase(idKey(request_id)) != 0;
  }
  if (listened) {
    // A subscription has no work to stop: the stream it holds ends now, with no answer.
    spdlog::info("ended subscription {}", idKey(request_id));
    transport_.unanswered(idKey(request_id));
  }
}

void Server::handleNotification(const Message& m) {
  if (m.method == "notifications/cancelled") {
    auto p = parseCancelled(m.params);
    if (!p.ok()) {
      spdlog::debug("ignored notifications/cancelled: {}", p.status().message());
      return;
    }
    cancelRequest(p->request_id);
    return;
  }
  if (m.method == "notifications/initialized") {
    spdlog::debug("client reports initialized");
    return;
  }
  spdlog::debug("ignored notification {}", m.method);
}

std::function<void(double, std::optional<double>, std::string)> Server::progressReporter(
    const json& progress_token) {
  if (progress_token.is_null()) return nullptr;
  return [this, progress_token](double value, std::optional<double> total, std::string message) {
    json params = {{"progressToken", progress_token}, {"progress", value}};
    if (total) params["total"] = *total;
    if (!message.empty()) params["message"] = std::move(message);
    transport_.send(makeNotification("notifications/progress", std::move(params)));
  };
}

void Server::cancelAll() {
  std::map<std::string, Listener> listeners;
  {
    std::lock_guard lock(mu_);
    for (auto& [id, token] : in_flight_) token.cancel();
    listeners.swap(listeners_);
  }
  // A subscription the server ends gets its (empty) result (2026-07-28).
  for (const auto& [key, l] : listeners) {
    transport_.send(
        makeResult(l.id, {{"resultType", "complete"},
                          {"_meta", {{std::string(stateless::kMetaSubscriptionId), l.id}}}}));
  }
}

void Server::drain(const std::function<bool()>& give_up) {
  std::unique_lock lock(mu_);
  while (active_ != 0) {
    idle_.wait_for(lock, std::chrono::milliseconds(100));
    if (give_up && give_up()) {
      for (auto& [id, token] : in_flight_) token.cancel();
    }
  }
}

Result<json> Server::onInitialize(const InitializeParams& p, const Caller&) {
  const std::string version = negotiateVersion(p.protocol_version);
  {
    std::lock_guard lock(mu_);
    if (!protocol_version_.empty()) return failedPrecondition("the session is already initialized");
    protocol_version_ = version;
    client_ = p;
  }
  spdlog::info("initialize: client {} {} asked for {}, speaking {}", p.client_name,
               p.client_version, p.protocol_version, version);
  if (guard_ != nullptr && guard_->needsElicitation() && !p.capabilities.contains("elicitation")) {
    spdlog::warn(
        "client {} declares no elicitation: what the '{}' ruleset marks 'ask' will be "
        "denied, because {}",
        p.client_name, guard_->ruleset().name(), kNoElicitationAdvice);
  }
  json info = {{"name", options_.name}, {"version", options_.version}};
  if (atLeast(version, "2025-06-18")) info["title"] = options_.title;
  return json{{"protocolVersion", version},
              {"capabilities", capabilities()},
              {"serverInfo", std::move(info)},
              {"instructions", options_.instructions}};
}

Result<json> Server::onPing(const json&, const Caller&) { return json::object(); }

Result<json> Server::onDiscover(const json&, const Caller&) {
  json versions = json::array();
  for (std::string_view v : kProtocolVersions) versions.push_back(v);
  versions.push_back(stateless::kVersion);
  json caps = capabilities();
  caps["extensions"][std::string(kTasksExtension)] = json::object();
  json result = {{"supportedVersions", std::move(versions)}, {"capabilities", std::move(caps)}};
  if (!options_.instructions.empty()) result["instructions"] = options_.instructions;
  return result;
}

json Server::capabilities() const {
  json caps = {{"tools", {{"listChanged", false}}}, {"logging", json::object()}};
  const Catalog* catalog = options_.catalog.get();
  if (catalog == nullptr) return caps;
  const bool changes = catalog->lists_change;
  caps["tools"]["listChanged"] = changes;
  if (!catalog->resources.empty() || !catalog->templates.empty()) {
    caps["resources"] = {{"subscribe", true}, {"listChanged", changes}};
  }
  if (!catalog->prompts.empty()) caps["prompts"] = {{"listChanged", changes}};
  if (catalog->complete) caps["completions"] = json::object();
  return caps;
}

Result<json> Server::onSetLevel(const SetLevelParams& p, const Caller&) {
  client_log_level_ = p.level;
  return json::object();
}

bool Server::wantsLog(int level, const Caller& caller) const {
  // A session's level is set by logging/setLevel; a stateless request names its own, and gets
  // no log messages without one.
  return caller.stateless ? caller.log_level && level >= *caller.log_level
                          : level >= client_log_level_.load() && !caller.version.empty();
}

void Server::logToClient(int level, const json& data, const Caller& caller,
                         const std::string& logger) {
  if (!wantsLog(level, caller)) return;
  transport_.send(makeNotification("notifications/message",
                                   {{"level", kLogLevels[level]},
                                    {"logger", logger.empty() ? options_.name : logger},
                                    {"data", data}}));
}

}  // namespace byd::mcp
