// The task store of the tasks extension: its statuses, questions answered in parts,
// cancellation, errors, and keeping ended tasks for their ttl.

#include "mcp/tasks.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace byd::mcp {
namespace {

using namespace std::chrono_literals;

json waitFor(TaskStore& store, const std::string& id, std::string_view status) {
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (true) {
    auto got = store.get(id);
    EXPECT_TRUE(got.ok());
    if (!got.ok() || got->value("status", "") == status ||
        std::chrono::steady_clock::now() > until) {
      return got.ok() ? *got : json();
    }
    std::this_thread::sleep_for(5ms);
  }
}

json question(const std::string& message) {
  return {{"method", "elicitation/create"},
          {"params",
           {{"message", message},
            {"requestedSchema", {{"type", "object"}, {"properties", json::object()}}}}}};
}

json accept() { return {{"action", "accept"}, {"content", json::object()}}; }

json errorOf(const Status& s) { return {{"code", -32603}, {"message", s.message()}}; }

TEST(TaskStoreTest, ACreatedTaskIsFoundAtOnceAndEndsCompleted) {
  TaskStore store;
  std::atomic<bool> go{false};
  const json created = store.start(
      nullptr,
      [&](const CancelToken&, const TaskStore::Ask&) -> Result<json> {
        while (!go) std::this_thread::sleep_for(1ms);
        return json{{"content", {{{"type", "text"}, {"text", "done"}}}}};
      },
      errorOf);
  EXPECT_EQ(created["resultType"], "task");
  EXPECT_EQ(created["status"], "working");
  for (const char* absent : {"result", "error", "inputRequests", "requestState", "task"}) {
    EXPECT_FALSE(created.contains(absent)) << absent;
  }
  const std::string id = created["taskId"];
  EXPECT_EQ(store.get(id)->value("status", ""), "working");
  go = true;
  const json done = waitFor(store, id, "completed");
  EXPECT_EQ(done["result"]["content"][0]["text"], "done");
  EXPECT_FALSE(store.get("nosuch").ok());
}

TEST(TaskStoreTest, QuestionsWaitForEveryAnswerAndUnknownKeysAreIgnored) {
  TaskStore store;
  const json created = store.start(
      nullptr,
      [](const CancelToken&, const TaskStore::Ask& ask) -> Result<json> {
        BYD_ASSIGN_OR_RETURN(json answers, ask({{"a", question("A?")}, {"b", question("B?")}}));
        return json{{"content", json::array()}, {"answered", answers.size()}};
      },
      errorOf);
  const std::string id = created["taskId"];
  json waiting = waitFor(store, id, "input_required");
  ASSERT_EQ(waiting["status"], "input_required");
  EXPECT_EQ(waiting["inputRequests"].size(), 2u);
  ASSERT_TRUE(store.update(id, {{"a", accept()}, {"zzz", {{"ignored", true}}}}).ok());
  waiting = *store.get(id);
  EXPECT_EQ(waiting["status"], "input_required");  // b is still open
  EXPECT_FALSE(waiting["inputRequests"].contains("a"));
  EXPECT_TRUE(waiting["inputRequests"].contains("b"));
  EXPECT_FALSE(store.update(id, {{"b", "not an answer"}}).ok());
  ASSERT_TRUE(store.update(id, {{"b", accept()}}).ok());
  EXPECT_EQ(waitFor(store, id, "completed")["result"]["answered"], 2);
}

TEST(TaskStoreTest, CancelEndsTheWorkAndATerminalTaskStaysAsItIs) {
  TaskStore store;
  std::atomic<bool> saw_cancel{false};
  const std::string id = store.start(
      nullptr,
      [&](const CancelToken& cancel, const TaskStore::Ask&) -> Result<json> {
        while (!cancel.cancelled()) std::this_thread::sleep_for(1ms);
        saw_cancel = true;
        return json{{"content", json::array()}};
      },
      errorOf)["taskId"];
  ASSERT_TRUE(store.cancel(id).ok());
  EXPECT_EQ(store.get(id)->value("status", ""), "cancelled");
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (!saw_cancel && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
  EXPECT_TRUE(saw_cancel);
  std::this_thread::sleep_for(20ms);  // its result, if any, is dropped
  EXPECT_EQ(store.get(id)->value("status", ""), "cancelled");
  EXPECT_TRUE(store.cancel(id).ok());
  EXPECT_FALSE(store.get(id)->contains("result"));
}

TEST(TaskStoreTest, AnErrorFailsTheTaskAndEndedTasksGoAfterTheirTtl) {
  TaskStore store(200ms);
  const std::string id = store.start(
      nullptr,
      [](const CancelToken&, const TaskStore::Ask&) -> Result<json> {
        return internalError("it broke");
      },
      errorOf)["taskId"];
  const json failed = waitFor(store, id, "failed");
  EXPECT_EQ(failed["error"]["message"], "it broke");
  EXPECT_FALSE(failed.contains("result"));
  EXPECT_EQ(failed["ttlMs"], 200);
  std::this_thread::sleep_for(300ms);
  EXPECT_FALSE(store.get(id).ok());
}

// A dispatcher that ends stops the tasks it started, not those of another on the same store;
// what has ended stays for the others to read.
TEST(TaskStoreTest, AnOwnerStopsItsOwnTasksAndWhatEndedStaysForTheOthers) {
  TaskStore store;
  int first = 0, second = 0;  // two owners
  const auto forever = [](const CancelToken& cancel, const TaskStore::Ask&) -> Result<json> {
    while (!cancel.cancelled()) std::this_thread::sleep_for(1ms);
    return json{{"content", json::array()}};
  };
  const std::string done = store.start(
      &first,
      [](const CancelToken&, const TaskStore::Ask&) -> Result<json> {
        return json{{"content", json::array()}, {"isError", false}};
      },
      errorOf)["taskId"];
  waitFor(store, done, "completed");
  const std::string mine = store.start(&first, forever, errorOf)["taskId"];
  const std::string theirs = store.start(&second, forever, errorOf)["taskId"];
  EXPECT_EQ(store.running(&first), 1u);
  EXPECT_EQ(store.running(&second), 1u);
  store.stopOwnedBy(&first);  // returns once its thread has ended
  EXPECT_EQ(store.get(mine)->value("status", ""), "cancelled");
  EXPECT_EQ(store.running(&first), 0u);
  EXPECT_EQ(store.get(theirs)->value("status", ""), "working");
  EXPECT_EQ(store.running(&second), 1u);
  EXPECT_EQ(store.get(done)->value("status", ""), "completed");  // still there to read
  ASSERT_TRUE(store.cancel(theirs).ok());
  EXPECT_EQ(store.running(&second), 0u);
}

}  // namespace
}  // namespace byd::mcp
