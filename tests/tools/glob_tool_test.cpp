#include "tests/tools/tool_fixture.h"

namespace byd::testing {
namespace {

class GlobToolTest : public ToolTest {};
BYD_TOOL_SUITE(GlobToolTest);

std::vector<std::string> paths(const json& r) {
  return r["structuredContent"]["paths"].get<std::vector<std::string>>();
}

TEST_P(GlobToolTest, DoubleStarNewestFirst) {
  seed("a.txt", "", 1000);
  seed("d/b.txt", "", 3000);
  seed("d/e/c.txt", "", 2000);
  seed("d/e/c.md", "", 4000);
  json r = call("glob", {{"pattern", "**/*.txt"}});
  ASSERT_FALSE(isError(r)) << text(r);
  EXPECT_EQ(paths(r), (std::vector<std::string>{"d/b.txt", "d/e/c.txt", "a.txt"}));
  EXPECT_EQ(text(r), "d/b.txt\nd/e/c.txt\na.txt\n");
}

TEST_P(GlobToolTest, StarStaysInOneComponent) {
  seed("a.txt", "");
  seed("d/b.txt", "");
  EXPECT_EQ(paths(call("glob", {{"pattern", "*.txt"}})), (std::vector<std::string>{"a.txt"}));
}

TEST_P(GlobToolTest, BracesAndClasses) {
  seed("src/a.ts", "", 1);
  seed("src/b.tsx", "", 2);
  seed("src/c.js", "", 3);
  seed("src/d1.ts", "", 4);
  EXPECT_EQ(paths(call("glob", {{"pattern", "src/*.{ts,tsx}"}})),
            (std::vector<std::string>{"src/d1.ts", "src/b.tsx", "src/a.ts"}));
  EXPECT_EQ(paths(call("glob", {{"pattern", "src/[a-c].?s"}})),
            (std::vector<std::string>{"src/c.js", "src/a.ts"}));
}

TEST_P(GlobToolTest, RelativeToPathReturnsWorkspacePaths) {
  seed("pkg/src/x.go", "");
  seed("other/x.go", "");
  EXPECT_EQ(paths(call("glob", {{"pattern", "**/*.go"}, {"path", "pkg"}})),
            (std::vector<std::string>{"pkg/src/x.go"}));
}

TEST_P(GlobToolTest, GitIsSkippedUnlessNamed) {
  seed(".git/config", "");
  seed("config", "");
  EXPECT_EQ(paths(call("glob", {{"pattern", "**/config"}})), (std::vector<std::string>{"config"}));
  EXPECT_EQ(paths(call("glob", {{"pattern", ".git/*"}})),
            (std::vector<std::string>{".git/config"}));
}

TEST_P(GlobToolTest, CappedWithANote) {
  limits_.max_results = 2;
  for (int i = 0; i < 4; ++i) seed("f" + std::to_string(i) + ".txt", "", 100 + i);
  json r = call("glob", {{"pattern", "*.txt"}});
  EXPECT_EQ(paths(r), (std::vector<std::string>{"f3.txt", "f2.txt"}));
  EXPECT_EQ(r["structuredContent"]["total"], 4);
  EXPECT_NE(text(r).find("[showing the 2 newest of 4 matches"), std::string::npos);
}

TEST_P(GlobToolTest, NoMatches) {
  json r = call("glob", {{"pattern", "*.zzz"}});
  ASSERT_FALSE(isError(r));
  EXPECT_EQ(text(r), "No files match '*.zzz'.\n");
}

TEST_P(GlobToolTest, BadPatternIsAnError) {
  json r = call("glob", {{"pattern", "src/[abc"}});
  EXPECT_TRUE(isError(r));
  EXPECT_NE(text(r).find("'['"), std::string::npos) << text(r);
}

}  // namespace
}  // namespace byd::testing
