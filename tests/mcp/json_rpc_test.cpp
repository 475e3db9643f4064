#include "mcp/json_rpc.h"

#include <gtest/gtest.h>

namespace byd::mcp {
namespace {

TEST(ParseJson, AcceptsObjects) {
  auto v = parseJson(R"({"a": [1, {"b": "]]]"}]})");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ((*v)["a"][1]["b"], "]]]");
}

TEST(ParseJson, RejectsGarbageWithReason) {
  auto v = parseJson("{\"jsonrpc\": ");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().message(), "not valid JSON");
}

TEST(ParseJson, RefusesDeepNestingBeforeParsing) {
  // The parser recurses per level; a megabyte of '[' must not reach it.
  std::string deep(1 << 20, '[');
  auto v = parseJson(deep);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().message(), "JSON nested deeper than 256 levels");
  EXPECT_TRUE(parseJson(std::string(200, '[') + std::string(200, ']')).ok());
}

TEST(ParseJson, BracketsInsideStringsDoNotCount) {
  std::string text = "[\"" + std::string(1000, '[') + "\\\"\"]";
  EXPECT_TRUE(parseJson(text).ok());
}

TEST(Classify, Request) {
  Message m = classify(json::parse(R"({"jsonrpc":"2.0","id":7,"method":"ping"})"));
  EXPECT_EQ(m.kind, Kind::kRequest);
  EXPECT_EQ(m.id, 7);
  EXPECT_EQ(m.method, "ping");
}

TEST(Classify, Notification) {
  Message m = classify(json::parse(R"({"jsonrpc":"2.0","method":"notifications/initialized"})"));
  EXPECT_EQ(m.kind, Kind::kNotification);
}

TEST(Classify, Response) {
  Message m = classify(json::parse(R"({"jsonrpc":"2.0","id":"a","result":{}})"));
  EXPECT_EQ(m.kind, Kind::kResponse);
}

struct InvalidCase {
  const char* text;
  const char* problem;
};

class ClassifyInvalid : public ::testing::TestWithParam<InvalidCase> {};

TEST_P(ClassifyInvalid, SaysWhy) {
  Message m = classify(json::parse(GetParam().text));
  EXPECT_EQ(m.kind, Kind::kInvalid);
  EXPECT_EQ(m.problem, GetParam().problem);
}

INSTANTIATE_TEST_SUITE_P(
    All, ClassifyInvalid,
    ::testing::Values(
        InvalidCase{"42", "a JSON-RPC message must be an object"},
        InvalidCase{R"({"id":1,"method":"ping"})", "missing \"jsonrpc\": \"2.0\""},
        InvalidCase{R"({"jsonrpc":"1.0","id":1,"method":"ping"})", "missing \"jsonrpc\": \"2.0\""},
        InvalidCase{R"({"jsonrpc":"2.0","id":1})", "missing \"method\""},
        InvalidCase{R"({"jsonrpc":"2.0","id":1,"method":5})", "\"method\" must be a string"},
        InvalidCase{R"({"jsonrpc":"2.0","id":1.5,"method":"ping"})",
                    "\"id\" must be a string or an integer"},
        InvalidCase{R"({"jsonrpc":"2.0","id":null,"method":"ping"})",
                    "\"id\" must be a string or an integer"},
        InvalidCase{R"({"jsonrpc":"2.0","id":1,"method":"ping","params":3})",
                    "\"params\" must be an object or an array"}));

TEST(ErrorFromStatus, MapsCodes) {
  EXPECT_EQ(errorFromStatus(1, invalidArgument("x"))["error"]["code"], rpc::kInvalidParams);
  EXPECT_EQ(errorFromStatus(1, unimplemented("x"))["error"]["code"], rpc::kMethodNotFound);
  EXPECT_EQ(errorFromStatus(1, failedPrecondition("x"))["error"]["code"], rpc::kInvalidRequest);
}

TEST(ErrorFromStatus, HidesInternalText) {
  json e = errorFromStatus(3, internalError("secret /etc/shadow detail"));
  EXPECT_EQ(e["error"]["code"], rpc::kInternalError);
  EXPECT_EQ(e["error"]["message"], "internal error");
  EXPECT_EQ(e["id"], 3);
}

TEST(Serialize, ReplacesInvalidUtf8InsteadOfThrowing) {
  json v = {{"name", std::string("bad\xff name")}};
  EXPECT_EQ(serialize(v), "{\"name\":\"bad\xEF\xBF\xBD name\"}");
}

}  // namespace
}  // namespace byd::mcp
