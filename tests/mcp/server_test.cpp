#include "mcp/server.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <set>

#include "backends/state/state_backend.h"
#include "tests/mcp/fake_transport.h"

namespace byd::mcp {
namespace {

using byd::testing::FakeTransport;

// A State backend whose stat() of "gate/..." blocks until the test opens the gate, so a tool
// call can be held in flight deterministically.
class GatedBackend : public StateBackend {
 public:
  Result<FileInfo> stat(const std::string& key) const override {
    if (key.starts_with("gate")) {
      std::unique_lock lock(mu_);
      ++waiting_;
      cv_.notify_all();
      cv_.wait(lock, [&] { return open_; });
    }
    return StateBackend::stat(key);
  }
  void open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  void waitUntilBlocked(int n) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return waiting_ >= n; });
  }

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  mutable int waiting_ = 0;
  bool open_ = false;
};

class ServerTest : public ::testing::Test {
 protected:
  ServerTest() { reset(ServerOptions{}); }

  void reset(ServerOptions options) {
    server_.reset();
    options.instructions = "test instructions";
    server_ = std::make_unique<Server>(transport_, backend_, Limits{}, options);
  }

  // Sends a request and waits for its answer.
  json call(const json& id, const std::string& method, json params = nullptr) {
    json m = {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
    if (!params.is_null()) m["params"] = std::move(params);
    server_->onFrame(m.dump());
    return transport_.waitForId(id);
  }

  json initialize(const std::string& version = "2025-06-18") {
    json r = call("init", "initialize",
                  {{"protocolVersion", version},
                   {"capabilities", json::object()},
                   {"clientInfo", {{"name", "test"}, {"version", "1"}}}});
    server_->onFrame(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
    return r;
  }

  ~ServerTest() override {
    backend_.open();
    server_.reset();
  }

  FakeTransport transport_;
  GatedBackend backend_;
  std::unique_ptr<Server> server_;
};

TEST_F(ServerTest, InitializeEchoesSupportedVersion) {
  json r = initialize("2025-03-26");
  EXPECT_EQ(r["result"]["protocolVersion"], "2025-03-26");
  EXPECT_EQ(r["result"]["serverInfo"]["name"], "backyard-mcp");
  EXPECT_EQ(r["result"]["instructions"], "test instructions");
  EXPECT_TRUE(r["result"]["capabilities"].contains("tools"));
  EXPECT_TRUE(r["result"]["capabilities"].contains("logging"));
}

TEST_F(ServerTest, InitializeAnswersLatestForUnknownVersion) {
  json r = initialize("1999-01-01");
  EXPECT_EQ(r["result"]["protocolVersion"], "2025-11-25");
  EXPECT_EQ(r["result"]["serverInfo"]["title"], "backyard-mcp");
}

TEST_F(ServerTest, InitializeTwiceIsAnError) {
  initialize();
  json r = call(2, "initialize", {{"protocolVersion", "2025-06-18"}});
  EXPECT_EQ(r["error"]["code"], rpc::kInvalidRequest);
  EXPECT_EQ(r["error"]["message"], "the session is already initialized");
}

TEST_F(ServerTest, InitializeWithoutVersionIsInvalidParams) {
  json r = call(1, "initialize", json::object());
  EXPECT_EQ(r["error"]["code"], rpc::kInvalidParams);
  EXPECT_EQ(r["error"]["message"], "protocolVersion is required and must be a string");
}

TEST_F(ServerTest, RequestsBeforeInitializeAreRefusedButPingWorks) {
  json r = call(1, "tools/list");
  EXPECT_EQ(r["error"]["code"], rpc::kInvalidRequest);
  EXPECT_EQ(r["error"]["message"], "the session is not initialized: send initialize first");
  r = call(2, "tools/call", {{"name", "ls"}});
  EXPECT_EQ(r["error"]["code"], rpc::kInvalidRequest);
  r = call(3, "ping");
  EXPECT_EQ(r["result"], json::object());
}

TEST_F(ServerTest, UnknownMethod) {
  initialize();
  json r = call(5, "resources/list");
  EXPECT_EQ(r["error"]["code"], rpc::kMethodNotFound);
  EXPECT_EQ(r["error"]["message"], "method not found: resources/list");
}

TEST_F(ServerTest, ParseErrorHasNullId) {
  server_->onFrame("{not json");
  ASSERT_TRUE(transport_.waitForCount(1));
  json r = transport_.sent()[0];
  EXPECT_TRUE(r["id"].is_null());
  EXPECT_EQ(r["error"]["code"], rpc::kParseError);
}

TEST_F(ServerTest, InvalidRequestKeepsId) {
  server_->onFrame(R"({"jsonrpc":"2.0","id":9,"method":7})");
  json r = transport_.waitForId(9);
  EXPECT_EQ(r["error"]["code"], rpc::kInvalidRequest);
}

TEST_F(ServerTest, OversizedFrameIsReported) {
  server_->onOversizedFrame(123456789);
  ASSERT_TRUE(transport_.waitForCount(1));
  json r = transport_.sent()[0];
  EXPECT_EQ(r["error"]["code"], rpc::kInvalidRequest);
  EXPECT_EQ(r["error"]["message"],
            "message of 123456789 bytes exceeds the size limit and was discarded");
}

TEST_F(ServerTest, ToolsListHasEveryToolWithSchemasAndAnnotations) {
  initialize("2025-06-18");
  json r = call(2, "tools/list");
  const json& tools = r["result"]["tools"];
  ASSERT_EQ(tools.size(), 9u);
  std::vector<std::string> names;
  for (const json& t : tools) {
    names.push_back(t["name"]);
    EXPECT_EQ(t["inputSchema"]["type"], "object");
    EXPECT_EQ(t["outputSchema"]["type"], "object");
    EXPECT_FALSE(t["title"].get<std::string>().empty());
    EXPECT_EQ(t["annotations"]["openWorldHint"], false);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"ls", "read_file", "write_file", "edit_file", "mkdir",
                                             "move", "delete", "glob", "grep"}));
  EXPECT_EQ(tools[0]["annotations"]["readOnlyHint"], true);
  EXPECT_EQ(tools[2]["annotations"]["destructiveHint"], true);
  // mkdir changes files but destroys nothing, and doing it twice is doing it once.
  EXPECT_EQ(tools[4]["annotations"]["readOnlyHint"], false);
  EXPECT_EQ(tools[4]["annotations"]["destructiveHint"], false);
  EXPECT_EQ(tools[4]["annotations"]["idempotentHint"], true);
  EXPECT_EQ(tools[5]["annotations"]["destructiveHint"], true);
  EXPECT_EQ(tools[5]["annotations"]["idempotentHint"], false);
  EXPECT_EQ(tools[6]["annotations"]["destructiveHint"], true);
  EXPECT_FALSE(r["result"].contains("nextCursor"));
}

TEST_F(ServerTest, OlderClientsGetNoTitleOrOutputSchema) {
  initialize("2024-11-05");
  json t = call(2, "tools/list")["result"]["tools"][0];
  EXPECT_FALSE(t.contains("outputSchema"));
  EXPECT_FALSE(t.contains("title"));
  EXPECT_FALSE(t.contains("annotations"));
}

TEST_F(ServerTest, WithoutStructuredContentToolsAnswerTheirTextAlone) {
  ServerOptions options;
  options.structured_content = false;
  reset(options);
  initialize("2025-06-18");
  const json listed = call(2, "tools/list");
  for (const json& t : listed["result"]["tools"]) {
    EXPECT_FALSE(t.contains("outputSchema")) << t["name"];
    EXPECT_EQ(t["inputSchema"]["type"], "object") << t["name"];
  }
  json r = call(3, "tools/call",
                {{"name", "write_file"}, {"arguments", {{"path", "a.txt"}, {"content", "hi\n"}}}});
  EXPECT_EQ(r["result"]["isError"], false);
  EXPECT_FALSE(r["result"].contains("structuredContent"));
  r = call(4, "tools/call", {{"name", "read_file"}, {"arguments", {{"path", "a.txt"}}}});
  EXPECT_EQ(r["result"]["content"][0]["text"], "     1\thi\n");
  EXPECT_FALSE(r["result"].contains("structuredContent"));
  // The same server with them, for contrast.
  reset(ServerOptions{});
  initialize("2025-06-18");
  r = call(5, "tools/call", {{"name", "read_file"}, {"arguments", {{"path", "a.txt"}}}});
  EXPECT_EQ(r["result"]["structuredContent"]["content"], "hi\n");
}

TEST_F(ServerTest, ToolsListPaginatesStably) {
  ServerOptions options;
  options.page_size = 4;
  reset(options);
  initialize();
  json first = call(2, "tools/list")["result"];
  ASSERT_EQ(first["tools"].size(), 4u);
  ASSERT_TRUE(first.contains("nextCursor"));
  json second = call(3, "tools/list", {{"cursor", first["nextCursor"]}})["result"];
  ASSERT_EQ(second["tools"].size(), 4u);
  EXPECT_EQ(second["tools"][0]["name"], "mkdir");
  ASSERT_TRUE(second.contains("nextCursor"));
  json third = call(5, "tools/list", {{"cursor", second["nextCursor"]}})["result"];
  ASSERT_EQ(third["tools"].size(), 1u);
  EXPECT_EQ(third["tools"][0]["name"], "grep");
  EXPECT_FALSE(third.contains("nextCursor"));
  json bad = call(4, "tools/list", {{"cursor", "garbage"}});
  EXPECT_EQ(bad["error"]["code"], rpc::kInvalidParams);
  EXPECT_EQ(bad["error"]["message"], "invalid cursor");
}

TEST_F(ServerTest, ToolCallRoundTrip) {
  initialize();
  json r = call(2, "tools/call",
                {{"name", "write_file"}, {"arguments", {{"path", "a.txt"}, {"content", "hi\n"}}}});
  EXPECT_EQ(r["result"]["isError"], false);
  EXPECT_EQ(r["result"]["structuredContent"]["bytes_written"], 3);
  r = call(3, "tools/call", {{"name", "read_file"}, {"arguments", {{"path", "a.txt"}}}});
  EXPECT_EQ(r["result"]["content"][0]["text"], "     1\thi\n");
}

TEST_F(ServerTest, UnknownToolIsInvalidParams) {
  initialize();
  json r = call(2, "tools/call", {{"name", "rm_rf"}});
  EXPECT_EQ(r["error"]["code"], rpc::kInvalidParams);
  EXPECT_EQ(r["error"]["message"], "unknown tool: rm_rf");
}

TEST_F(ServerTest, ToolCallWithoutNameIsInvalidParams) {
  initialize();
  json r = call(2, "tools/call", {{"arguments", json::object()}});
  EXPECT_EQ(r["error"]["code"], rpc::kInvalidParams);
}

TEST_F(ServerTest, BadArgumentsAreAToolError) {
  initialize();
  json r = call(2, "tools/call", {{"name", "read_file"}, {"arguments", {{"path", 5}}}});
  EXPECT_EQ(r["result"]["isError"], true);
  EXPECT_EQ(r["result"]["content"][0]["text"],
            "invalid arguments for read_file: arguments.path: must be a string, got number 5");
}

TEST_F(ServerTest, SlowToolCallDoesNotDelayPing) {
  initialize();
  server_->onFrame(
      R"({"jsonrpc":"2.0","id":"slow","method":"tools/call","params":{"name":"ls","arguments":{"path":"gate"}}})");
  backend_.waitUntilBlocked(1);
  EXPECT_EQ(call("p", "ping")["result"], json::object());
  for (const json& m : transport_.sent()) EXPECT_NE(m.value("id", json()), "slow");
  backend_.open();
  json slow = transport_.waitForId("slow");
  EXPECT_EQ(slow["result"]["isError"], true);  // "gate" does not exist
}

TEST_F(ServerTest, CancelledRequestGetsNoResponse) {
  initialize();
  server_->onFrame(
      R"({"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"ls","arguments":{"path":"gate"}}})");
  backend_.waitUntilBlocked(1);
  server_->onFrame(
      R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":41,"reason":"user"}})");
  // The transport hears that no answer comes only once the call has stopped.
  EXPECT_TRUE(transport_.unansweredIds().empty());
  backend_.open();
  server_->drain();
  EXPECT_EQ(transport_.unansweredIds(), std::vector<std::string>{"41"});
  EXPECT_EQ(call(42, "ping")["result"], json::object());
  for (const json& m : transport_.sent()) EXPECT_NE(m.value("id", json()), 41) << m.dump();
}

TEST_F(ServerTest, DuplicateInFlightIdIsRefused) {
  initialize();
  const char* slow =
      R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ls","arguments":{"path":"gate"}}})";
  server_->onFrame(slow);
  backend_.waitUntilBlocked(1);
  server_->onFrame(slow);
  json dup = transport_.waitForId(7);
  EXPECT_EQ(dup["error"]["message"], "request id 7 is already in use");
  backend_.open();
  server_->drain();
  size_t answers = 0;
  for (const json& m : transport_.sent()) answers += m.value("id", json()) == 7;
  EXPECT_EQ(answers, 2u);
}

TEST_F(ServerTest, BatchOnlyAt20250326) {
  initialize("2025-06-18");
  server_->onFrame(R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])");
  ASSERT_TRUE(transport_.waitForCount(2));
  json r = transport_.sent()[1];
  EXPECT_EQ(r["error"]["code"], rpc::kInvalidRequest);
  EXPECT_TRUE(r["id"].is_null());
}

TEST_F(ServerTest, BatchAnsweredAsOneArray) {
  initialize("2025-03-26");
  server_->onFrame(R"([{"jsonrpc":"2.0","id":1,"method":"ping"},
                       {"jsonrpc":"2.0","method":"notifications/initialized"},
                       {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ls"}},
                       {"jsonrpc":"2.0","id":3,"method":"nope"}])");
  ASSERT_TRUE(transport_.waitForCount(2));
  json batch = transport_.sent()[1];
  ASSERT_TRUE(batch.is_array()) << batch.dump();
  ASSERT_EQ(batch.size(), 3u);
  std::set<int> ids;
  for (const json& r : batch) ids.insert(r["id"].get<int>());
  EXPECT_EQ(ids, (std::set<int>{1, 2, 3}));
}

TEST_F(ServerTest, SetLevelControlsLogNotifications) {
  initialize();
  call(2, "tools/call", {{"name", "ls"}});
  for (const json& m : transport_.sent()) EXPECT_NE(m.value("method", ""), "notifications/message");
  EXPECT_EQ(call(3, "logging/setLevel", {{"level", "debug"}})["result"], json::object());
  call(4, "tools/call", {{"name", "ls"}});
  server_->drain();
  bool logged = false;
  for (const json& m : transport_.sent()) {
    if (m.value("method", "") == "notifications/message") {
      logged = true;
      EXPECT_EQ(m["params"]["level"], "debug");
      EXPECT_EQ(m["params"]["data"]["tool"], "ls");
    }
  }
  EXPECT_TRUE(logged);
  json bad = call(5, "logging/setLevel", {{"level", "loud"}});
  EXPECT_EQ(bad["error"]["code"], rpc::kInvalidParams);
}

}  // namespace
}  // namespace byd::mcp
