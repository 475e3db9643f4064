#include "tests/tools/tool_fixture.h"

namespace byd::testing {
namespace {

class WriteFileTest : public ToolTest {};
BYD_TOOL_SUITE(WriteFileTest);

TEST_P(WriteFileTest, CreatesWithParents) {
  json r = call("write_file", {{"path", "a/b/c.txt"}, {"content", "x\ny\n"}});
  ASSERT_FALSE(isError(r)) << text(r);
  EXPECT_EQ(text(r), "Created 'a/b/c.txt': wrote 4 bytes (2 lines); the file is now 4 B.");
  EXPECT_EQ(r["structuredContent"]["created"], true);
  EXPECT_EQ(r["structuredContent"]["lines_written"], 2);
  EXPECT_EQ(contentOf("a/b/c.txt"), "x\ny\n");
}

TEST_P(WriteFileTest, Overwrites) {
  seed("f.txt", "old content");
  json r = call("write_file", {{"path", "f.txt"}, {"content", "new"}});
  EXPECT_EQ(r["structuredContent"]["created"], false);
  EXPECT_EQ(contentOf("f.txt"), "new");
}

TEST_P(WriteFileTest, CreateModeRefusesExistingFile) {
  seed("f.txt", "keep me");
  json r = call("write_file", {{"path", "f.txt"}, {"content", "x"}, {"mode", "create"}});
  EXPECT_TRUE(isError(r));
  EXPECT_EQ(text(r), "'f.txt' already exists");
  EXPECT_EQ(contentOf("f.txt"), "keep me");
}

TEST_P(WriteFileTest, Appends) {
  seed("log.txt", "one\n");
  json r = call("write_file", {{"path", "log.txt"}, {"content", "two\n"}, {"mode", "append"}});
  ASSERT_FALSE(isError(r)) << text(r);
  EXPECT_EQ(contentOf("log.txt"), "one\ntwo\n");
  EXPECT_EQ(r["structuredContent"]["size"], 8);
  EXPECT_EQ(text(r), "Appended 'log.txt': wrote 4 bytes (1 line); the file is now 8 B.");
}

TEST_P(WriteFileTest, AppendCreatesMissingFile) {
  json r = call("write_file", {{"path", "new.txt"}, {"content", "a"}, {"mode", "append"}});
  ASSERT_FALSE(isError(r));
  EXPECT_EQ(r["structuredContent"]["created"], true);
  EXPECT_EQ(contentOf("new.txt"), "a");
}

TEST_P(WriteFileTest, UnknownModeIsNamed) {
  json r = call("write_file", {{"path", "f"}, {"content", "x"}, {"mode", "move"}});
  EXPECT_TRUE(isError(r));
  EXPECT_EQ(text(r),
            "invalid arguments for write_file: arguments.mode: must be one of \"overwrite\", "
            "\"create\", \"append\", got \"move\"");
}

TEST_P(WriteFileTest, DirectoryTargetIsRefused) {
  seed("d/x", "");
  json r = call("write_file", {{"path", "d"}, {"content", "x"}});
  EXPECT_TRUE(isError(r));
  EXPECT_NE(text(r).find("'d' is a directory"), std::string::npos) << text(r);
}

TEST_P(WriteFileTest, FileAsParentIsRefused) {
  seed("f", "x");
  json r = call("write_file", {{"path", "f/child"}, {"content", "x"}});
  EXPECT_TRUE(isError(r));
  EXPECT_EQ(contentOf("f"), "x");
}

TEST_P(WriteFileTest, EscapesAreRefused) {
  json r = call("write_file", {{"path", "../escape.txt"}, {"content", "x"}});
  EXPECT_TRUE(isError(r));
  EXPECT_EQ(text(r), "'../escape.txt' is outside the workspace");
  r = call("write_file", {{"path", "/tmp/escape.txt"}, {"content", "x"}});
  EXPECT_TRUE(isError(r));
  EXPECT_EQ(text(r), "'/tmp/escape.txt' is outside the workspace");
}

TEST_P(WriteFileTest, BinarySafeContent) {
  const std::string data("a\0b\xff", 4);
  ASSERT_FALSE(isError(call("write_file", {{"path", "bin"}, {"content", "a"}})));
  ASSERT_TRUE(backend_->write("bin", data, WriteMode::kOverwrite).ok());
  EXPECT_EQ(contentOf("bin"), data);
}

}  // namespace
}  // namespace byd::testing
