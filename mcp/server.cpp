#include "mcp/server.h"

#include <chrono>

#include <spdlog/spdlog.h>

#include "mcp/elicitation.h"
#include "mcp/request_scope.h"
#include "permissions/guarded_backend.h"
#include "schemas/validator.h"
#include "tools/registry.h"

namespace byd::mcp {
namespace {

Result<json> parseAnyParams(const json& params) { return params; }

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

// Details of a Status that errorFor() turns into an error's data.
constexpr const char* kCapabilityDetail = "capability";  // the client capability missing
constexpr const char* kUriDetail = "uri";                // the unknown resource

Status missingCapability(std::string_view capability, std::string_view method) {
  return failedPrecondition("the client did not declare the capability " + std::string(capability) +
                            " that " + std::string(method) + " needs")
      .withDetail(kCapabilityDetail, std::string(capability));
}

Status resourceNotFound(const std::string& uri) {
  return notFound("resource not found: " + uri).withDetail(kUriDetail, uri);
}

// Stateless results of these methods say how long a client may cache them (2026-07-28).
bool cacheable(std::string_view method) {
  return method == "server/discover" || method == "tools/list" || method == "prompts/list" ||
         method == "resources/list" || method == "resources/templates/list" ||
         method == "resources/read";
}

}  // namespace

// A batch collects the answers to its messages and sends them as one array when the last
// message is done. Notifications and cancelled requests contribute nothing.
struct Server::Batch {
  std::mutex mu;
  size_t pending = 0;
  json responses = json::array();
};

// How a catalog tool or prompt reaches its client. In a session, questions are requests to
// the client; for a stateless request they are answered from the retry's inputResponses and
// requestState, or collected into an InputRequiredResult.
class Server::CallPeer : public Peer {
 public:
  CallPeer(Server& server, const json& id, std::string name, const json& progress_token,
           const CancelToken& token, const Caller& caller, json answers)
      : server_(server),
        id_(id),
        name_(std::move(name)),
        report_(server.progressReporter(progress_token)),
        token_(token),
        caller_(caller),
        answers_(std::move(answers)) {}

  void progress(double progress, std::optional<double> total, std::string_view message) override {
    if (report_) report_(progress, total, std::string(message));
  }
  void log(std::string_view level, const json& data) override {
    auto it = std::find(kLogLevels.begin(), kLogLevels.end(), level);
    const int index = it == kLogLevels.end() ? 1 : static_cast<int>(it - kLogLevels.begin());
    server_.logToClient(index, data, caller_, name_);
  }
  Result<json> askAll(const json& questions) override {
    if (!questions.is_object()) return invalidArgument("questions must be an object");
    for (const auto& [key, q] : questions.items()) {
      const std::string method = q.value("method", "");
      const char* capability = capabilityFor(method);
      if (capability == nullptr) return invalidArgument("cannot ask the client " + method);
      if (!caller_.has(capability) && !(caller_.stateless && answered(key, method))) {
        return missingCapability(capability, method);
      }
    }
    json answers = json::object();
    if (!caller_.stateless) {
      for (const auto& [key, q] : questions.items()) {
        BYD_ASSIGN_OR_RETURN(answers[key], server_.client_requests_.call(
                                               q["method"], q.value("params", json::object()),
                                               server_.options_.ask_timeout, token_));
      }
      return answers;
    }
    for (const auto& [key, q] : questions.items()) {
      if (answered(key, q["method"])) {
        answers[key] = answers_[key];
        used_[key] = answers_[key];
      } else {
        open_[key] = {{"method", q["method"]}, {"params", q.value("params", json::object())}};
      }
    }
    if (!open_.empty()) return failedPrecondition("waiting for the client's answers");
    return answers;
  }
  bool clientSupports(std::string_view capability) const override {
    return caller_.has(capability);
  }
  void listChanged(std::string_view list) override { server_.listChanged(list); }
  bool closeStream() override {
    return !caller_.stateless && server_.transport_.closeStream(idKey(id_));
  }
  const CancelToken& cancel() const override { return token_; }

  // Questions still open (stateless), and the answers used so far.
  const json& open() const { return open_; }
  const json& used() const { return used_; }

 private:
  bool answered(const std::string& key, const std::string& method) const {
    return answers_.is_object() && answers_.contains(key) &&
           stateless::validInputResponse(method, answers_[key]);
  }

  Server& server_;
  const json& id_;
  const std::string name_;
  const std::function<void(double, std::optional<double>, std::string)> report_;
  const CancelToken& token_;
  const Caller& caller_;
  const json answers_;  // {key: answer}: from the requestState and the retry's inputResponses
  json used_ = json::object();
  json open_ = json::object();
};

// A stateless subscriptions/listen stream: what it asked for, by notification.
struct Server::Listener {
  json id;
  json honored;  // the subset of its notifications filter the server serves
  std::set<std::string> uris;
  bool active = false;  // acknowledged: notifications may follow
};

Server::Server(Transport& transport, Backend& backend, Limits limits, ServerOptions options,
               const permissions::Guard* guard)
    : transport_(transport),
      backend_(backend),
      limits_(limits),
      options_(std::move(options)),
      guard_(guard),
      client_requests_(transport),
      pool_(options_.workers) {
  bindMethods();
}

Server::~Server() {
  cancelAll();
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
  bind("tools/list", parseList, &Server::onListTools, false, true);
  bind("tools/call", parseCallTool, &Server::onCallTool, false, true, /*pooled=*/true);
  bind("logging/setLevel", parseSetLevel, &Server::onSetLevel, false, false);
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
    return makeError(id, stateless::kMissingCapability, message,
                     {{"requiredCapabilities", {{*capability, json::object()}}}});
  }
  return errorFromStatus(id, status);
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

void Server::handleFrame(std::string_view frame) {
  auto value = parseJson(frame);
  if (!value.ok()) {
    transport_.send(
        makeError(nullptr, rpc::kParseError, "parse error: " + value.status().message()));
    return;
  }
  if (!value->is_array()) {
    dispatch(*value, nullptr);
    return;
  }
  // JSON-RPC batches exist only in the 2025-03-26 revision of MCP.
  if (protocolVersion() != "2025-03-26") {
    transport_.send(makeError(nullptr, rpc::kInvalidRequest,
                              "batch requests are only supported at protocol version 2025-03-26"));
    return;
  }
  if (value->empty()) {
    transport_.send(makeError(nullptr, rpc::kInvalidRequest, "empty batch"));
    return;
  }
  auto batch = std::make_shared<Batch>();
  batch->pending = value->size();
  for (json& element : *value) dispatch(element, batch);
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
    // A cancelled request gets no answer at all (MCP cancellation).
    deliver(sink, token.cancelled() ? std::nullopt : std::optional<json>(std::move(response)));
    std::lock_guard lock(mu_);
    if (--active_ == 0) idle_.notify_all();
  });
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

void Server::handleNotification(const Message& m) {
  if (m.method == "notifications/cancelled") {
    auto p = parseCancelled(m.params);
    if (!p.ok()) {
      spdlog::debug("ignored notifications/cancelled: {}", p.status().message());
      return;
    }
    std::lock_guard lock(mu_);
    if (auto it = in_flight_.find(idKey(p->request_id)); it != in_flight_.end()) {
      it->second.cancel();
      spdlog::info("cancelled request {}", it->first);
    }
    if (listeners_.erase(idKey(p->request_id)) != 0) {
      spdlog::info("ended subscription {}", idKey(p->request_id));
    }
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

const CatalogTool* Server::findCatalogTool(std::string_view name) const {
  if (!options_.catalog) return nullptr;
  for (const CatalogTool& tool : options_.catalog->tools) {
    if (tool.definition.value("name", "") == name) return &tool;
  }
  return nullptr;
}

Result<json> Server::onCallTool(const CallToolParams& p, const Caller& caller) {
  const auto start = std::chrono::steady_clock::now();
  Result<json> result = runToolCall(p, caller);
  const bool is_error = !result.ok() || !result->is_object() || result->value("isError", false);
  if (const int level = is_error ? 2 : 0; wantsLog(level, caller)) {
    logToClient(level, {{"tool", p.name}, {"duration_ms", msSince(start)}, {"isError", is_error}},
                caller);
  }
  return result;
}

Result<json> Server::runToolCall(const CallToolParams& p, const Caller& caller) {
  const CancelToken& token = caller.cancel;
  if (const CatalogTool* tool = findCatalogTool(p.name)) {
    // Bad arguments are the model's to fix, so they come back as a tool error, as for the
    // console tools.
    if (auto schema = tool->definition.find("inputSchema"); schema != tool->definition.end()) {
      if (Status s = schemas::validate(*schema, p.arguments, "arguments"); !s.ok()) {
        return json{{"content", {{{"type", "text"}, {"text", s.message()}}}}, {"isError", true}};
      }
    }
    return withPeer("tools/call", p.name, p.arguments, p.input, p.progress_token, caller,
                    [&](Peer& peer) { return tool->call(p.arguments, peer); });
  }
  const Tool* tool = findTool(p.name);
  if (tool == nullptr || (options_.catalog && !options_.catalog->console_tools)) {
    return invalidArgument("unknown tool: " + p.name);
  }
  const bool structured = atLeast(caller.version, "2025-06-18");
  if ((tool->spec->operation == "execute" || tool->spec->operation == "python") &&
      !backend_.canExecute()) {
    return invalidArgument("unknown tool: " + p.name);
  }
  // With a progressToken, long calls report progress as notifications/progress.
  std::function<void(double, std::string)> progress;
  if (auto report = progressReporter(p.progress_token)) {
    progress = [report](double value, std::string message) {
      report(value, std::nullopt, std::move(message));
    };
  }
  if (guard_ == nullptr) {
    ToolContext ctx{backend_, limits_, token, nullptr, progress};
    return callTool(*tool, p.arguments, ctx, structured);
  }
  const auto op = permissions::parseOperation(tool->spec->operation);
  if (!op) return internalError("tool " + p.name + " names no permission operation");
  // Stateless requests cannot ask the user mid-call: "ask" rules take the fallback there.
  const bool elicitation = !caller.stateless && caller.has("elicitation");
  mcp::ElicitingApprover approver(client_requests_, elicitation, options_.ask_timeout, token);
  permissions::GuardedBackend guarded(backend_, *guard_, *op, &approver, &denied_files_);
  ToolContext ctx{guarded, limits_, token, [&guarded] { return guarded.hiddenCount(); }, progress};
  return callTool(*tool, p.arguments, ctx, structured);
}

Result<json> Server::withPeer(const std::string& method, const std::string& name,
                              const json& arguments, const InputResponses& input,
                              const json& progress_token, const Caller& caller,
                              const std::function<Result<json>(Peer&)>& run) {
  json answers = json::object();
  // A requestState is bound to the arguments of the request it was issued for.
  const std::string digest = signer_.digest(arguments.dump());
  if (caller.stateless) {
    // Answers the client sends now; what an earlier round settled (signed) wins over them.
    if (input.responses.is_object()) answers = input.responses;
    if (input.request_state) {
      BYD_ASSIGN_OR_RETURN(json state, signer_.verify(*input.request_state, method, name));
      if (state.value("arguments", "") != digest) {
        return invalidArgument("requestState belongs to a request with other arguments");
      }
      const json settled = state.value("answers", json::object());
      if (settled.is_object()) {
        for (const auto& [key, answer] : settled.items()) answers[key] = answer;
      }
    }
  }
  const json* id = currentRequest();
  const json no_id;
  CallPeer peer(*this, id != nullptr ? *id : no_id, name, progress_token, caller.cancel, caller,
                std::move(answers));
  Result<json> result = run(peer);
  if (!peer.open().empty()) {
    // Questions the client has not answered yet: it answers them and asks again.
    return json{{"resultType", "input_required"},
                {"inputRequests", peer.open()},
                {"requestState",
                 signer_.sign({{"answers", peer.used()}, {"arguments", digest}}, method, name)}};
  }
  return result;
}

bool toolOffered(const Tool& tool, const Backend& backend, const permissions::Guard* guard) {
  if ((tool.spec->operation == "execute" || tool.spec->operation == "python") &&
      !backend.canExecute()) {
    return false;
  }
  if (guard == nullptr) return true;
  const auto op = permissions::parseOperation(tool.spec->operation);
  return op && !guard->hidden(*op);
}

bool Server::toolVisible(const Tool& tool) const { return toolOffered(tool, backend_, guard_); }

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
  json result = {{"supportedVersions", std::move(versions)}, {"capabilities", capabilities()}};
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

Result<json> Server::onListTools(const ListParams& p, const Caller& caller) {
  const std::string& version = caller.version;
  std::vector<json> tools;
  // Tools whose operation the rules always deny are not offered at all.
  const bool console = !options_.catalog || options_.catalog->console_tools;
  for (const Tool& tool : allTools()) {
    if (!console || !toolVisible(tool)) continue;
    const ToolSpec& spec = *tool.spec;
    tools.push_back(toolForVersion({{"name", spec.name},
                                    {"title", spec.title},
                                    {"description", spec.description},
                                    {"inputSchema", *tool.input_schema},
                                    {"outputSchema", *tool.output_schema},
                                    {"annotations",
                                     {{"title", spec.title},
                                      {"readOnlyHint", spec.read_only},
                                      {"destructiveHint", spec.destructive},
                                      {"idempotentHint", spec.idempotent},
                                      {"openWorldHint", false}}}},
                                   version));
  }
  if (options_.catalog) {
    for (const CatalogTool& tool : options_.catalog->tools) {
      tools.push_back(toolForVersion(tool.definition, version));
    }
  }
  return page(std::move(tools), p.cursor, "tools", options_.page_size);
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
