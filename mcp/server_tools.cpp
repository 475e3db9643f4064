#include "mcp/server.h"

#include <spdlog/spdlog.h>

#include "mcp/elicitation.h"
#include "mcp/request_scope.h"
#include "mcp/server_helpers.h"
#include "permissions/guarded_backend.h"
#include "schemas/validator.h"
#include "tools/registry.h"

// The dispatcher's tools: tools/list, and running a tool call (a console tool on the guarded
// backend, with its permission checks and approvals, or a catalog tool with its peer).

namespace byd::mcp {

using namespace detail;

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
    BYD_RETURN_IF_ERROR(checkQuestions(
        questions, [&](const char* capability) { return caller_.has(capability); },
        [&](const std::string& key, const std::string& method) {
          return caller_.stateless && answered(key, method);
        }));
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
  Result<json> asTask(const std::function<Result<json>(Peer&)>& work) override {
    if (!tasksDeclared(caller_)) return work(*this);
    return server_.startTask(caller_, name_, work);
  }

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

const CatalogTool* Server::findCatalogTool(std::string_view name) const {
  if (!options_.catalog) return nullptr;
  for (const CatalogTool& tool : options_.catalog->tools) {
    if (tool.definition.value("name", "") == name) return &tool;
  }
  return nullptr;
}

Result<json> Server::onCallTool(const CallToolParams& p, const Caller& caller) {
  const auto start = std::chrono::steady_clock::now();
  // The tasks extension: a tool that can run as a task does when the client declared it; one
  // that must cannot run for a client that did not.
  const std::string support = taskSupport(p.name);
  if (support == "required" && !tasksDeclared(caller)) {
    return missingCapability("extensions/" + std::string(kTasksExtension), "tool " + p.name);
  }
  const CatalogTool* catalog_tool = findCatalogTool(p.name);
  if (support != "forbidden" && tasksDeclared(caller) && !fromOperatorPage() &&
      !(catalog_tool != nullptr && catalog_tool->starts_task) &&
      (catalog_tool != nullptr ||
       (findTool(p.name) != nullptr && toolVisible(*findTool(p.name))))) {
    CallToolParams detached = p;
    detached.progress_token = nullptr;  // its request is answered at once
    return startTask(caller, p.name, [this, detached, caller](Peer& peer) {
      Caller own = caller;
      own.cancel = peer.cancel();
      return runToolCall(detached, own, &peer);
    });
  }
  Result<json> result = runToolCall(p, caller);
  const bool is_error = !result.ok() || !result->is_object() || result->value("isError", false);
  if (const int level = is_error ? 2 : 0; wantsLog(level, caller)) {
    logToClient(level, {{"tool", p.name}, {"duration_ms", msSince(start)}, {"isError", is_error}},
                caller);
  }
  return result;
}

Result<json> Server::dispatchToolCall(const CallToolParams& p, const Caller& caller, Peer* task) {
  const CancelToken& token = caller.cancel;
  if (const CatalogTool* tool = findCatalogTool(p.name)) {
    // Bad arguments are the model's to fix, so they come back as a tool error, as for the
    // console tools.
    if (auto schema = tool->definition.find("inputSchema"); schema != tool->definition.end()) {
      if (Status s = schemas::validate(*schema, p.arguments, "arguments"); !s.ok()) {
        return json{{"content", {{{"type", "text"}, {"text", s.message()}}}}, {"isError", true}};
      }
    }
    if (task != nullptr) return tool->call(p.arguments, *task);
    return withPeer("tools/call", p.name, p.arguments, p.input, p.progress_token, caller,
                    [&](Peer& peer) { return tool->call(p.arguments, peer); });
  }
  const bool structured = options_.structured_content && atLeast(caller.version, "2025-06-18");
  if (options_.remote && (!options_.catalog || options_.catalog->console_tools)) {
    return forwardToolCall(p, caller, structured);
  }
  const Tool* tool = findTool(p.name);
  if (tool == nullptr || (options_.catalog && !options_.catalog->console_tools)) {
    return invalidArgument("unknown tool: " + p.name);
  }
  if (!toolOffered(*tool, backend_, nullptr)) return invalidArgument("unknown tool: " + p.name);
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
  // Nor can the operator's page, which answers no question: the fallback decides at once.
  const auto client = !caller.stateless && caller.has("elicitation") && !fromOperatorPage()
                          ? ElicitingApprover::Client::kCanAsk
                          : ElicitingApprover::Client::kCannotAsk;
  ElicitingApprover approver(client_requests_, client, options_.ask_timeout, token, grants_);
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
  const auto digest = [&] { return signer_.digest(arguments.dump()); };
  if (caller.stateless) {
    // Answers the client sends now; what an earlier round settled (signed) wins over them.
    if (input.responses.is_object()) answers = input.responses;
    if (input.request_state) {
      BYD_ASSIGN_OR_RETURN(json state, signer_.verify(*input.request_state, method, name));
      BYD_ASSIGN_OR_RETURN(const std::string expected, digest());
      if (state.value("arguments", "") != expected) {
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
    BYD_ASSIGN_OR_RETURN(const std::string bound, digest());
    BYD_ASSIGN_OR_RETURN(
        std::string state,
        signer_.sign({{"answers", peer.used()}, {"arguments", bound}}, method, name));
    return json{{"resultType", "input_required"},
                {"inputRequests", peer.open()},
                {"requestState", std::move(state)}};
  }
  return result;
}

bool toolOffered(const Tool& tool, Backend& backend, const permissions::Guard* guard) {
  const bool runs_code = tool.spec->operation == "execute" || tool.spec->operation == "python";
  if (runs_code && backend.executor() == nullptr) return false;
  if (tool.spec->operation == "python" && !backend.executor()->runsPython()) return false;
  if (guard == nullptr) return true;
  const auto op = permissions::parseOperation(tool.spec->operation);
  return op && !guard->hidden(*op);
}

bool Server::toolVisible(const Tool& tool) const {
  // The remote decides what it offers (tools/list asks it).
  return options_.remote != nullptr || toolOffered(tool, backend_, guard_);
}

Result<json> Server::onListTools(const ListParams& p, const Caller& caller) {
  const std::string& version = caller.version;
  std::vector<json> tools;
  // Tools whose operation the rules always deny are not offered at all.
  const bool console = !options_.catalog || options_.catalog->console_tools;
  if (console && options_.remote) {
    BYD_ASSIGN_OR_RETURN(const json remote,
                         options_.remote->tools(remoteCall(caller, nullptr, "")));
    for (json definition : remote) {
      if (!options_.structured_content) definition.erase("outputSchema");
      if (!atLeast(version, "2025-11-25")) definition.erase("execution");
      tools.push_back(toolForVersion(std::move(definition), version));
    }
  }
  for (const Tool& tool : allTools()) {
    if (!console || options_.remote || !toolVisible(tool)) continue;
    const ToolSpec& spec = *tool.spec;
    json definition = {{"name", spec.name},
                       {"title", spec.title},
                       {"description", spec.description},
                       {"inputSchema", *tool.input_schema},
                       {"outputSchema", *tool.output_schema},
                       {"annotations",
                        {{"title", spec.title},
                         {"readOnlyHint", spec.read_only},
                         {"destructiveHint", spec.destructive},
                         {"idempotentHint", spec.idempotent},
                         {"openWorldHint", false}}}};
    // A tool that declares an outputSchema must answer structuredContent.
    if (!options_.structured_content) definition.erase("outputSchema");
    // Those that may take long can run as tasks (the tasks extension).
    if (const std::string support = taskSupport(std::string(spec.name));
        support != "forbidden" && atLeast(version, "2025-11-25")) {
      definition["execution"] = {{"taskSupport", support}};
    }
    tools.push_back(toolForVersion(std::move(definition), version));
  }
  if (options_.catalog) {
    for (const CatalogTool& tool : options_.catalog->tools) {
      tools.push_back(toolForVersion(tool.definition, version));
    }
  }
  return page(std::move(tools), p.cursor, "tools", options_.page_size);
}

}  // namespace byd::mcp
