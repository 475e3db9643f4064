#include "tests/tools/tool_fixture.h"

namespace byd::testing {
namespace {

class EditFileTest : public ToolTest {};
BYD_TOOL_SUITE(EditFileTest);

TEST_P(EditFileTest, ReplacesOnceAndShowsDiff) {
  seed("a.py", "def f():\n    return 1\n\nprint(f())\n");
  json r =
      call("edit_file", {{"path", "a.py"}, {"old_string", "return 1"}, {"new_string", "return 2"}});
  ASSERT_FALSE(isError(r)) << text(r);
  EXPECT_EQ(contentOf("a.py"), "def f():\n    return 2\n\nprint(f())\n");
  EXPECT_EQ(r["structuredContent"]["diff"],
            "--- a/a.py\n+++ b/a.py\n@@ -1,4 +1,4 @@\n def f():\n-    return 1\n+    return 2\n"
            " \n print(f())\n");
  EXPECT_EQ(r["structuredContent"]["replacements"], 1);
}

TEST_P(EditFileTest, NotFoundSaysSo) {
  seed("a.txt", "hello\n");
  json r = call("edit_file", {{"path", "a.txt"}, {"old_string", "bye"}, {"new_string", "x"}});
  EXPECT_TRUE(isError(r));
  EXPECT_EQ(text(r),
            "old_string was not found in 'a.txt'; read the file again and copy the text exactly, "
            "including whitespace");
  EXPECT_EQ(contentOf("a.txt"), "hello\n");
}

TEST_P(EditFileTest, AmbiguousWithoutReplaceAll) {
  seed("a.txt", "x = 1\ny = 2\nx = 1\n");
  json r = call("edit_file", {{"path", "a.txt"}, {"old_string", "x = 1"}, {"new_string", "x = 3"}});
  EXPECT_TRUE(isError(r));
  EXPECT_EQ(text(r),
            "old_string occurs 2 times in 'a.txt' (lines 1, 3); add surrounding lines to make it "
            "unique, or set replace_all");
  EXPECT_EQ(contentOf("a.txt"), "x = 1\ny = 2\nx = 1\n");
}

TEST_P(EditFileTest, ReplaceAll) {
  seed("a.txt", "x = 1\ny = 2\nx = 1\n");
  json r = call(
      "edit_file",
      {{"path", "a.txt"}, {"old_string", "x = 1"}, {"new_string", "x = 3"}, {"replace_all", true}});
  ASSERT_FALSE(isError(r)) << text(r);
  EXPECT_EQ(contentOf("a.txt"), "x = 3\ny = 2\nx = 3\n");
  EXPECT_EQ(r["structuredContent"]["replacements"], 2);
}

TEST_P(EditFileTest, DryRunLeavesFileAlone) {
  seed("a.txt", "alpha\n");
  json r =
      call("edit_file",
           {{"path", "a.txt"}, {"old_string", "alpha"}, {"new_string", "beta"}, {"dry_run", true}});
  ASSERT_FALSE(isError(r)) << text(r);
  EXPECT_EQ(contentOf("a.txt"), "alpha\n");
  EXPECT_EQ(r["structuredContent"]["diff"],
            "--- a/a.txt\n+++ b/a.txt\n@@ -1,1 +1,1 @@\n-alpha\n+beta\n");
  EXPECT_NE(text(r).find("dry run, file unchanged"), std::string::npos);
}

TEST_P(EditFileTest, CrlfFileKeepsCrlf) {
  seed("w.txt", "one\r\ntwo\r\nthree\r\n");
  json r = call("edit_file",
                {{"path", "w.txt"}, {"old_string", "one\ntwo"}, {"new_string", "uno\ndos"}});
  ASSERT_FALSE(isError(r)) << text(r);
  EXPECT_EQ(contentOf("w.txt"), "uno\r\ndos\r\nthree\r\n");
}

TEST_P(EditFileTest, IdenticalStringsAreRefused) {
  seed("a.txt", "a\n");
  json r = call("edit_file", {{"path", "a.txt"}, {"old_string", "a"}, {"new_string", "a"}});
  EXPECT_TRUE(isError(r));
  EXPECT_EQ(text(r), "old_string and new_string are identical; nothing would change");
}

TEST_P(EditFileTest, MissingFile) {
  json r = call("edit_file", {{"path", "nope"}, {"old_string", "a"}, {"new_string", "b"}});
  EXPECT_TRUE(isError(r));
  EXPECT_EQ(text(r), "'nope' does not exist");
}

TEST_P(EditFileTest, MultiLineDeletionDiff) {
  seed("a.txt", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n");
  json r = call("edit_file", {{"path", "a.txt"}, {"old_string", "5\n6\n"}, {"new_string", ""}});
  ASSERT_FALSE(isError(r)) << text(r);
  EXPECT_EQ(contentOf("a.txt"), "1\n2\n3\n4\n7\n8\n9\n10\n");
  EXPECT_EQ(r["structuredContent"]["diff"],
            "--- a/a.txt\n+++ b/a.txt\n@@ -2,8 +2,6 @@\n 2\n 3\n 4\n-5\n-6\n 7\n 8\n 9\n");
}

}  // namespace
}  // namespace byd::testing

namespace byd::testing {
namespace {

class EditFileJoinTest : public ToolTest {};
BYD_TOOL_SUITE(EditFileJoinTest);

TEST_P(EditFileJoinTest, DiffShowsJoinedLines) {
  seed("a.txt", "a\nb\nc\n");
  json r = call("edit_file", {{"path", "a.txt"}, {"old_string", "a\n"}, {"new_string", "x"}});
  ASSERT_FALSE(isError(r)) << text(r);
  EXPECT_EQ(contentOf("a.txt"), "xb\nc\n");
  EXPECT_EQ(r["structuredContent"]["diff"],
            "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,2 @@\n-a\n-b\n+xb\n c\n");
}

TEST_P(EditFileJoinTest, CrlfFileGainsCrlfLines) {
  seed("w.txt", "a\r\nb\r\n");
  json r = call("edit_file", {{"path", "w.txt"}, {"old_string", "a"}, {"new_string", "x\ny"}});
  ASSERT_FALSE(isError(r)) << text(r);
  EXPECT_EQ(contentOf("w.txt"), "x\r\ny\r\nb\r\n");
}

}  // namespace
}  // namespace byd::testing
