#include "mcp/server.h"

#include <chrono>

#include <spdlog/spdlog.h>

#include "mcp/elicitation.h"
#include "mcp/request_scope.h"
#include "permissions/guarded_backend.h"
#include "tools/registry.h"

namespace byd::mcp {
namespace {

Result<json> parseAnyParams(const json& params) { return params; }

std::string idKey(const json& id) { return serialize(id); }

double msSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

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
  bind("tools/list", parseListTools, &Server::onListTools);
  bind("logging/setLevel", parseSetLevel, &Server::onSetLevel);
  // tools/call is bound separately: it runs on the worker pool (startToolCall).
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

Result<json> Server::runToolCall(const CallToolParams& p, const CancelToken& token) {
  const Tool* tool = findTool(p.name);
  if (tool == nullptr) return invalidArgument("unknown tool: " + p.name);
  const bool structured = atLeast(protocolVersion(), "2025-06-18");
  if ((tool->spec->operation == "execute" || tool->spec->operation == "python") &&
      !backend_.canExecute()) {
    return invalidArgument("unknown tool: " + p.name);
  }
  // With a progressToken, long calls report progress as notifications/progress.
  std::function<void(double, std::string)> progress;
  if (!p.progress_token.is_null()) {
    progress = [this, token_id = p.progress_token](double value, std::string message) {
      json params = {{"progressToken", token_id}, {"progress", value}};
      if (!message.empty()) params["message"] = std::move(message);
      transport_.send(makeNotification("notifications/progress", std::move(params)));
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
    elicitation = client_elicitation_;
  }
  mcp::ElicitingApprover approver(client_requests_, elicitation, options_.ask_timeout, token);
  permissions::GuardedBackend guarded(backend_, *guard_, *op, &approver);
  ToolContext ctx{guarded, limits_, token, [&guarded] { return guarded.hiddenCount(); }, progress};
  return callTool(*tool, p.arguments, ctx, structured);
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
    client_elicitation_ = p.elicitation;
  }
  spdlog::info("initialize: client {} {} asked for {}, speaking {}", p.client_name,
               p.client_version, p.protocol_version, version);
  json info = {{"name", options_.name}, {"version", options_.version}};
  if (atLeast(version, "2025-06-18")) info["title"] = options_.title;
  return json{{"protocolVersion", version},
              {"capabilities", {{"tools", {{"listChanged", false}}}, {"logging", json::object()}}},
              {"serverInfo", std::move(info)},
              {"instructions", options_.instructions}};
}

Result<json> Server::onPing(const json&) { return json::object(); }

Result<json> Server::onListTools(const ListToolsParams& p) {
  // Tools whose operation the rules always deny are not offered at all.
  std::vector<const Tool*> tools;
  for (const Tool& tool : allTools()) {
    if (toolVisible(tool)) tools.push_back(&tool);
  }
  size_t begin = 0;
  if (p.cursor) {
    // Cursors are opaque to clients; ours is "tools:<index>".
    const std::string& c = *p.cursor;
    if (!c.starts_with("tools:") || c.size() > 16 ||
        c.find_first_not_of("0123456789", 6) != std::string::npos || c.size() == 6) {
      return invalidArgument("invalid cursor");
    }
    begin = std::stoul(c.substr(6));
    if (begin > tools.size()) return invalidArgument("invalid cursor");
  }
  const std::string version = protocolVersion();
  const size_t end = std::min(tools.size(), begin + std::max<size_t>(options_.page_size, 1));
  json list = json::array();
  for (size_t i = begin; i < end; ++i) {
    const ToolSpec& spec = *tools[i]->spec;
    json t = {{"name", spec.name},
              {"description", spec.description},
              {"inputSchema", *tools[i]->input_schema}};
    if (atLeast(version, "2025-03-26")) {
      t["annotations"] = {{"title", spec.title},
                          {"readOnlyHint", spec.read_only},
                          {"destructiveHint", spec.destructive},
                          {"idempotentHint", spec.idempotent},
                          {"openWorldHint", false}};
    }
    if (atLeast(version, "2025-06-18")) {
      t["title"] = spec.title;
      t["outputSchema"] = *tools[i]->output_schema;
    }
    list.push_back(std::move(t));
  }
  json result = {{"tools", std::move(list)}};
  if (end < tools.size()) result["nextCursor"] = "tools:" + std::to_string(end);
  return result;
}

Result<json> Server::onSetLevel(const SetLevelParams& p) {
  client_log_level_ = p.level;
  return json::object();
}

void Server::logToClient(int level, const json& data) {
  if (level < client_log_level_.load() || protocolVersion().empty()) return;
  transport_.send(
      makeNotification("notifications/message",
                       {{"level", kLogLevels[level]}, {"logger", options_.name}, {"data", data}}));
}

}  // namespace byd::mcp
