// The stateless revision's pieces: reading _meta, the HTTP header checks, and requestState.

#include "mcp/stateless.h"

#include <gtest/gtest.h>

#include <map>

namespace byd::mcp::stateless {
namespace {

json meta(json extra = json::object()) {
  json m = {{std::string(kMetaVersion), "2026-07-28"},
            {std::string(kMetaCapabilities), {{"sampling", json::object()}}}};
  m.update(extra);
  return m;
}

TEST(StatelessMetaTest, ReadsVersionCapabilitiesAndLevel) {
  auto r = readMeta({{"_meta", meta({{std::string(kMetaLogLevel), "notice"},
                                     {std::string(kMetaClientInfo), {{"name", "c"}}}})}});
  ASSERT_TRUE(std::holds_alternative<RequestMeta>(r));
  const auto& m = std::get<RequestMeta>(r);
  EXPECT_EQ(m.version, "2026-07-28");
  EXPECT_TRUE(m.capabilities.contains("sampling"));
  EXPECT_EQ(m.log_level, 2);
  EXPECT_EQ(m.client_name, "c");
}

TEST(StatelessMetaTest, MissingFieldsAreInvalidParams) {
  for (const json& params : {json(), json::object(), json{{"_meta", 5}},
                             json{{"_meta", {{std::string(kMetaCapabilities), json::object()}}}},
                             json{{"_meta", {{std::string(kMetaVersion), "2026-07-28"}}}},
                             json{{"_meta", meta({{std::string(kMetaCapabilities), "all"}})}},
                             json{{"_meta", meta({{std::string(kMetaLogLevel), "loud"}})}}}) {
    auto r = readMeta(params);
    ASSERT_TRUE(std::holds_alternative<MetaError>(r)) << params.dump();
    EXPECT_EQ(std::get<MetaError>(r).code, -32602) << params.dump();
  }
}

TEST(StatelessMetaTest, OtherVersionsAreUnsupportedWithTheSupportedList) {
  for (const char* version : {"v999.0.0", "2025-11-25"}) {
    auto r = readMeta({{"_meta", meta({{std::string(kMetaVersion), version}})}});
    ASSERT_TRUE(std::holds_alternative<MetaError>(r));
    const auto& e = std::get<MetaError>(r);
    EXPECT_EQ(e.code, kUnsupportedVersion);
    EXPECT_EQ(e.data["requested"], version);
    EXPECT_EQ(e.data["supported"], json::array({"2026-07-28"}));
  }
}

TEST(StatelessMetaTest, ModernMetaIsRecognised) {
  EXPECT_TRUE(hasModernMeta({{"_meta", {{std::string(kMetaClientInfo), json::object()}}}}));
  EXPECT_FALSE(hasModernMeta({{"_meta", {{"progressToken", 1}}}}));
  EXPECT_FALSE(hasModernMeta(json::array()));
  EXPECT_FALSE(hasModernMeta({{"name", "x"}}));
}

TEST(HeaderValueTest, DecodesBase64SentinelsStrictly) {
  EXPECT_EQ(*decodeHeaderValue("  plain\t"), "plain");
  EXPECT_EQ(*decodeHeaderValue("=?base64?SGVsbG8=?="), "Hello");
  EXPECT_EQ(*decodeHeaderValue("SGVsbG8="), "SGVsbG8=");                    // no sentinel: literal
  EXPECT_EQ(*decodeHeaderValue("=?base64?SGVsbG8="), "=?base64?SGVsbG8=");  // no suffix
  EXPECT_FALSE(decodeHeaderValue("=?base64?SGVsbG8?=").ok());               // padding missing
  EXPECT_FALSE(decodeHeaderValue("=?base64?SGVs!!!bG8=?=").ok());           // not base64
  EXPECT_FALSE(decodeHeaderValue("a\x01").ok());
  EXPECT_EQ(*decodeHeaderValue("=?base64?w6lzdA==?="), "\xc3\xa9st");
  EXPECT_FALSE(decodeHeaderValue("=?base64?/w==?=").ok());  // 0xff is not UTF-8
}

class HeaderCheckTest : public ::testing::Test {
 protected:
  Status check(const json& request, const json& header_params = json::object()) {
    return checkHeaders(
        request,
        [this](std::string_view name) -> std::optional<std::string> {
          auto it = headers_.find(std::string(name));
          if (it == headers_.end()) return std::nullopt;
          return it->second;
        },
        header_params);
  }
  std::map<std::string, std::string> headers_;
};

TEST_F(HeaderCheckTest, MethodMustMatch) {
  const json list = {{"method", "tools/list"}, {"params", json::object()}};
  EXPECT_FALSE(check(list).ok());
  headers_["Mcp-Method"] = "prompts/list";
  EXPECT_FALSE(check(list).ok());
  headers_["Mcp-Method"] = "TOOLS/LIST";  // values are case-sensitive
  EXPECT_FALSE(check(list).ok());
  headers_["Mcp-Method"] = " tools/list ";
  EXPECT_TRUE(check(list).ok());
}

TEST_F(HeaderCheckTest, NameMustMatchForCallsReadsAndPrompts) {
  headers_["Mcp-Method"] = "tools/call";
  const json call = {{"method", "tools/call"}, {"params", {{"name", "greet"}}}};
  Status missing = check(call);
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("Mcp-Name"), std::string::npos);
  headers_["Mcp-Name"] = "other";
  EXPECT_FALSE(check(call).ok());
  headers_["Mcp-Name"] = "=?base64?Z3JlZXQ=?=";
  EXPECT_TRUE(check(call).ok());
  headers_["Mcp-Method"] = "resources/read";
  headers_["Mcp-Name"] = "test://a";
  EXPECT_TRUE(check({{"method", "resources/read"}, {"params", {{"uri", "test://a"}}}}).ok());
  EXPECT_FALSE(check({{"method", "resources/read"}, {"params", {{"uri", "test://b"}}}}).ok());
}

TEST_F(HeaderCheckTest, ParamHeadersFollowTheArguments) {
  const json params = {{"region", "Region"}, {"count", "Count"}};
  headers_["Mcp-Method"] = "tools/call";
  headers_["Mcp-Name"] = "t";
  auto call = [](json args) {
    return json{{"method", "tools/call"}, {"params", {{"name", "t"}, {"arguments", args}}}};
  };
  // Absent or null in the body: no header needed.
  EXPECT_TRUE(check(call({{"region", nullptr}}), params).ok());
  // In the body: the header is required and must agree.
  EXPECT_FALSE(check(call({{"region", "eu"}}), params).ok());
  headers_["Mcp-Param-Region"] = "=?base64?ZXU=?=";
  EXPECT_TRUE(check(call({{"region", "eu"}}), params).ok());
  EXPECT_FALSE(check(call({{"region", "us"}}), params).ok());
  headers_["Mcp-Param-Count"] = "42";
  EXPECT_TRUE(check(call({{"region", "eu"}, {"count", 42}}), params).ok());
  EXPECT_TRUE(check(call({{"region", "eu"}, {"count", 42.0}}), params).ok());
  EXPECT_FALSE(check(call({{"region", "eu"}, {"count", 43}}), params).ok());
  headers_["Mcp-Param-Count"] = "=?base64?bad?=";
  EXPECT_FALSE(check(call({{"region", "eu"}}), params).ok());  // malformed even if unused
}

TEST(HeaderParamsTest, OnlyDirectScalarPropertiesCount) {
  json schema = {{"type", "object"},
                 {"properties",
                  {{"a", {{"type", "string"}, {"x-mcp-header", "A"}}},
                   {"b", {{"type", "number"}, {"x-mcp-header", "B"}}},
                   {"c", {{"type", "boolean"}, {"x-mcp-header", "C"}}},
                   {"d", {{"type", "string"}, {"x-mcp-header", ""}}},
                   {"e", {{"type", "string"}}}}}};
  EXPECT_EQ(headerParams(schema), json({{"a", "A"}, {"c", "C"}}));
  EXPECT_EQ(headerParams(json::array()), json::object());
}

TEST(StateSignerTest, RoundTripsAndRefusesTampering) {
  const StateSigner signer;
  const json payload = {{"answers", {{"q", {{"action", "accept"}}}}}};
  const auto signed_state = signer.sign(payload, "tools/call", "greet");
  ASSERT_TRUE(signed_state.ok()) << signed_state.status().message();
  const std::string& state = *signed_state;
  // base64url(payload) "." and the 64 hex digits of an HMAC-SHA256.
  ASSERT_GT(state.size(), 65u);
  EXPECT_EQ(state[state.size() - 65], '.');
  EXPECT_EQ(state.find_first_not_of("0123456789abcdef", state.size() - 64), std::string::npos);
  auto back = signer.verify(state, "tools/call", "greet");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, payload);
  EXPECT_FALSE(signer.verify(state + "-TAMPERED", "tools/call", "greet").ok());
  std::string flipped = state;
  flipped[3] = flipped[3] == 'A' ? 'B' : 'A';
  EXPECT_FALSE(signer.verify(flipped, "tools/call", "greet").ok());
  EXPECT_FALSE(signer.verify(state, "tools/call", "other").ok());
  EXPECT_FALSE(signer.verify(state, "prompts/get", "greet").ok());
  EXPECT_FALSE(signer.verify("", "tools/call", "greet").ok());
  EXPECT_FALSE(signer.verify("no-dot", "tools/call", "greet").ok());
  // Another process (key) cannot vouch for it.
  EXPECT_FALSE(StateSigner().verify(state, "tools/call", "greet").ok());
}

TEST(StateSignerTest, ExpiredStateIsRefused) {
  const StateSigner signer;
  const auto state = signer.sign(json::object(), "tools/call", "t", /*ttl_s=*/-1);
  ASSERT_TRUE(state.ok()) << state.status().message();
  auto r = signer.verify(*state, "tools/call", "t");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("expired"), std::string::npos);
}

TEST(InputResponseTest, ShapesByMethod) {
  EXPECT_TRUE(validInputResponse("elicitation/create", {{"action", "decline"}}));
  EXPECT_FALSE(validInputResponse("elicitation/create", {{"action", "maybe"}}));
  EXPECT_FALSE(validInputResponse("elicitation/create", 12345));
  EXPECT_TRUE(
      validInputResponse("sampling/createMessage", {{"role", "assistant"}, {"content", {}}}));
  EXPECT_FALSE(validInputResponse("sampling/createMessage", {{"role", "assistant"}}));
  EXPECT_TRUE(validInputResponse("roots/list", {{"roots", json::array()}}));
  EXPECT_FALSE(validInputResponse("roots/list", {{"roots", "/"}}));
}

}  // namespace
}  // namespace byd::mcp::stateless
