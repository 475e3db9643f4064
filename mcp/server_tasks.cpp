#include <spdlog/spdlog.h>

#include "mcp/server.h"
#include "mcp/server_helpers.h"

// The dispatcher's side of the tasks extension (io.modelcontextprotocol/tasks): which calls
// run as tasks, their peer, and tasks/get, tasks/update and tasks/cancel.

namespace byd::mcp {

using namespace detail;

namespace {

const std::string kTasksCapability = "extensions/" + std::string(kTasksExtension);

Result<std::string> taskIdOf(const json& p) {
  if (!p.is_object() || !p.contains("taskId") || !p["taskId"].is_string()) {
    return invalidArgument("params.taskId is required and must be a string");
  }
  return p["taskId"].get<std::string>();
}

}  // namespace

// How a tool running as a task reaches its client: questions wait in the task (status
// input_required) for tasks/update; nothing else reaches a client that may have gone.
class Server::TaskPeer : public Peer {
 public:
  TaskPeer(Server& server, std::string name, const Caller& caller, const CancelToken& cancel,
           const TaskStore::Ask& ask)
      : server_(server), name_(std::move(name)), caller_(caller), cancel_(cancel), ask_(ask) {}
  void progress(double, std::optional<double>, std::string_view) override {}
  void log(std::string_view, const json&) override {}
  Result<json> askAll(const json& questions) override {
    BYD_RETURN_IF_ERROR(checkQuestions(
        questions, [&](const char* capability) { return caller_.has(capability); },
        [](const std::string&, const std::string&) { return false; }));
    return ask_(questions);
  }
  bool clientSupports(std::string_view capability) const override {
    return caller_.has(capability);
  }
  void listChanged(std::string_view list) override { server_.listChanged(list); }
  bool closeStream() override { return false; }
  const CancelToken& cancel() const override { return cancel_; }
  Result<json> asTask(const std::function<Result<json>(Peer&)>& work) override {
    return work(*this);  // already one
  }

 private:
  Server& server_;
  const std::string name_;
  const Caller caller_;
  const CancelToken cancel_;
  const TaskStore::Ask& ask_;
};

bool Server::tasksDeclared(const Caller& caller) {
  const auto ext = caller.capabilities.is_object() ? caller.capabilities.find("extensions")
                                                   : caller.capabilities.end();
  return caller.capabilities.is_object() && ext != caller.capabilities.end() && ext->is_object() &&
         ext->contains(kTasksExtension);
}

std::string Server::taskSupport(const std::string& name) const {
  if (const CatalogTool* tool = findCatalogTool(name)) {
    const json& d = tool->definition;
    if (d.contains("execution") && d["execution"].is_object()) {
      return d["execution"].value("taskSupport", "forbidden");
    }
    return "forbidden";
  }
  const Tool* tool = findTool(name);
  return tool != nullptr ? std::string(tool->spec->task_support) : "forbidden";
}

json Server::startTask(const Caller& caller, const std::string& name,
                       std::function<Result<json>(Peer&)> work) {
  json created = tasks_->start(
      this,
      [this, caller, name, work = std::move(work)](const CancelToken& cancel,
                                                   const TaskStore::Ask& ask) {
        TaskPeer peer(*this, name, caller, cancel, ask);
        return work(peer);
      },
      [this, caller](const Status& s) { return errorFor(nullptr, s, caller)["error"]; });
  spdlog::info("tools/call {} runs as task {}", name, created.value("taskId", ""));
  return created;
}

Result<json> Server::onTaskGet(const json& p, const Caller& caller) {
  if (!tasksDeclared(caller)) return missingCapability(kTasksCapability, "tasks/get");
  BYD_ASSIGN_OR_RETURN(const std::string id, taskIdOf(p));
  return tasks_->get(id);
}

Result<json> Server::onTaskUpdate(const json& p, const Caller& caller) {
  if (!tasksDeclared(caller)) return missingCapability(kTasksCapability, "tasks/update");
  BYD_ASSIGN_OR_RETURN(const std::string id, taskIdOf(p));
  BYD_RETURN_IF_ERROR(tasks_->update(id, p.value("inputResponses", json::object())));
  return json::object();
}

Result<json> Server::onTaskCancel(const json& p, const Caller& caller) {
  if (!tasksDeclared(caller)) return missingCapability(kTasksCapability, "tasks/cancel");
  BYD_ASSIGN_OR_RETURN(const std::string id, taskIdOf(p));
  BYD_RETURN_IF_ERROR(tasks_->cancel(id));
  return json::object();
}

}  // namespace byd::mcp
