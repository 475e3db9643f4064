#include "common/redact.h"

#include <gtest/gtest.h>

namespace byd {
namespace {

using nlohmann::json;

TEST(Redact, ReplacesCredentialsAndKeepsWhatSurroundsThem) {
  const std::pair<std::string, std::string> cases[] = {
      {"aws s3 ls --key AKIAABCDEFGHIJKLMNOP now", "aws s3 ls --key [redacted] now"},
      {"git clone https://ghp_0123456789abcdefghijABCD@github.com/x",
       "git clone https://[redacted]@github.com/x"},
      {"OPENAI=sk-proj-0123456789abcdefghij", "OPENAI=[redacted]"},
      {"curl -H 'Authorization: Bearer abc.def-ghi_123' url",
       "curl -H 'Authorization: Bearer [redacted]' url"},
      {"psql postgres://admin:s3cr3t@db/x", "psql postgres://admin:[redacted]@db/x"},
      {"export DB_PASSWORD=hunter2; run", "export DB_PASSWORD=[redacted]; run"},
      {R"({"api_key": "abc123", "n": 1})", R"({"api_key": [redacted], "n": 1})"},
      {"token: 'quoted value' rest", "token: [redacted] rest"},
      {"jwt eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0NTY3.SflKxwRJSMeKKF2QT4", "jwt [redacted]"},
      {"-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----\nafter",
       "[redacted]\nafter"},
      {"tool --password hunter2 --token abc run",
       "tool --password [redacted] --token [redacted] run"},
      {"curl -u admin:hunter2 http://x", "curl -u admin:[redacted] http://x"},
      {"mysql -u root -phunter2 db", "mysql -u root -p[redacted] db"},
      {"curl -H 'Authorization: Basic YWRtaW46aHVudGVy' x",
       "curl -H 'Authorization: Basic [redacted]' x"},
      {R"(os.environ["API_TOKEN"] = "abc123")", R"(os.environ["API_TOKEN"] = [redacted])"},
  };
  for (const auto& [in, out] : cases) EXPECT_EQ(redactSecrets(in), out) << in;
}

TEST(Redact, LeavesOrdinaryTextAlone) {
  for (const char* text :
       {"ls -la src/", "grep -rn tokenize src/", "the password field", "sk-short",
        "https://example.org/path", "x = compute(1, 2)", "http://localhost:8080/x",
        "a basic understanding of tokens", "curl -u admin http://x"}) {
    EXPECT_EQ(redactSecrets(text), text);
  }
}

TEST(Redact, SummaryRedactsSecretKeysAndCutsLongValues) {
  const json args = {{"command", "echo hi"},
                     {"content", std::string(1000, 'x')},
                     {"env", {{"GITHUB_TOKEN", "abc"}, {"HOME", "/tmp"}}},
                     {"password", "p"},
                     {"timeout", 5},
                     {"list", json::array({"a", "b"})}};
  const json s = summarizeArguments(args);
  EXPECT_EQ(s["command"], "echo hi");
  EXPECT_EQ(s["timeout"], 5);
  EXPECT_EQ(s["password"], "[redacted]");
  EXPECT_EQ(s["env"]["GITHUB_TOKEN"], "[redacted]");
  EXPECT_EQ(s["env"]["HOME"], "/tmp");
  EXPECT_EQ(s["list"], json::array({"a", "b"}));
  const std::string cut = s["content"];
  EXPECT_EQ(cut, std::string(200, 'x') + "… (1000 bytes)");
}

TEST(Redact, CutsOnlyBetweenWholeCharacters) {
  const std::string text = std::string(199, 'a') + "é and more";  // é straddles byte 200
  const std::string s = summarizeArguments(json{{"t", text}})["t"];
  EXPECT_EQ(s.substr(0, 200), std::string(199, 'a') + "…"[0]);
  EXPECT_TRUE(json(s).dump().size() > 0);  // valid UTF-8, else dump() throws
}

}  // namespace
}  // namespace byd
