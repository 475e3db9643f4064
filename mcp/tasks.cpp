#include "mcp/tasks.h"

#include <vector>

#include "common/text.h"
#include "mcp/stateless.h"

namespace byd::mcp {
namespace {

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool terminal(std::string_view status) {
  return status == "completed" || status == "failed" || status == "cancelled";
}

}  // namespace

struct TaskStore::Task {
  std::string id;
  const void* owner = nullptr;  // the dispatcher that started it
  std::mutex mu;
  std::condition_variable cv;
  std::string status = "working";
  int64_t created_ns = nowNs(), updated_ns = created_ns;
  std::chrono::steady_clock::time_point ended;
  json result, error;
  json pending = json::object();  // the questions it waits for: {key: {method, params}}
  json answers = json::object();  // answers given by tasks/update, not yet taken
  CancelToken cancel;
  std::thread worker;
  std::mutex join_mu;  // the store's sweep and a dispatcher's stop may both wait for it

  void join() {
    std::lock_guard lock(join_mu);
    if (worker.joinable()) worker.join();
  }

  void set(std::string to) {  // mu held
    status = std::move(to);
    updated_ns = nowNs();
    if (terminal(status)) ended = std::chrono::steady_clock::now();
    cv.notify_all();
  }
};

TaskStore::TaskStore(std::chrono::milliseconds ttl, std::chrono::milliseconds poll)
    : ttl_(ttl), poll_(poll) {}

TaskStore::~TaskStore() { stopAll(); }

void TaskStore::stop(const std::vector<std::shared_ptr<Task>>& tasks) {
  for (const auto& task : tasks) {
    {
      std::lock_guard lock(task->mu);
      task->cancel.cancel();
      if (!terminal(task->status)) task->set("cancelled");
    }
    task->join();
  }
}

void TaskStore::stopAll() {
  std::vector<std::shared_ptr<Task>> all;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    for (auto& [id, task] : tasks_) all.push_back(task);
  }
  stop(all);
}

void TaskStore::stopOwnedBy(const void* owner) {
  std::vector<std::shared_ptr<Task>> owned;
  {
    std::lock_guard lock(mu_);
    for (auto& [id, task] : tasks_) {
      if (task->owner == owner) owned.push_back(task);
    }
  }
  stop(owned);
}

size_t TaskStore::running(const void* owner) const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& [id, task] : tasks_) {
    std::lock_guard task_lock(task->mu);
    n += task->owner == owner && !terminal(task->status);
  }
  return n;
}

json TaskStore::start(const void* owner,
                      std::function<Result<json>(const CancelToken&, const Ask&)> work,
                      std::function<json(const Status&)> toError) {
  auto task = std::make_shared<Task>();
  task->id = randomHex(16);
  task->owner = owner;
  // Questions wait for tasks/update (or the end of the task).
  Ask ask = [task](const json& questions) -> Result<json> {
    std::unique_lock lock(task->mu);
    json answers = json::object();
    for (const auto& [key, q] : questions.items()) {
      if (task->answers.contains(key)) {
        answers[key] = task->answers[key];
        task->answers.erase(key);
      } else {
        task->pending[key] = {{"method", q.value("method", "")},
                              {"params", q.value("params", json::object())}};
      }
    }
    if (!task->pending.empty()) {
      task->set("input_required");
      task->cv.wait(lock, [&] { return task->pending.empty() || terminal(task->status); });
      if (terminal(task->status)) return cancelled("the task was cancelled");
      for (const auto& [key, q] : questions.items()) {
        if (!answers.contains(key) && task->answers.contains(key)) {
          answers[key] = task->answers[key];
          task->answers.erase(key);
        }
      }
    }
    return answers;
  };
  // Registered and started under the store's lock: a stop that finds it finds its thread.
  std::lock_guard lock(mu_);
  sweep();
  tasks_[task->id] = task;
  std::lock_guard task_lock(task->mu);
  json created = describe(*task);
  created["resultType"] = "task";
  if (stopping_) {
    task->set("cancelled");
    return created;
  }
  task->worker = std::thread(
      [task, work = std::move(work), toError = std::move(toError), ask = std::move(ask)] {
        Result<json> outcome = work(task->cancel, ask);
        std::lock_guard lock(task->mu);
        if (terminal(task->status)) return;  // cancelled meanwhile: its outcome is dropped
        if (outcome.ok()) {
          task->result = std::move(*outcome);
          task->set("completed");
        } else {
          task->error = toError(outcome.status());
          task->set("failed");
        }
      });
  return created;
}

std::shared_ptr<TaskStore::Task> TaskStore::find(const std::string& id) {
  std::lock_guard lock(mu_);
  sweep();
  auto it = tasks_.find(id);
  return it == tasks_.end() ? nullptr : it->second;
}

void TaskStore::sweep() {
  const auto now = std::chrono::steady_clock::now();
  for (auto it = tasks_.begin(); it != tasks_.end();) {
    Task& t = *it->second;
    std::unique_lock lock(t.mu, std::try_to_lock);
    if (lock.owns_lock() && terminal(t.status) && now - t.ended > ttl_ && !stopping_) {
      lock.unlock();
      t.join();  // it has ended: returns at once
      it = tasks_.erase(it);
    } else {
      ++it;
    }
  }
}

json TaskStore::describe(const Task& t) const {
  json out = {{"taskId", t.id},
              {"status", t.status},
              {"createdAt", isoTime(t.created_ns)},
              {"lastUpdatedAt", isoTime(t.updated_ns)},
              {"ttlMs", ttl_.count()},
              {"pollIntervalMs", poll_.count()}};
  if (t.status == "completed") out["result"] = t.result;
  if (t.status == "failed") out["error"] = t.error;
  if (t.status == "input_required") out["inputRequests"] = t.pending;
  return out;
}

Result<json> TaskStore::get(const std::string& id) {
  auto task = find(id);
  if (!task) return invalidArgument("unknown task '" + id + "'");
  std::lock_guard lock(task->mu);
  return describe(*task);
}

Status TaskStore::update(const std::string& id, const json& responses) {
  auto task = find(id);
  if (!task) return invalidArgument("unknown task '" + id + "'");
  std::lock_guard lock(task->mu);
  if (!responses.is_object()) return invalidArgument("inputResponses must be an object");
  bool answered = false;
  for (const auto& [key, answer] : responses.items()) {
    const auto q = task->pending.find(key);
    if (q == task->pending.end()) continue;  // not asked (or answered before): ignored
    if (!stateless::validInputResponse((*q)["method"].get<std::string>(), answer)) {
      return invalidArgument("inputResponses." + key + " is not an answer to " +
                             (*q)["method"].get<std::string>());
    }
    task->answers[key] = answer;
    task->pending.erase(q);
    answered = true;
  }
  if (answered && task->pending.empty() && task->status == "input_required") task->set("working");
  return okStatus();
}

Status TaskStore::cancel(const std::string& id) {
  auto task = find(id);
  if (!task) return invalidArgument("unknown task '" + id + "'");
  std::lock_guard lock(task->mu);
  if (terminal(task->status)) return okStatus();
  task->cancel.cancel();
  task->set("cancelled");
  return okStatus();
}

}  // namespace byd::mcp
