#include "tests/tools/tool_fixture.h"

namespace byd::testing {
namespace {

class GrepTest : public ToolTest {
 protected:
  void SetUp() override {
    ToolTest::SetUp();
    seed("b.py", "import os\ndef main():\n    os.exit(1)\n");
    seed("a.py", "x = 1\n# TODO fix\ny = 2\nz = 3\n# todo again\n");
    seed("docs/readme.md", "TODO: write docs\n");
    seed("bin.dat", std::string("TODO\0binary", 11));
    seed(".git/HEAD", "TODO in git\n");
  }
};
BYD_TOOL_SUITE(GrepTest);

TEST_P(GrepTest, FilesWithMatchesSortedByPath) {
  json r = call("grep", {{"pattern", "TODO"}});
  ASSERT_FALSE(isError(r)) << text(r);
  EXPECT_EQ(text(r), "a.py\ndocs/readme.md\n[1 binary file(s) skipped]\n");
  EXPECT_EQ(r["structuredContent"]["files"], json({"a.py", "docs/readme.md"}));
  EXPECT_EQ(r["structuredContent"]["binary_skipped"], 1);
}

TEST_P(GrepTest, ContentWithLineNumbers) {
  json r = call("grep", {{"pattern", "[xyz] = \\d"}, {"output_mode", "content"}});
  ASSERT_FALSE(isError(r)) << text(r);
  EXPECT_EQ(text(r), "a.py:1:x = 1\na.py:3:y = 2\na.py:4:z = 3\n[1 binary file(s) skipped]\n");
}

TEST_P(GrepTest, APatternThatNamesALineBreakIsRefusedWithAReason) {
  for (const char* pattern :
       {"TODO\\nfix", "x = 1\ny", "a\\x0ab", "a\\x{000A}b", "[\\n]", "end$\\n^start"}) {
    json r = call("grep", {{"pattern", pattern}});
    ASSERT_TRUE(isError(r)) << pattern;
    EXPECT_NE(text(r).find("the pattern names a line break"), std::string::npos) << text(r);
    EXPECT_NE(text(r).find("rg -U"), std::string::npos) << text(r);
  }
  // An escaped backslash before n, and classes that take in a line break among others, search.
  for (const char* pattern : {"a\\\\n", "TODO\\s+fix", "x[^a]= 1", "\\x61"}) {
    json r = call("grep", {{"pattern", pattern}});
    EXPECT_FALSE(isError(r)) << pattern << ": " << text(r);
  }
  json r = call("grep", {{"pattern", "TODO\\s+fix"}, {"output_mode", "content"}});
  EXPECT_EQ(text(r), "a.py:2:# TODO fix\n[1 binary file(s) skipped]\n");
}

TEST_P(GrepTest, IgnoreCase) {
  json r = call("grep", {{"pattern", "todo"}, {"ignore_case", true}, {"output_mode", "count"}});
  EXPECT_EQ(text(r), "a.py:2\ndocs/readme.md:1\n[1 binary file(s) skipped]\n");
  EXPECT_EQ(r["structuredContent"]["total_matches"], 3);
}

TEST_P(GrepTest, ContextLines) {
  json r = call("grep", {{"pattern", "^y"}, {"output_mode", "content"}, {"context", 1}});
  EXPECT_EQ(text(r), "a.py-2-# TODO fix\na.py:3:y = 2\na.py-4-z = 3\n[1 binary file(s) skipped]\n");
  json lines = r["structuredContent"]["matches"];
  EXPECT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1]["match"], true);
  EXPECT_EQ(lines[0]["match"], false);
}

TEST_P(GrepTest, SeparatedContextGroups) {
  json r = call("grep", {{"pattern", "^x|todo again"}, {"output_mode", "content"}, {"context", 1}});
  EXPECT_EQ(text(r),
            "a.py:1:x = 1\na.py-2-# TODO fix\n--\na.py-4-z = 3\na.py:5:# todo again\n"
            "[1 binary file(s) skipped]\n");
}

TEST_P(GrepTest, ContextAtTheEndOfAFile) {
  seed("end.txt", "alpha\nBETA\ngamma\n");
  seed("crlf.txt", "one\r\nTWO\r\nthree\r\n");
  json r = call("grep", {{"pattern", "BETA|TWO"}, {"output_mode", "content"}, {"context", 1}});
  EXPECT_EQ(text(r),
            "crlf.txt-1-one\ncrlf.txt:2:TWO\ncrlf.txt-3-three\n--\nend.txt-1-alpha\n"
            "end.txt:2:BETA\nend.txt-3-gamma\n[1 binary file(s) skipped]\n");
}

TEST_P(GrepTest, LinesAcrossStreamChunksKeepTheirNumbers) {
  // Files are searched in 256 KiB chunks; lines that straddle a chunk edge must still match
  // once, whole, with the right number.
  std::string big;
  size_t line = 0;
  std::vector<size_t> expected;
  while (big.size() < (1u << 20)) {
    ++line;
    if (line % 997 == 0) {
      big += std::string(300, 'p') + "NEEDLE" + std::string(300, 's') + "\n";
      expected.push_back(line);
    } else {
      big += "filler line " + std::to_string(line) + " " + std::string(line % 200, 'f') + "\n";
    }
  }
  seed("big/stream.txt", big + "NEEDLE at the end without a newline");
  expected.push_back(line + 1);
  json r = call("grep", {{"pattern", "NEEDLE"}, {"path", "big"}, {"output_mode", "content"}});
  ASSERT_FALSE(isError(r)) << text(r);
  std::vector<size_t> got;
  for (const json& m : r["structuredContent"]["matches"]) got.push_back(m["line"]);
  EXPECT_EQ(got, expected);
  r = call("grep", {{"pattern", "NEE+DLE"}, {"path", "big"}, {"output_mode", "count"}});
  EXPECT_EQ(r["structuredContent"]["total_matches"], expected.size());
  r = call("grep", {{"pattern", "NEEDLE"}, {"path", "big"}});
  EXPECT_EQ(r["structuredContent"]["files"], json({"big/stream.txt"}));
}

TEST_P(GrepTest, LiteralAtTheEdgesAndOverlapping) {
  seed("edge/start.txt", "Zq_needle at the start\nnothing\n");
  seed("edge/end.txt", "nothing\nat the end Zq_needle");
  seed("edge/exact.txt", "Zq_needle");
  seed("edge/short.txt", "Zq_");
  seed("edge/overlap.txt", "aaZZq_Zq_needleZq_needl\n");
  json r = call("grep", {{"pattern", "Zq_needle"}, {"path", "edge"}, {"output_mode", "content"}});
  EXPECT_EQ(
      text(r),
      "edge/end.txt:2:at the end Zq_needle\nedge/exact.txt:1:Zq_needle\n"
      "edge/overlap.txt:1:aaZZq_Zq_needleZq_needl\nedge/start.txt:1:Zq_needle at the start\n");
}

TEST_P(GrepTest, EmptyLinePatternFindsOnlyRealLines) {
  seed("blank/none.txt", "a\nb\n");
  seed("blank/one.txt", "a\n\nb\n");
  seed("blank/last.txt", "a\n\n");
  seed("blank/empty.txt", "");
  json r = call("grep", {{"pattern", "^$"}, {"path", "blank"}, {"output_mode", "content"}});
  EXPECT_EQ(text(r), "blank/last.txt:2:\nblank/one.txt:2:\n");
  r = call("grep", {{"pattern", "^\\s*$"}, {"path", "blank"}, {"output_mode", "count"}});
  EXPECT_EQ(text(r), "blank/last.txt:1\nblank/one.txt:1\n");
}

TEST_P(GrepTest, LongLiteralNeedle) {
  const std::string needle(100, 'a');
  seed("long/hit.txt", std::string(150, 'a') + "\n");
  seed("long/miss.txt", std::string(99, 'a') + "b" + std::string(99, 'a') + "\n");
  json r = call("grep", {{"pattern", needle}, {"path", "long"}});
  EXPECT_EQ(r["structuredContent"]["files"], json({"long/hit.txt"}));
}

TEST_P(GrepTest, ClientCannotRaiseTheResultLimit) {
  limits_.max_results = 1;
  json r = call("grep", {{"pattern", "TODO"}, {"max_results", 1000}});
  EXPECT_EQ(r["structuredContent"]["files"].size(), 1u);
  EXPECT_EQ(r["structuredContent"]["truncated"], true);
}

TEST_P(GrepTest, TruncationIsReportedWithContext) {
  json r =
      call("grep",
           {{"pattern", "= [13]"}, {"output_mode", "content"}, {"context", 1}, {"max_results", 1}});
  EXPECT_EQ(r["structuredContent"]["truncated"], true);
}

TEST_P(GrepTest, IncludeByNameAndByPath) {
  EXPECT_EQ(call("grep", {{"pattern", "TODO"}, {"include", "*.md"}})["structuredContent"]["files"],
            json({"docs/readme.md"}));
  EXPECT_EQ(
      call("grep", {{"pattern", "TODO"}, {"include", "docs/*"}})["structuredContent"]["files"],
      json({"docs/readme.md"}));
  EXPECT_EQ(
      call("grep", {{"pattern", "TODO"}, {"include", "*.{py,txt}"}})["structuredContent"]["files"],
      json({"a.py"}));
}

TEST_P(GrepTest, SinglePath) {
  json r = call("grep", {{"pattern", "os"}, {"path", "b.py"}, {"output_mode", "count"}});
  EXPECT_EQ(text(r), "b.py:2\n");
}

TEST_P(GrepTest, MaxResults) {
  json r = call("grep", {{"pattern", "="}, {"output_mode", "content"}, {"max_results", 2}});
  EXPECT_EQ(r["structuredContent"]["matches"].size(), 2u);
  EXPECT_EQ(r["structuredContent"]["truncated"], true);
  EXPECT_NE(text(r).find("[results stop at max_results=2; 3 matches in 1 files in all]"),
            std::string::npos)
      << text(r);
}

TEST_P(GrepTest, NoMatches) {
  EXPECT_EQ(text(call("grep", {{"pattern", "nothing-here"}})),
            "No matches.\n[1 binary file(s) skipped]\n");
}

TEST_P(GrepTest, MatchesNeverSpanLines) {
  json r = call("grep", {{"pattern", "1\\s+# TODO"}, {"output_mode", "count"}});
  EXPECT_EQ(r["structuredContent"]["files_matched"], 0);
}

TEST_P(GrepTest, BadPatternQuotesRe2) {
  json r = call("grep", {{"pattern", "(unclosed"}});
  EXPECT_TRUE(isError(r));
  EXPECT_EQ(text(r), "invalid regular expression '(unclosed': missing ): (unclosed");
}

TEST_P(GrepTest, CatastrophicPatternStaysLinear) {
  // (a+)+$ is exponential in backtracking engines; RE2 finishes it in one pass.
  seed("aaa.txt", std::string(1 << 20, 'a') + "b");
  json r = call("grep", {{"pattern", "(a+)+$"}, {"path", "aaa.txt"}, {"output_mode", "count"}});
  ASSERT_FALSE(isError(r)) << text(r);
  EXPECT_EQ(r["structuredContent"]["files_matched"], 0);
}

}  // namespace
}  // namespace byd::testing
