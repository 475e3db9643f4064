#include <gtest/gtest.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include "backends/state/state_backend.h"
#include "mcp/server.h"
#include "permissions/presets.h"
#include "tests/mcp/fake_transport.h"

namespace byd::mcp {
namespace {

using byd::testing::FakeTransport;
using permissions::Guard;

Guard presetGuard(std::string_view name) {
  return Guard(permissions::Ruleset::fromJson(*permissions::presetJson(name)).value(),
               permissions::AskFallback::kDeny);
}

class ServerPermissionsTest : public ::testing::Test {
 protected:
  void start(std::string_view preset, bool elicitation,
             std::chrono::milliseconds ask_timeout = std::chrono::seconds(20)) {
    guard_ = std::make_unique<Guard>(presetGuard(preset));
    ServerOptions options;
    options.ask_timeout = ask_timeout;
    server_ = std::make_unique<Server>(transport_, backend_, Limits{}, options, guard_.get());
    json caps = elicitation ? json{{"elicitation", json::object()}} : json::object();
    send({{"jsonrpc", "2.0"},
          {"id", "init"},
          {"method", "initialize"},
          {"params", {{"protocolVersion", "2025-06-18"}, {"capabilities", caps}}}});
    ASSERT_FALSE(transport_.waitForId("init").is_null());
  }
  void send(const json& m) { server_->onFrame(m.dump()); }
  void callTool(int id, const std::string& name, json args) {
    send({{"jsonrpc", "2.0"},
          {"id", id},
          {"method", "tools/call"},
          {"params", {{"name", name}, {"arguments", std::move(args)}}}});
  }
  // Answers the server's elicitation/create with `result`.
  void answerElicitation(const json& result) {
    json ask = transport_.waitForMethod("elicitation/create");
    ASSERT_FALSE(ask.is_null());
    EXPECT_NE(ask["params"]["message"].get<std::string>().find("allow write for 'a.txt'"),
              std::string::npos)
        << ask.dump();
    EXPECT_EQ(ask["params"]["requestedSchema"]["properties"]["approve"]["type"], "boolean");
    send({{"jsonrpc", "2.0"}, {"id", ask["id"]}, {"result", result}});
  }
  static std::string text(const json& response) {
    return response["result"]["content"][0]["text"].get<std::string>();
  }

  ~ServerPermissionsTest() override { server_.reset(); }

  FakeTransport transport_;
  StateBackend backend_;
  std::unique_ptr<Guard> guard_;
  std::unique_ptr<Server> server_;
};

TEST_F(ServerPermissionsTest, ReadonlyOffersOnlyTheReadTools) {
  start("readonly", false);
  send({{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/list"}});
  json tools = transport_.waitForId(2)["result"]["tools"];
  std::vector<std::string> names;
  for (const json& t : tools) names.push_back(t["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"ls", "read_file", "glob", "grep"}));
  callTool(3, "write_file", {{"path", "a.txt"}, {"content", "x"}});
  json r = transport_.waitForId(3);
  EXPECT_EQ(r["result"]["isError"], true);
  EXPECT_EQ(text(r), "write denied for 'a.txt': by write default");
  EXPECT_FALSE(backend_.stat("a.txt").ok());
}

TEST_F(ServerPermissionsTest, AskAcceptedProceeds) {
  start("default", true);
  callTool(2, "write_file", {{"path", "a.txt"}, {"content", "x"}});
  answerElicitation({{"action", "accept"}, {"content", {{"approve", true}}}});
  json r = transport_.waitForId(2);
  EXPECT_EQ(r["result"]["isError"], false) << r.dump();
  EXPECT_TRUE(backend_.stat("a.txt").ok());
}

TEST_F(ServerPermissionsTest, AskDeclinedIsDenied) {
  start("default", true);
  callTool(2, "write_file", {{"path", "a.txt"}, {"content", "x"}});
  answerElicitation({{"action", "decline"}});
  json r = transport_.waitForId(2);
  EXPECT_EQ(r["result"]["isError"], true);
  EXPECT_EQ(text(r), "write for 'a.txt' needs approval (write default) and the user declined");
  EXPECT_FALSE(backend_.stat("a.txt").ok());
}

TEST_F(ServerPermissionsTest, AllowedForTheSessionIsNotAskedAgain) {
  start("default", true);
  callTool(2, "write_file", {{"path", "src/a.txt"}, {"content", "x"}});
  json ask = transport_.waitForMethod("elicitation/create");
  ASSERT_FALSE(ask.is_null());
  EXPECT_EQ(ask["params"]["requestedSchema"]["properties"]["remember"]["description"],
            "With Allow: do not ask again in this session for write under 'src/**'");
  send({{"jsonrpc", "2.0"},
        {"id", ask["id"]},
        {"result", {{"action", "accept"}, {"content", {{"approve", true}, {"remember", true}}}}}});
  EXPECT_EQ(transport_.waitForId(2)["result"]["isError"], false);
  // The next write in src/ goes through without a question.
  callTool(3, "write_file", {{"path", "src/b.txt"}, {"content", "y"}});
  json r = transport_.waitForId(3);
  EXPECT_EQ(r["result"]["isError"], false) << r.dump();
  EXPECT_TRUE(backend_.stat("src/b.txt").ok());
  // Outside src/, the user is asked again.
  callTool(4, "write_file", {{"path", "a.txt"}, {"content", "z"}});
  json again = transport_.waitForMethod("elicitation/create", 1);
  ASSERT_FALSE(again.is_null());
  EXPECT_NE(again["params"]["message"].get<std::string>().find("'a.txt'"), std::string::npos);
  send({{"jsonrpc", "2.0"}, {"id", again["id"]}, {"result", {{"action", "decline"}}}});
  EXPECT_EQ(transport_.waitForId(4)["result"]["isError"], true);
}

TEST_F(ServerPermissionsTest, AcceptWithoutApprovalIsNo) {
  start("default", true);
  callTool(2, "write_file", {{"path", "a.txt"}, {"content", "x"}});
  answerElicitation({{"action", "accept"}, {"content", {{"approve", false}}}});
  EXPECT_EQ(transport_.waitForId(2)["result"]["isError"], true);
}

TEST_F(ServerPermissionsTest, ClientWithoutElicitationIsDeniedWithReason) {
  start("default", false);
  callTool(2, "write_file", {{"path", "a.txt"}, {"content", "x"}});
  json r = transport_.waitForId(2);
  EXPECT_EQ(text(r),
            "write for 'a.txt' needs approval (write default) and none was given: the client "
            "does not support elicitation, so it cannot ask the user. To go on, use a client that "
            "supports elicitation, start the server with --ruleset permissive (which allows "
            "writes and commands in the workspace), or with --ask-fallback allow (every 'ask' "
            "then runs without approval)");
}

// What the server logs while `run` runs, at warn and above.
std::vector<std::string> warnings(const std::function<void()>& run) {
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(64);
  auto previous = spdlog::default_logger();
  auto logger = std::make_shared<spdlog::logger>("test", sink);
  logger->set_level(spdlog::level::warn);
  logger->set_pattern("%v");
  spdlog::set_default_logger(logger);
  run();
  spdlog::set_default_logger(previous);
  return sink->last_formatted();
}

TEST_F(ServerPermissionsTest, AClientWithoutElicitationIsToldAtInitializeHowToGoOn) {
  const auto logged = warnings([&] { start("default", false); });
  ASSERT_EQ(logged.size(), 1u);
  EXPECT_NE(logged[0].find("declares no elicitation: what the 'default' ruleset marks 'ask' "
                           "will be denied"),
            std::string::npos)
      << logged[0];
  EXPECT_NE(logged[0].find("--ruleset permissive"), std::string::npos);
  EXPECT_NE(logged[0].find("--ask-fallback allow"), std::string::npos);
  // A client that can be asked, or a ruleset that never asks, hears nothing.
  EXPECT_TRUE(warnings([&] { start("default", true); }).empty());
  EXPECT_TRUE(warnings([&] { start("readonly", false); }).empty());
}

TEST_F(ServerPermissionsTest, NoAnswerInTimeIsDenied) {
  start("default", true, std::chrono::milliseconds(200));
  callTool(2, "write_file", {{"path", "a.txt"}, {"content", "x"}});
  json r = transport_.waitForId(2);
  EXPECT_EQ(text(r),
            "write for 'a.txt' needs approval (write default) and none was given: no answer "
            "within 200 ms");
  EXPECT_FALSE(backend_.stat("a.txt").ok());
}

TEST_F(ServerPermissionsTest, ClientErrorAnswerIsDenied) {
  start("default", true);
  callTool(2, "write_file", {{"path", "a.txt"}, {"content", "x"}});
  json ask = transport_.waitForMethod("elicitation/create");
  send({{"jsonrpc", "2.0"}, {"id", ask["id"]}, {"error", {{"code", -32601}, {"message", "nope"}}}});
  json r = transport_.waitForId(2);
  EXPECT_NE(text(r).find("the client answered elicitation/create with an error: nope"),
            std::string::npos)
      << text(r);
}

TEST_F(ServerPermissionsTest, DefaultHidesSecretsFromListings) {
  ASSERT_TRUE(backend_.write(".env", "KEY=1", WriteMode::kOverwrite).ok());
  ASSERT_TRUE(backend_.write("a.py", "x = 1", WriteMode::kOverwrite).ok());
  start("default", false);
  callTool(2, "ls", json::object());
  json r = transport_.waitForId(2);
  EXPECT_EQ(r["result"]["structuredContent"]["entries"].size(), 1u);
  EXPECT_EQ(r["result"]["structuredContent"]["hidden"], 1);
  EXPECT_NE(text(r).find("[1 entry hidden by the permission rules]"), std::string::npos);
}

}  // namespace
}  // namespace byd::mcp
