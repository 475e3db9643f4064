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

}  // namespace

// A batch collects the answers to its messages and sends them as one array when the last
// message is done. Notifications and cancelled requests contribute nothing.
struct Server::Batch {
  std::mutex mu;
  size_t pending = 0;
  json responses = json::array();
};

// How a catalog tool reaches the client of its call.
class Server::CallPeer : public Peer {
 public:
  CallPeer(Server& server, const json& id, const CallToolParams& params, const CancelToken& token)
      : server_(server),
        id_(id),
        tool_(params.name),
        report_(server.progressReporter(params.progress_token)),
        token_(token) {}

  void progress(double progress, std::optional<double> total, std::string_view message) override {
    if (report_) report_(progress, total, std::string(message));
  }
  void log(std::string_view level, const json& data) override {
    auto it = std::find(kLogLevels.begin(), kLogLevels.end(), level);
    const int index = it == kLogLevels.end() ? 1 : static_cast<int>(it - kLogLevels.begin());
    server_.logToClient(index, data, tool_);
  }
  Result<json> ask(std::string_view method, json params) override {
    const char* capability = capabilityFor(method);
    if (capability != nullptr) {
      std::lock_guard lock(server_.mu_);
      const InitializeParams& c = server_.client_;
      const bool declared = std::string_view(capability) == "sampling"      ? c.sampling
                            : std::string_view(capability) == "elicitation" ? c.elicitation
                                                                            : c.roots;
      if (!declared) {
        return failedPrecondition("the client did not declare the " + std::string(capability) +
                                  " capability, so it cannot answer " + std::string(method));
      }
    }
    return server_.client_requests_.call(std::string(method), std::move(params),
                                         server_.options_.ask_timeout, token_);
  }
  bool closeStream() override { return server_.transport_.closeStream(idKey(id_)); }
  const CancelToken& cancel() const override { return token_; }

 private:
  Server& server_;
  const json& id_;
  const std::string tool_;
  const std::function<void(double, std::optional<double>, std::string)> report_;
  const CancelToken& token_;
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
                  Result<json> (Server::*fn)(const P&), bool before_init) {
  methods_[std::move(name)] = Method{[this, parse, fn](const json& params) -> Result<json> {
                                       BYD_ASSIGN_OR_RETURN(P p, parse(params));
                                       return (this->*fn)(p);
                                     },
                                     before_init};
}

void Server::bindMethods() {
  bind("initialize", parseInitialize, &Server::onInitialize, /*before_init=*/true);
  bind("ping", parseAnyParams, &Server::onPing, /*before_init=*/true);
  bind("tools/list", parseList, &Server::onListTools);
  bind("logging/setLevel", parseSetLevel, &Server::onSetLevel);
  // tools/call is bound separately: it runs on the worker pool (startToolCall).
  const Catalog* catalog = options_.catalog.get();
  if (catalog == nullptr) return;
  if (!catalog->resources.empty() || !catalog->templates.empty()) {
    bind("resources/list", parseList, &Server::onListResources);
    bind("resources/templates/list", parseList, &Server::onListResourceTemplates);
    bind("resources/read", parseUri, &Server::onReadResource);
    bind("resources/subscribe", parseUri, &Server::onSubscribe);
    bind("resources/unsubscribe", parseUri, &Server::onUnsubscribe);
  }
  if (!catalog->prompts.empty()) {
    bind("prompts/list", parseList, &Server::onListPrompts);
    bind("prompts/get", parseGetPrompt, &Server::onGetPrompt);
  }
  if (catalog->complete) bind("completion/complete", parseComplete, &Server::onComplete);
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
  for (const json& element : *value) dispatch(element, batch);
}

void Server::onOversizedFrame(size_t bytes) {
  spdlog::warn("refused a message of {} bytes (limit exceeded)", bytes);
  transport_.send(makeError(
      nullptr, rpc::kInvalidRequest,
      "message of " + std::to_string(bytes) + " bytes exceeds the size limit and was discarded"));
}

void Server::dispatch(const json& value, const Sink& sink) {
  Message m = classify(value);
  switch (m.kind) {
    case Kind::kRequest:
      handleRequest(std::move(m), sink);
      return;
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
  const bool initialized = !protocolVersion().empty();
  if (m.method == "tools/call" && initialized) {
    startToolCall(std::move(m), sink);
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  auto it = methods_.find(m.method);
  json response;
  if (it == methods_.end() && m.method != "tools/call") {
    response = makeError(m.id, rpc::kMethodNotFound, "method not found: " + m.method);
  } else if (!initialized && (it == methods_.end() || !it->second.before_init)) {
    response = makeError(m.id, rpc::kInvalidRequest,
                         "the session is not initialized: send initialize first");
  } else {
    Result<json> result = it->second.handler(m.params);
    response =
        result.ok() ? makeResult(m.id, std::move(*result)) : errorFromStatus(m.id, result.status());
  }
  spdlog::info("<- {} {:.2f} ms", m.method, msSince(start));
  deliver(sink, std::move(response));
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
    return;
  }
  if (m.method == "notifications/initialized") {
    spdlog::debug("client reports initialized");
    return;
  }
  spdlog::debug("ignored notification {}", m.method);
}

void Server::startToolCall(Message m, const Sink& sink) {
  auto params = parseCallTool(m.params);
  if (!params.ok()) {
    deliver(sink, errorFromStatus(m.id, params.status()));
    return;
  }
  CancelToken token;
  {
    std::lock_guard lock(mu_);
    if (!in_flight_.emplace(idKey(m.id), token).second) {
      deliver(sink, makeError(m.id, rpc::kInvalidRequest,
                              "request id " + idKey(m.id) + " is already in use"));
      return;
    }
    ++active_;
  }
  pool_.post([this, id = m.id, p = std::move(*params), token, sink] {
    const RequestScope scope(id);  // what this thread sends belongs to this call
    const auto start = std::chrono::steady_clock::now();
    json response;
    try {
      // Cancelled while it waited in the queue: skip the work, the answer is dropped anyway.
      Result<json> result =
          token.cancelled() ? Result<json>(cancelled("cancelled")) : runToolCall(p, token);
      response =
          result.ok() ? makeResult(id, std::move(*result)) : errorFromStatus(id, result.status());
    } catch (const std::exception& e) {
      // Never pass exception text to the client: it may hold paths or internals.
      spdlog::error("tools/call {} threw: {}", p.name, e.what());
      response = makeError(id, rpc::kInternalError, "internal error");
    }
    const bool is_error = response.contains("error") || response["result"].value("isError", false);
    spdlog::info("<- tools/call {} {:.2f} ms{}", p.name, msSince(start),
                 token.cancelled() ? " (cancelled)"
                 : is_error        ? " (error)"
                                   : "");
    logToClient(is_error ? 2 : 0,
                {{"tool", p.name}, {"duration_ms", msSince(start)}, {"isError", is_error}});
    {
      std::lock_guard lock(mu_);
      in_flight_.erase(idKey(id));
    }
    // A cancelled request gets no answer at all (MCP cancellation).
    deliver(sink, token.cancelled() ? std::nullopt : std::optional<json>(std::move(response)));
    std::lock_guard lock(mu_);
    if (--active_ == 0) idle_.notify_all();
  });
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

Result<json> Server::runToolCall(const CallToolParams& p, const CancelToken& token) {
  if (const CatalogTool* tool = findCatalogTool(p.name)) return runCatalogTool(*tool, p, token);
  const Tool* tool = findTool(p.name);
  if (tool == nullptr || (options_.catalog && !options_.catalog->console_tools)) {
    return invalidArgument("unknown tool: " + p.name);
  }
  const bool structured = atLeast(protocolVersion(), "2025-06-18");
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
  bool elicitation;
  {
    std::lock_guard lock(mu_);
    elicitation = client_.elicitation;
  }
  mcp::ElicitingApprover approver(client_requests_, elicitation, options_.ask_timeout, token);
  permissions::GuardedBackend guarded(backend_, *guard_, *op, &approver);
  ToolContext ctx{guarded, limits_, token, [&guarded] { return guarded.hiddenCount(); }, progress};
  return callTool(*tool, p.arguments, ctx, structured);
}

Result<json> Server::runCatalogTool(const CatalogTool& tool, const CallToolParams& p,
                                    const CancelToken& token) {
  // Bad arguments are the model's to fix, so they come back as a tool error, as for the
  // console tools.
  if (auto schema = tool.definition.find("inputSchema"); schema != tool.definition.end()) {
    if (Status s = schemas::validate(*schema, p.arguments, "arguments"); !s.ok()) {
      return json{{"content", {{{"type", "text"}, {"text", s.message()}}}}, {"isError", true}};
    }
  }
  const json* id = currentRequest();
  const json null_id;
  CallPeer peer(*this, id != nullptr ? *id : null_id, p, token);
  return tool.call(p.arguments, peer);
}

bool Server::toolVisible(const Tool& tool) const {
  if ((tool.spec->operation == "execute" || tool.spec->operation == "python") &&
      !backend_.canExecute()) {
    return false;
  }
  if (guard_ == nullptr) return true;
  const auto op = permissions::parseOperation(tool.spec->operation);
  return op && !guard_->hidden(*op);
}

void Server::cancelAll() {
  std::lock_guard lock(mu_);
  for (auto& [id, token] : in_flight_) token.cancel();
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

Result<json> Server::onInitialize(const InitializeParams& p) {
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

Result<json> Server::onPing(const json&) { return json::object(); }

json Server::capabilities() const {
  json caps = {{"tools", {{"listChanged", false}}}, {"logging", json::object()}};
  const Catalog* catalog = options_.catalog.get();
  if (catalog == nullptr) return caps;
  if (!catalog->resources.empty() || !catalog->templates.empty()) {
    caps["resources"] = {{"subscribe", true}, {"listChanged", false}};
  }
  if (!catalog->prompts.empty()) caps["prompts"] = {{"listChanged", false}};
  if (catalog->complete) caps["completions"] = json::object();
  return caps;
}

Result<json> Server::onListTools(const ListParams& p) {
  const std::string version = protocolVersion();
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

Result<json> Server::onSetLevel(const SetLevelParams& p) {
  client_log_level_ = p.level;
  return json::object();
}

void Server::logToClient(int level, const json& data, const std::string& logger) {
  if (level < client_log_level_.load() || protocolVersion().empty()) return;
  transport_.send(makeNotification("notifications/message",
                                   {{"level", kLogLevels[level]},
                                    {"logger", logger.empty() ? options_.name : logger},
                                    {"data", data}}));
}

Result<json> Server::onListResources(const ListParams& p) {
  std::vector<json> list;
  for (const Resource& r : options_.catalog->resources) list.push_back(r.definition);
  return page(std::move(list), p.cursor, "resources", options_.page_size);
}

Result<json> Server::onListResourceTemplates(const ListParams& p) {
  std::vector<json> list;
  for (const ResourceTemplate& t : options_.catalog->templates) list.push_back(t.definition);
  return page(std::move(list), p.cursor, "resourceTemplates", options_.page_size);
}

Result<json> Server::onReadResource(const UriParams& p) {
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
  return Status(Code::kNotFound, "resource not found: " + p.uri);
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

Result<json> Server::onSubscribe(const UriParams& p) {
  if (!knownResource(p.uri)) return Status(Code::kNotFound, "resource not found: " + p.uri);
  std::lock_guard lock(mu_);
  subscriptions_.insert(p.uri);
  return json::object();
}

Result<json> Server::onUnsubscribe(const UriParams& p) {
  std::lock_guard lock(mu_);
  subscriptions_.erase(p.uri);  // unsubscribing from what was never subscribed is no error
  return json::object();
}

void Server::resourceUpdated(const std::string& uri) {
  {
    std::lock_guard lock(mu_);
    if (!subscriptions_.contains(uri)) return;
  }
  transport_.send(makeNotification("notifications/resources/updated", {{"uri", uri}}));
}

Result<json> Server::onListPrompts(const ListParams& p) {
  std::vector<json> list;
  for (const Prompt& prompt : options_.catalog->prompts) list.push_back(prompt.definition);
  return page(std::move(list), p.cursor, "prompts", options_.page_size);
}

Result<json> Server::onGetPrompt(const GetPromptParams& p) {
  for (const Prompt& prompt : options_.catalog->prompts) {
    if (prompt.definition.value("name", "") != p.name) continue;
    for (const json& arg : prompt.definition.value("arguments", json::array())) {
      const std::string name = arg.value("name", "");
      if (arg.value("required", false) && !p.arguments.contains(name)) {
        return invalidArgument("prompt " + p.name + " needs the argument '" + name + "'");
      }
    }
    return prompt.get(p.arguments);
  }
  return invalidArgument("unknown prompt: " + p.name);
}

Result<json> Server::onComplete(const CompleteParams& p) {
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
