#pragma once
// The tasks extension (io.modelcontextprotocol/tasks, 2026-07-28): a tool call that outlives
// its request. A client that declares the extension gets, for a tool that can run as a task,
// a CreateTaskResult at once ({"resultType": "task", "taskId", "status": "working", ...});
// the call runs on a thread of its own, and the client polls tasks/get (its status, then its
// result or error), answers the questions it asks (status "input_required", answered by
// tasks/update) and may end it with tasks/cancel. Statuses: working, input_required, and the
// terminal completed (the tool's result, isError included), failed (a protocol or internal
// error) and cancelled; a terminal task never changes and is kept for its ttl. Thread-safe.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/cancel.h"
#include "common/result.h"

namespace byd::mcp {

using nlohmann::json;

inline constexpr std::string_view kTasksExtension = "io.modelcontextprotocol/tasks";

class TaskStore {
 public:
  struct Task;
  // ttl: how long a task is kept once it has ended.
  explicit TaskStore(std::chrono::milliseconds ttl = std::chrono::hours(1),
                     std::chrono::milliseconds poll = std::chrono::milliseconds(500));
  ~TaskStore();  // cancels what runs and waits for it
  TaskStore(const TaskStore&) = delete;
  TaskStore& operator=(const TaskStore&) = delete;

  // Starts `work` as a new task on a thread of its own, registered before this returns; the
  // CreateTaskResult. `work` gets the task's cancellation token and a way to ask the client
  // (see ask()); its Status, when not OK, is the task's error as `toError` makes it.
  // `owner` (the dispatcher that started it) may end its own tasks with stopOwnedBy(); any
  // dispatcher sharing the store may get, update and cancel them.
  using Ask = std::function<Result<json>(const json& questions)>;
  json start(const void* owner,
             std::function<Result<json>(const CancelToken& cancel, const Ask& ask)> work,
             std::function<json(const Status&)> toError);
  // tasks/get: the task as it is now; NotFound (-32602 to the client) for an unknown id.
  Result<json> get(const std::string& id);
  // tasks/update: answers to the questions the task waits for; keys it does not wait for are
  // ignored. When none is left, it works on.
  Status update(const std::string& id, const json& responses);
  // tasks/cancel: ends a task that has not ended (a terminal one stays as it is).
  Status cancel(const std::string& id);
  // Cancels every task and waits for their threads.
  void stopAll();
  // Cancels the tasks `owner` started that have not ended, and waits for their threads; what
  // has ended stays to be read for its ttl.
  void stopOwnedBy(const void* owner);
  // Tasks `owner` started that have not ended.
  size_t running(const void* owner) const;

 private:
  std::shared_ptr<Task> find(const std::string& id);
  // Cancels `tasks` (those that have not ended) and waits for their threads.
  static void stop(const std::vector<std::shared_ptr<Task>>& tasks);
  void sweep();                           // drops tasks that ended longer than ttl ago (mu_ held)
  json describe(const Task& task) const;  // task.mu held

  const std::chrono::milliseconds ttl_, poll_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Task>> tasks_;
  bool stopping_ = false;
};

}  // namespace byd::mcp
