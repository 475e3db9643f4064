// Arguments as other tools spell them (Claude Code's file_path, ripgrep's -i and -C, the
// glob filter, head_limit) are taken as ours; where a spelling means something the tool does not
// do, the error names what to use.

#include "tests/tools/tool_fixture.h"

namespace byd::testing {
namespace {

class AliasesTest : public ToolTest {
 protected:
  void SetUp() override {
    ToolTest::SetUp();
    seed("a.py", "x = 1\n# TODO fix\ny = 2\n");
    seed("b.txt", "todo too\n");
  }
};
BYD_TOOL_SUITE(AliasesTest);

TEST_P(AliasesTest, ClaudeCodesFilePathIsPath) {
  json r = call("read_file", {{"file_path", "a.py"}, {"length", 1}});
  ASSERT_FALSE(isError(r)) << text(r);
  EXPECT_EQ(r["structuredContent"]["num_lines"], 1);
  r = call("write_file", {{"file_path", "c.txt"}, {"content", "hi\n"}});
  ASSERT_FALSE(isError(r)) << text(r);
  r = call("edit_file", {{"file_path", "c.txt"}, {"old_string", "hi"}, {"new_string", "ho"}});
  ASSERT_FALSE(isError(r)) << text(r);
  EXPECT_EQ(text(call("read_file", {{"path", "c.txt"}})), "     1\tho\n");
}

TEST_P(AliasesTest, GrepTakesRipgrepsSpellings) {
  json r = call("grep", {{"pattern", "todo"},
                         {"-i", true},
                         {"glob", "*.py"},
                         {"-n", true},
                         {"-C", 1},
                         {"output_mode", "content"},
                         {"head_limit", 5}});
  ASSERT_FALSE(isError(r)) << text(r);
  EXPECT_EQ(text(r), "a.py-1-x = 1\na.py:2:# TODO fix\na.py-3-y = 2\n");
}

TEST_P(AliasesTest, ASpellingAndOursTogetherOrOneWeCannotDoIsRefusedNamingOurs) {
  json r = call("read_file", {{"file_path", "a.py"}, {"path", "b.txt"}});
  ASSERT_TRUE(isError(r));
  EXPECT_EQ(text(r),
            "read_file: 'file_path' and 'path' are the same argument (file_path is how "
            "other tools name path); give 'path' alone");
  r = call("grep", {{"pattern", "x"}, {"-A", 2}});
  ASSERT_TRUE(isError(r));
  EXPECT_EQ(text(r),
            "grep: there is no argument '-A': grep shows as many lines after a match as "
            "before it: use context");
  r = call("grep", {{"pattern", "x"}, {"type", "py"}});
  ASSERT_TRUE(isError(r));
  EXPECT_NE(text(r).find("include \"*.py\""), std::string::npos) << text(r);
  // Anything else unknown is still an unknown argument.
  r = call("grep", {{"pattern", "x"}, {"-Z", true}});
  ASSERT_TRUE(isError(r));
  EXPECT_NE(text(r).find("invalid arguments for grep"), std::string::npos) << text(r);
}

}  // namespace
}  // namespace byd::testing
