#include "tests/tools/tool_fixture.h"

namespace byd::testing {
namespace {

class LsTest : public ToolTest {};
BYD_TOOL_SUITE(LsTest);

TEST_P(LsTest, ListsSortedByNameWithTypes) {
  seed("b.txt", "12345");
  seed("a/inner.txt", "x");
  seed("c.md", "");
  json r = call("ls", json::object());
  ASSERT_FALSE(isError(r)) << text(r);
  const json& entries = r["structuredContent"]["entries"];
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0]["name"], "a");
  EXPECT_EQ(entries[0]["type"], "dir");
  EXPECT_EQ(entries[1]["name"], "b.txt");
  EXPECT_EQ(entries[1]["type"], "file");
  EXPECT_EQ(entries[1]["size"], 5);
  EXPECT_EQ(entries[1]["mtime"], "2023-11-14T22:13:20Z");
  EXPECT_EQ(entries[2]["name"], "c.md");
  EXPECT_NE(text(r).find("a/"), std::string::npos);
  EXPECT_EQ(text(r).substr(0, 13), ".: 3 entries\n");
}

TEST_P(LsTest, Subdirectory) {
  seed("src/x.py", "print(1)\n");
  json r = call("ls", {{"path", "src"}});
  ASSERT_FALSE(isError(r)) << text(r);
  EXPECT_EQ(r["structuredContent"]["path"], "src");
  EXPECT_EQ(r["structuredContent"]["entries"][0]["name"], "x.py");
}

TEST_P(LsTest, MissingDirectory) {
  json r = call("ls", {{"path", "nope"}});
  EXPECT_TRUE(isError(r));
  EXPECT_EQ(text(r), "'nope' does not exist");
}

TEST_P(LsTest, FileIsNotADirectory) {
  seed("f.txt", "x");
  json r = call("ls", {{"path", "f.txt"}});
  EXPECT_TRUE(isError(r));
  EXPECT_EQ(text(r), "'f.txt' is not a directory; use read_file to read a file");
}

TEST_P(LsTest, EscapeIsRefused) {
  json r = call("ls", {{"path", "../"}});
  EXPECT_TRUE(isError(r));
  EXPECT_EQ(text(r), "'../' is outside the workspace");
}

TEST_P(LsTest, CappedWithANote) {
  limits_.max_results = 2;
  for (int i = 0; i < 5; ++i) seed("f" + std::to_string(i), "");
  json r = call("ls", json::object());
  EXPECT_EQ(r["structuredContent"]["entries"].size(), 2u);
  EXPECT_EQ(r["structuredContent"]["total"], 5);
  EXPECT_EQ(r["structuredContent"]["truncated"], true);
  EXPECT_NE(text(r).find("[showing the first 2 of 5 entries"), std::string::npos);
}

TEST_P(LsTest, UnknownArgumentIsNamed) {
  json r = call("ls", {{"path", "."}, {"recursive", true}});
  EXPECT_TRUE(isError(r));
  EXPECT_NE(text(r).find("recursive"), std::string::npos) << text(r);
}

}  // namespace
}  // namespace byd::testing
