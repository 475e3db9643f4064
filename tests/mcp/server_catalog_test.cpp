// The dispatcher with a Catalog: its tools beside (or instead of) the console tools, resources,
// templates, subscriptions, prompts, completion, and what a catalog tool can do with its Peer.

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "backends/state/state_backend.h"
#include "mcp/catalog.h"
#include "mcp/server.h"
#include "tests/mcp/fake_transport.h"

namespace byd::mcp {
namespace {

using byd::testing::FakeTransport;

TEST(UriTemplateTest, MatchesLevelOneTemplates) {
  auto vars = matchUriTemplate("test://template/{id}/data", "test://template/123/data");
  ASSERT_TRUE(vars.has_value());
  EXPECT_EQ(vars->at("id"), "123");
  auto two = matchUriTemplate("x://{a}.{b}", "x://left.right");
  ASSERT_TRUE(two.has_value());
  EXPECT_EQ(two->at("a"), "left");
  EXPECT_EQ(two->at("b"), "right");
  EXPECT_FALSE(matchUriTemplate("test://template/{id}/data", "test://template//data"));
  EXPECT_FALSE(matchUriTemplate("test://template/{id}/data", "test://template/1/2/data"));
  EXPECT_FALSE(matchUriTemplate("test://template/{id}/data", "test://template/1/datax"));
  EXPECT_FALSE(matchUriTemplate("test://template/{id}/data", "other://template/1/data"));
  EXPECT_FALSE(matchUriTemplate("test://{}/data", "test://x/data"));
  EXPECT_FALSE(matchUriTemplate("test://{id", "test://x"));
}

// A catalog whose handlers record how they were called.
struct Recorder {
  std::atomic<bool> closed_stream{false};
  std::atomic<int> calls{0};
};

std::shared_ptr<Catalog> testCatalog(Recorder& rec, bool console_tools) {
  auto c = std::make_shared<Catalog>();
  c->console_tools = console_tools;
  c->tools.push_back(
      {{{"name", "greet"},
        {"description", "says hello"},
        {"title", "Greeter"},
        {"inputSchema",
         {{"type", "object"},
          {"properties", {{"who", {{"type", "string"}}}}},
          {"required", {"who"}}}}},
       [&rec](const json& args, Peer& peer) -> Result<json> {
         ++rec.calls;
         peer.progress(1, 2, "half");
         peer.log("info", "greeting");
         peer.log("debug", "detail");
         rec.closed_stream = peer.closeStream();
         return json{{"content",
                      {{{"type", "text"}, {"text", "hello " + args["who"].get<std::string>()}}}}};
       }});
  c->tools.push_back(
      {{{"name", "ask"}, {"description", "asks the client"}, {"inputSchema", {{"type", "object"}}}},
       [](const json& args, Peer& peer) -> Result<json> {
         auto answer = peer.ask(args.value("method", "elicitation/create"), {{"message", "name?"}});
         if (!answer.ok()) return answer.status();
         return json{{"content", {{{"type", "text"}, {"text", answer->dump()}}}}};
       }});
  c->resources.push_back({{{"uri", "mem://a"}, {"name", "a"}, {"mimeType", "text/plain"}},
                          [](const std::string& uri) -> Result<json> {
                            return json::array({{{"uri", uri}, {"text", "A"}}});
                          }});
  c->resources.push_back(
      {{{"uri", "mem://b"}, {"name", "b"}}, [](const std::string& uri) -> Result<json> {
         return json::array({{{"uri", uri}, {"blob", "Qg=="}}});
       }});
  c->templates.push_back(
      {{{"uriTemplate", "mem://item/{n}"}, {"name", "item"}},
       [](const std::string& uri, const std::map<std::string, std::string>& v) -> Result<json> {
         return json::array({{{"uri", uri}, {"text", "item " + v.at("n")}}});
       }});
  c->prompts.push_back(
      {{{"name", "hi"},
        {"description", "a greeting"},
        {"arguments",
         {{{"name", "who"}, {"required", true}}, {{"name", "mood"}, {"required", false}}}}},
       [](const std::map<std::string, std::string>& args, Peer&) -> Result<json> {
         return json{{"messages",
                      {{{"role", "user"},
                        {"content", {{"type", "text"}, {"text", "hi " + args.at("who")}}}}}}};
       }});
  c->complete = [](const json&, const std::string& argument, const std::string& value,
                   const json&) -> Result<std::vector<std::string>> {
    std::vector<std::string> out;
    if (argument == "many") {
      for (int i = 0; i < 150; ++i) out.push_back(value + std::to_string(i));
    } else {
      for (std::string v : {"alpha", "alps", "beta"}) {
        if (v.starts_with(value)) out.push_back(v);
      }
    }
    return out;
  };
  return c;
}

class CatalogTest : public ::testing::Test {
 protected:
  void start(std::shared_ptr<const Catalog> catalog, size_t page_size = 50,
             json capabilities = json::object()) {
    ServerOptions options;
    options.catalog = std::move(catalog);
    options.page_size = page_size;
    options.ask_timeout = std::chrono::seconds(5);
    server_ = std::make_unique<Server>(transport_, backend_, Limits{}, options);
    json r = call("init", "initialize",
                  {{"protocolVersion", "2025-11-25"},
                   {"capabilities", std::move(capabilities)},
                   {"clientInfo", {{"name", "test"}, {"version", "1"}}}});
    init_result_ = r["result"];
  }

  json call(const json& id, const std::string& method, json params = json::object()) {
    server_->onFrame(
        json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}}.dump());
    return transport_.waitForId(id);
  }

  std::vector<json> sentWithMethod(const std::string& method) {
    std::vector<json> out;
    for (const json& m : transport_.sent()) {
      if (m.is_object() && m.value("method", "") == method) out.push_back(m);
    }
    return out;
  }

  ~CatalogTest() override { server_.reset(); }

  Recorder rec_;
  FakeTransport transport_;
  StateBackend backend_;
  std::unique_ptr<Server> server_;
  json init_result_;
};

TEST_F(CatalogTest, CapabilitiesFollowTheCatalog) {
  start(testCatalog(rec_, false));
  const json& caps = init_result_["capabilities"];
  EXPECT_EQ(caps["resources"]["subscribe"], true);
  EXPECT_TRUE(caps.contains("prompts"));
  EXPECT_TRUE(caps.contains("completions"));
  EXPECT_TRUE(caps.contains("tools"));
}

TEST_F(CatalogTest, WithoutACatalogTheMethodsAreUnknown) {
  start(nullptr);
  EXPECT_FALSE(init_result_["capabilities"].contains("resources"));
  EXPECT_FALSE(init_result_["capabilities"].contains("prompts"));
  EXPECT_EQ(call(1, "resources/list")["error"]["code"], rpc::kMethodNotFound);
  EXPECT_EQ(call(2, "prompts/get", {{"name", "hi"}})["error"]["code"], rpc::kMethodNotFound);
  EXPECT_EQ(call(3, "completion/complete")["error"]["code"], rpc::kMethodNotFound);
}

TEST_F(CatalogTest, CatalogToolsReplaceOrJoinTheConsoleTools) {
  start(testCatalog(rec_, false));
  json tools = call(1, "tools/list")["result"]["tools"];
  ASSERT_EQ(tools.size(), 2u);
  EXPECT_EQ(tools[0]["name"], "greet");
  EXPECT_EQ(tools[0]["title"], "Greeter");
  json ls = call(2, "tools/call", {{"name", "ls"}, {"arguments", json::object()}});
  EXPECT_EQ(ls["error"]["code"], rpc::kInvalidParams) << ls.dump();

  server_.reset();
  Recorder rec2;
  start(testCatalog(rec2, true));
  tools = call(3, "tools/list")["result"]["tools"];
  bool has_ls = false;
  for (const json& t : tools) has_ls = has_ls || t["name"] == "ls";
  EXPECT_TRUE(has_ls);
  EXPECT_EQ(tools.back()["name"], "ask");
}

TEST_F(CatalogTest, ToolArgumentsAreCheckedAgainstTheSchema) {
  start(testCatalog(rec_, false));
  json r = call(1, "tools/call", {{"name", "greet"}, {"arguments", {{"who", 5}}}});
  EXPECT_EQ(r["result"]["isError"], true);
  EXPECT_NE(r["result"]["content"][0]["text"].get<std::string>().find("who"), std::string::npos);
  EXPECT_EQ(rec_.calls, 0);
}

TEST_F(CatalogTest, ToolReachesTheClientThroughItsPeer) {
  start(testCatalog(rec_, false));
  call(0, "logging/setLevel", {{"level", "info"}});
  json r = call(
      1, "tools/call",
      {{"name", "greet"}, {"arguments", {{"who", "ann"}}}, {"_meta", {{"progressToken", "p"}}}});
  EXPECT_EQ(r["result"]["content"][0]["text"], "hello ann");
  auto progress = sentWithMethod("notifications/progress");
  ASSERT_EQ(progress.size(), 1u);
  EXPECT_EQ(progress[0]["params"]["progressToken"], "p");
  EXPECT_EQ(progress[0]["params"]["progress"], 1);
  EXPECT_EQ(progress[0]["params"]["total"], 2);
  EXPECT_EQ(progress[0]["params"]["message"], "half");
  // "info" passes the client's level, "debug" does not; the logger names the tool.
  std::vector<json> greeting;
  for (const json& m : sentWithMethod("notifications/message")) {
    if (m["params"]["logger"] == "greet") greeting.push_back(m);
  }
  ASSERT_EQ(greeting.size(), 1u);
  EXPECT_EQ(greeting[0]["params"]["data"], "greeting");
  EXPECT_EQ(greeting[0]["params"]["level"], "info");
  EXPECT_FALSE(rec_.closed_stream);  // no resumable streams here
}

TEST_F(CatalogTest, AskNeedsTheClientsCapability) {
  start(testCatalog(rec_, false));
  json r = call(1, "tools/call",
                {{"name", "ask"}, {"arguments", {{"method", "sampling/createMessage"}}}});
  EXPECT_EQ(r["error"]["code"], rpc::kInvalidRequest) << r.dump();
  EXPECT_NE(r["error"]["message"].get<std::string>().find("sampling"), std::string::npos);
  EXPECT_TRUE(sentWithMethod("sampling/createMessage").empty());
}

TEST_F(CatalogTest, AskWaitsForTheClientsAnswer) {
  start(testCatalog(rec_, false), 50, {{"elicitation", json::object()}});
  server_->onFrame(json{{"jsonrpc", "2.0"},
                        {"id", 1},
                        {"method", "tools/call"},
                        {"params", {{"name", "ask"}, {"arguments", json::object()}}}}
                       .dump());
  json question = transport_.waitForMethod("elicitation/create");
  ASSERT_TRUE(question.is_object());
  EXPECT_EQ(question["params"]["message"], "name?");
  server_->onFrame(json{{"jsonrpc", "2.0"},
                        {"id", question["id"]},
                        {"result", {{"action", "accept"}, {"content", {{"name", "zed"}}}}}}
                       .dump());
  json r = transport_.waitForId(1);
  ASSERT_TRUE(r.contains("result")) << r.dump();
  EXPECT_EQ(json::parse(r["result"]["content"][0]["text"].get<std::string>())["content"]["name"],
            "zed");
}

TEST_F(CatalogTest, ResourcesListReadAndTemplates) {
  start(testCatalog(rec_, false), 1);
  json first = call(1, "resources/list")["result"];
  ASSERT_EQ(first["resources"].size(), 1u);
  EXPECT_EQ(first["resources"][0]["uri"], "mem://a");
  json second = call(2, "resources/list", {{"cursor", first["nextCursor"]}})["result"];
  EXPECT_EQ(second["resources"][0]["uri"], "mem://b");
  EXPECT_FALSE(second.contains("nextCursor"));
  EXPECT_EQ(call(3, "resources/list", {{"cursor", "tools:1"}})["error"]["code"],
            rpc::kInvalidParams);

  EXPECT_EQ(call(4, "resources/templates/list")["result"]["resourceTemplates"][0]["uriTemplate"],
            "mem://item/{n}");
  EXPECT_EQ(call(5, "resources/read", {{"uri", "mem://a"}})["result"]["contents"][0]["text"], "A");
  EXPECT_EQ(call(6, "resources/read", {{"uri", "mem://item/7"}})["result"]["contents"][0]["text"],
            "item 7");
  json missing = call(7, "resources/read", {{"uri", "mem://nope"}});
  EXPECT_EQ(missing["error"]["code"], rpc::kResourceNotFound);
  EXPECT_NE(missing["error"]["message"].get<std::string>().find("mem://nope"), std::string::npos);
  EXPECT_EQ(call(8, "resources/read", json::object())["error"]["code"], rpc::kInvalidParams);
}

TEST_F(CatalogTest, SubscriptionsGateUpdateNotifications) {
  start(testCatalog(rec_, false));
  server_->resourceUpdated("mem://a");  // not subscribed: nothing goes out
  EXPECT_EQ(call(1, "resources/subscribe", {{"uri", "mem://nope"}})["error"]["code"],
            rpc::kResourceNotFound);
  EXPECT_EQ(call(2, "resources/subscribe", {{"uri", "mem://a"}})["result"], json::object());
  server_->resourceUpdated("mem://a");
  server_->resourceUpdated("mem://b");
  auto updates = sentWithMethod("notifications/resources/updated");
  ASSERT_EQ(updates.size(), 1u);
  EXPECT_EQ(updates[0]["params"]["uri"], "mem://a");
  EXPECT_EQ(call(3, "resources/unsubscribe", {{"uri", "mem://a"}})["result"], json::object());
  server_->resourceUpdated("mem://a");
  EXPECT_EQ(sentWithMethod("notifications/resources/updated").size(), 1u);
}

TEST_F(CatalogTest, PromptsCheckTheirArguments) {
  start(testCatalog(rec_, false));
  json list = call(1, "prompts/list")["result"]["prompts"];
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0]["name"], "hi");
  json ok = call(2, "prompts/get", {{"name", "hi"}, {"arguments", {{"who", "bo"}}}});
  EXPECT_EQ(ok["result"]["messages"][0]["content"]["text"], "hi bo");
  json missing = call(3, "prompts/get", {{"name", "hi"}});
  EXPECT_EQ(missing["error"]["code"], rpc::kInvalidParams);
  EXPECT_NE(missing["error"]["message"].get<std::string>().find("'who'"), std::string::npos);
  EXPECT_EQ(call(4, "prompts/get", {{"name", "nope"}})["error"]["code"], rpc::kInvalidParams);
  EXPECT_EQ(call(5, "prompts/get", {{"name", "hi"}, {"arguments", {{"who", 1}}}})["error"]["code"],
            rpc::kInvalidParams);
}

TEST_F(CatalogTest, CompletionFiltersAndCaps) {
  start(testCatalog(rec_, false));
  json r = call(1, "completion/complete",
                {{"ref", {{"type", "ref/prompt"}, {"name", "hi"}}},
                 {"argument", {{"name", "who"}, {"value", "al"}}}});
  EXPECT_EQ(r["result"]["completion"]["values"], json({"alpha", "alps"}));
  EXPECT_EQ(r["result"]["completion"]["hasMore"], false);
  json many = call(2, "completion/complete",
                   {{"ref", {{"type", "ref/resource"}, {"uri", "mem://item/{n}"}}},
                    {"argument", {{"name", "many"}, {"value", "x"}}}});
  EXPECT_EQ(many["result"]["completion"]["values"].size(), 100u);
  EXPECT_EQ(many["result"]["completion"]["total"], 150);
  EXPECT_EQ(many["result"]["completion"]["hasMore"], true);
  EXPECT_EQ(call(3, "completion/complete",
                 {{"ref", {{"type", "ref/prompt"}, {"name", "nope"}}},
                  {"argument", {{"name", "a"}, {"value", ""}}}})["error"]["code"],
            rpc::kInvalidParams);
  EXPECT_EQ(call(4, "completion/complete",
                 {{"ref", {{"type", "ref/other"}}},
                  {"argument", {{"name", "a"}, {"value", ""}}}})["error"]["code"],
            rpc::kInvalidParams);
}

}  // namespace
}  // namespace byd::mcp

namespace byd::mcp {
namespace {

// The same dispatcher serving requests of the stateless revision (2026-07-28).
class StatelessServerTest : public ::testing::Test {
 protected:
  StatelessServerTest() {
    auto c = std::make_shared<Catalog>();
    c->console_tools = false;
    c->lists_change = true;
    c->tools.push_back(
        {{{"name", "two_questions"}, {"description", "asks twice"}},
         [this](const json&, Peer& peer) -> Result<json> {
           ++runs_;
           BYD_ASSIGN_OR_RETURN(json a,
                                peer.ask("elicitation/create", {{"message", "first?"}}, "first"));
           BYD_ASSIGN_OR_RETURN(json b,
                                peer.ask("elicitation/create", {{"message", "second?"}}, "second"));
           peer.log("info", "answered");
           return json{{"content",
                        {{{"type", "text"}, {"text", a["content"].dump() + b["content"].dump()}}}}};
         }});
    c->tools.push_back({{{"name", "change"}, {"description", "changes the tool list"}},
                        [](const json&, Peer& peer) -> Result<json> {
                          peer.listChanged("tools");
                          return json{{"content", json::array()}};
                        }});
    c->resources.push_back(
        {{{"uri", "mem://a"}, {"name", "a"}}, [](const std::string& uri) -> Result<json> {
           return json::array({{{"uri", uri}, {"text", "A"}}});
         }});
    ServerOptions options;
    options.catalog = c;
    options.name = "srv";
    options.version = "9";
    server_ = std::make_unique<Server>(transport_, backend_, Limits{}, options);
  }
  ~StatelessServerTest() override { server_.reset(); }

  static json meta(json caps = {{"elicitation", json::object()}}) {
    return {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
            {"io.modelcontextprotocol/clientCapabilities", std::move(caps)}};
  }
  json call(const json& id, const std::string& method, json params) {
    server_->onFrame(
        json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}}.dump());
    return transport_.waitForId(id);
  }
  json ask(const json& id, json inputs = nullptr, json state = nullptr, json m = meta()) {
    json params = {{"name", "two_questions"}, {"arguments", json::object()}, {"_meta", m}};
    if (!inputs.is_null()) params["inputResponses"] = inputs;
    if (!state.is_null()) params["requestState"] = state;
    return call(id, "tools/call", params);
  }
  std::vector<json> sentWithMethod(const std::string& method) {
    std::vector<json> out;
    for (const json& m : transport_.sent()) {
      if (m.is_object() && m.value("method", "") == method) out.push_back(m);
    }
    return out;
  }
  void listen(const json& id, const json& filter) {
    const json params = {{"_meta", meta()}, {"notifications", filter}};
    server_->onFrame(
        json{{"jsonrpc", "2.0"}, {"id", id}, {"method", "subscriptions/listen"}, {"params", params}}
            .dump());
  }

  std::atomic<int> runs_{0};
  FakeTransport transport_;
  StateBackend backend_;
  std::unique_ptr<Server> server_;
};

TEST_F(StatelessServerTest, DiscoverNeedsNoInitialize) {
  json r = call(1, "server/discover", {{"_meta", meta()}})["result"];
  EXPECT_EQ(r["supportedVersions"].back(), "2026-07-28");
  EXPECT_TRUE(r["capabilities"]["tools"]["listChanged"].get<bool>());
  EXPECT_EQ(r["resultType"], "complete");
  EXPECT_EQ(r["cacheScope"], "private");
  EXPECT_TRUE(r["ttlMs"].is_number_integer());
  EXPECT_EQ(r["_meta"]["io.modelcontextprotocol/serverInfo"],
            json({{"name", "srv"}, {"version", "9"}}));
  json list = call(2, "tools/list", {{"_meta", meta()}})["result"];
  EXPECT_EQ(list["tools"].size(), 2u);
  EXPECT_EQ(list["resultType"], "complete");
  EXPECT_TRUE(list.contains("ttlMs"));
  json read = call(3, "resources/read", {{"uri", "mem://a"}, {"_meta", meta()}})["result"];
  EXPECT_EQ(read["ttlMs"], 0);
}

TEST_F(StatelessServerTest, BadMetaAndOldMethodsAreRefused) {
  EXPECT_EQ(call(1, "server/discover", json::object())["error"]["code"], rpc::kInvalidParams);
  json old = meta();
  old["io.modelcontextprotocol/protocolVersion"] = "2025-11-25";
  json unsupported = call(2, "tools/list", {{"_meta", old}});
  EXPECT_EQ(unsupported["error"]["code"], stateless::kUnsupportedVersion);
  EXPECT_EQ(unsupported["error"]["data"]["requested"], "2025-11-25");
  for (const char* method :
       {"ping", "initialize", "logging/setLevel", "resources/subscribe", "x/y"}) {
    EXPECT_EQ(call(method, method, {{"_meta", meta()}})["error"]["code"], rpc::kMethodNotFound)
        << method;
  }
}

TEST_F(StatelessServerTest, QuestionsTravelAsInputRequiredResults) {
  json r1 = ask(1)["result"];
  ASSERT_EQ(r1["resultType"], "input_required") << r1.dump();
  EXPECT_EQ(r1["inputRequests"]["first"]["method"], "elicitation/create");
  EXPECT_FALSE(r1["inputRequests"].contains("second"));  // asked only once the first is answered
  ASSERT_TRUE(r1["requestState"].is_string());
  EXPECT_TRUE(sentWithMethod("elicitation/create").empty());  // never sent as a request

  const json first = {{"first", {{"action", "accept"}, {"content", {{"n", 1}}}}}};
  json r2 = ask(2, first, r1["requestState"])["result"];
  ASSERT_EQ(r2["resultType"], "input_required") << r2.dump();
  EXPECT_TRUE(r2["inputRequests"].contains("second"));
  EXPECT_NE(r2["requestState"], r1["requestState"]);

  // The last round carries only the new answer: the first comes back from the state.
  json r3 =
      ask(3, {{"second", {{"action", "accept"}, {"content", {{"n", 2}}}}}}, r2["requestState"]);
  ASSERT_EQ(r3["result"]["resultType"], "complete") << r3.dump();
  EXPECT_EQ(r3["result"]["content"][0]["text"], R"({"n":1}{"n":2})");
  EXPECT_EQ(runs_, 3);
}

TEST_F(StatelessServerTest, AlteredStateAndMalformedAnswersAreNotTrusted) {
  json r1 = ask(1)["result"];
  const std::string state = r1["requestState"];
  json tampered = ask(2, nullptr, state + "x");
  EXPECT_EQ(tampered["error"]["code"], rpc::kInvalidParams) << tampered.dump();
  // An answer of the wrong shape is no answer: the question comes again.
  json again = ask(3, {{"first", 12345}}, state)["result"];
  EXPECT_EQ(again["resultType"], "input_required");
  EXPECT_TRUE(again["inputRequests"].contains("first"));
}

TEST_F(StatelessServerTest, MissingCapabilityIsItsOwnError) {
  json r = ask(1, nullptr, nullptr, meta(json::object()));
  EXPECT_EQ(r["error"]["code"], stateless::kMissingCapability) << r.dump();
  EXPECT_EQ(r["error"]["data"]["requiredCapabilities"], json({{"elicitation", json::object()}}));
}

TEST_F(StatelessServerTest, LogMessagesOnlyWithALogLevel) {
  const json answers = {{"first", {{"action", "accept"}}}, {"second", {{"action", "accept"}}}};
  ask(1, answers);
  EXPECT_TRUE(sentWithMethod("notifications/message").empty());
  json m = meta();
  m["io.modelcontextprotocol/logLevel"] = "info";
  ask(2, answers, nullptr, m);
  auto logs = sentWithMethod("notifications/message");
  ASSERT_FALSE(logs.empty());
  EXPECT_EQ(logs[0]["params"]["data"], "answered");
}

TEST_F(StatelessServerTest, ListenersGetWhatTheyAskedFor) {
  listen("L", {{"toolsListChanged", true},
               {"promptsListChanged", true},
               {"resourceSubscriptions", {"mem://a", "mem://none"}}});
  json ack = transport_.waitForMethod("notifications/subscriptions/acknowledged");
  ASSERT_TRUE(ack.is_object());
  EXPECT_EQ(ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "L");
  // No prompts here, and only known resources are honoured.
  EXPECT_EQ(ack["params"]["notifications"],
            json({{"toolsListChanged", true}, {"resourceSubscriptions", {"mem://a"}}}));

  call(1, "tools/call", {{"name", "change"}, {"_meta", meta()}});
  auto changed = sentWithMethod("notifications/tools/list_changed");
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_EQ(changed[0]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "L");
  server_->resourceUpdated("mem://a");
  EXPECT_EQ(sentWithMethod("notifications/resources/updated").size(), 1u);

  // Cancelling the listen request ends the subscription.
  server_->onFrame(
      R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"L"}})");
  // Its stream has no work to wait for: the transport hears at once that no answer comes.
  EXPECT_EQ(transport_.unansweredIds(), std::vector<std::string>{"\"L\""});
  call(2, "tools/call", {{"name", "change"}, {"_meta", meta()}});
  EXPECT_EQ(sentWithMethod("notifications/tools/list_changed").size(), 1u);
}

TEST_F(StatelessServerTest, TheServerEndsOpenSubscriptionsWithAResult) {
  listen(77, {{"toolsListChanged", true}});
  ASSERT_TRUE(transport_.waitForMethod("notifications/subscriptions/acknowledged").is_object());
  server_->cancelAll();
  json end = transport_.waitForId(77);
  EXPECT_EQ(end["result"]["resultType"], "complete");
  EXPECT_EQ(end["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 77);
  EXPECT_EQ(call(3, "subscriptions/listen", {{"_meta", meta()}})["error"]["code"],
            rpc::kInvalidParams);  // no notifications filter
}

}  // namespace
}  // namespace byd::mcp

namespace byd::mcp {
namespace {

TEST_F(StatelessServerTest, UnknownResourcesNameTheirUri) {
  json r = call(1, "resources/read", {{"uri", "mem://gone"}, {"_meta", meta()}});
  EXPECT_EQ(r["error"]["code"], rpc::kInvalidParams);
  EXPECT_EQ(r["error"]["data"]["uri"], "mem://gone");
}

TEST_F(StatelessServerTest, AStateServesOnlyTheArgumentsItWasIssuedFor) {
  json r1 = ask(1)["result"];
  json params = {{"name", "two_questions"},
                 {"arguments", {{"other", true}}},
                 {"inputResponses", {{"first", {{"action", "accept"}}}}},
                 {"requestState", r1["requestState"]},
                 {"_meta", meta()}};
  json r2 = call(2, "tools/call", params);
  EXPECT_EQ(r2["error"]["code"], rpc::kInvalidParams) << r2.dump();
}

TEST_F(StatelessServerTest, SettledAnswersWinOverResent) {
  json r1 = ask(1)["result"];
  json r2 =
      ask(2, {{"first", {{"action", "accept"}, {"content", "A"}}}}, r1["requestState"])["result"];
  ASSERT_EQ(r2["resultType"], "input_required");
  // The client tries to change the first answer in the last round: the signed one stands.
  json r3 = ask(3,
                {{"first", {{"action", "accept"}, {"content", "B"}}},
                 {"second", {{"action", "accept"}, {"content", "C"}}}},
                r2["requestState"]);
  EXPECT_EQ(r3["result"]["content"][0]["text"], R"("A""C")") << r3.dump();
}

TEST_F(StatelessServerTest, SubscriptionsAreCapped) {
  for (int i = 0; i < 16; ++i) listen(1000 + i, {{"toolsListChanged", true}});
  listen(2000, {{"toolsListChanged", true}});
  json refused = transport_.waitForId(2000);
  EXPECT_EQ(refused["error"]["code"], rpc::kInvalidRequest);
  EXPECT_EQ(sentWithMethod("notifications/subscriptions/acknowledged").size(), 16u);
}

TEST_F(StatelessServerTest, ASessionsRequestsStayInTheSession) {
  call("init", "initialize",
       {{"protocolVersion", "2025-11-25"},
        {"capabilities", json::object()},
        {"clientInfo", {{"name", "t"}, {"version", "1"}}}});
  // _meta keys of the stateless revision do not take a session's request out of it.
  json old = meta();
  old["io.modelcontextprotocol/protocolVersion"] = "2025-11-25";
  json r = call(1, "tools/list", {{"_meta", old}});
  ASSERT_TRUE(r.contains("result")) << r.dump();
  EXPECT_FALSE(r["result"].contains("resultType"));
  EXPECT_EQ(call(2, "ping", {{"_meta", old}})["result"], json::object());
}

TEST_F(CatalogTest, APromptMayAskTheClientInASession) {
  auto c = testCatalog(rec_, false);
  c->prompts.push_back(
      {{{"name", "asking"}, {"description", "asks first"}},
       [](const std::map<std::string, std::string>&, Peer& peer) -> Result<json> {
         BYD_ASSIGN_OR_RETURN(json a, peer.ask("elicitation/create", {{"message", "topic?"}}));
         return json{{"messages", json::array()}, {"description", a.dump()}};
       }});
  start(c, 50, {{"elicitation", json::object()}});
  // The prompt runs off the reading thread, so the answer to its question can arrive.
  server_->onFrame(json{
      {"jsonrpc", "2.0"}, {"id", 5}, {"method", "prompts/get"}, {"params", {{"name", "asking"}}}}
                       .dump());
  json question = transport_.waitForMethod("elicitation/create");
  ASSERT_TRUE(question.is_object());
  server_->onFrame(
      json{{"jsonrpc", "2.0"}, {"id", question["id"]}, {"result", {{"action", "decline"}}}}.dump());
  json r = transport_.waitForId(5);
  ASSERT_TRUE(r.contains("result")) << r.dump();
  EXPECT_EQ(json::parse(r["result"]["description"].get<std::string>())["action"], "decline");
}

TEST_F(CatalogTest, AHandlerThatThrowsIsAnsweredWithItsId) {
  auto c = testCatalog(rec_, false);
  c->tools.push_back(
      {{{"name", "boom"}, {"description", "throws"}}, [](const json&, Peer&) -> Result<json> {
         return json(json::array()).at(3);  // throws out_of_range
       }});
  c->tools.push_back({{{"name", "notobject"}, {"description", "answers an array"}},
                      [](const json&, Peer&) -> Result<json> { return json::array(); }});
  start(c);
  EXPECT_EQ(call(1, "tools/call", {{"name", "boom"}})["error"]["code"], rpc::kInternalError);
  EXPECT_EQ(call(2, "tools/call", {{"name", "notobject"}})["error"]["code"], rpc::kInternalError);
  EXPECT_EQ(call(3, "ping")["result"], json::object());
}

}  // namespace
}  // namespace byd::mcp
