#include "tests/tools/tool_fixture.h"

namespace byd::testing {
namespace {

class ReadFileTest : public ToolTest {};
BYD_TOOL_SUITE(ReadFileTest);

TEST_P(ReadFileTest, NumbersLinesLikeCatN) {
  seed("a.txt", "one\ntwo\nthree\n");
  json r = call("read_file", {{"path", "a.txt"}});
  ASSERT_FALSE(isError(r)) << text(r);
  EXPECT_EQ(text(r), "     1\tone\n     2\ttwo\n     3\tthree\n");
  EXPECT_EQ(r["structuredContent"]["total_lines"], 3);
  EXPECT_EQ(r["structuredContent"]["content"], "one\ntwo\nthree\n");
  EXPECT_TRUE(r["structuredContent"]["next_offset"].is_null());
}

TEST_P(ReadFileTest, OffsetAndLimitWithFooter) {
  std::string content;
  for (int i = 1; i <= 10; ++i) content += "line " + std::to_string(i) + "\n";
  seed("a.txt", content);
  json r = call("read_file", {{"path", "a.txt"}, {"offset", 3}, {"limit", 2}});
  ASSERT_FALSE(isError(r)) << text(r);
  EXPECT_EQ(text(r),
            "     3\tline 3\n     4\tline 4\n"
            "[lines 3-4 of 10; 6 more lines; continue with offset=5]\n");
  EXPECT_EQ(r["structuredContent"]["next_offset"], 5);
}

TEST_P(ReadFileTest, ANegativeOffsetShowsTheEndAsTailDoes) {
  std::string content;
  for (int i = 1; i <= 10; ++i) content += "line " + std::to_string(i) + "\n";
  seed("a.txt", content);
  json r = call("read_file", {{"path", "a.txt"}, {"offset", -3}});
  ASSERT_FALSE(isError(r)) << text(r);
  EXPECT_EQ(text(r), "     8\tline 8\n     9\tline 9\n    10\tline 10\n");
  EXPECT_EQ(r["structuredContent"]["start_line"], 8);
  EXPECT_TRUE(r["structuredContent"]["next_offset"].is_null());
  // A limit below the count shows the first of those lines, and says how to go on.
  r = call("read_file", {{"path", "a.txt"}, {"offset", -3}, {"limit", 2}});
  EXPECT_EQ(text(r),
            "     8\tline 8\n     9\tline 9\n"
            "[lines 8-9 of 10; 1 more lines; continue with offset=10]\n");
  // More than the file has: the whole file.
  r = call("read_file", {{"path", "a.txt"}, {"offset", -50}});
  EXPECT_EQ(r["structuredContent"]["start_line"], 1);
  EXPECT_EQ(r["structuredContent"]["num_lines"], 10);
  // A last line without a newline is a line.
  seed("b.txt", "a\nb\nc");
  EXPECT_EQ(text(call("read_file", {{"path", "b.txt"}, {"offset", -2}})), "     2\tb\n     3\tc\n");
  r = call("read_file", {{"path", "a.txt"}, {"offset", 0}});
  ASSERT_TRUE(isError(r));
  EXPECT_NE(text(r).find("offset 0 is no line"), std::string::npos) << text(r);
}

TEST_P(ReadFileTest, ALongLineIsReadOnByColumn) {
  std::string line;
  for (int i = 0; i < 500; ++i) line += "{\"k" + std::to_string(i) + "\":1},";  // one JSON line
  seed("one.json", "short\n" + line + "\n");
  json r = call("read_file", {{"path", "one.json"}});
  std::string t = text(r);
  EXPECT_NE(t.find("; column=2001 reads on]"), std::string::npos) << t.substr(0, 200);
  std::string seen = r["structuredContent"]["content"].get<std::string>().substr(6, 2000);
  // Page through the line by the column each note names, until it ends.
  for (int64_t column = 2001; column > 0;) {
    r = call("read_file", {{"path", "one.json"}, {"offset", 2}, {"limit", 1}, {"column", column}});
    ASSERT_FALSE(isError(r)) << text(r);
    t = text(r);
    std::string part = r["structuredContent"]["content"];
    ASSERT_TRUE(part.ends_with("\n"));
    seen += part.substr(0, part.size() - 1);
    const size_t at = t.find("; column=");
    column = at == std::string::npos ? 0 : std::stoll(t.substr(at + 9));
    if (column) {
      EXPECT_NE(t.find("[... line cut: bytes "), std::string::npos) << t.substr(t.size() - 120);
    }
  }
  EXPECT_EQ(seen, line);
  r = call("read_file", {{"path", "one.json"}, {"column", 0}});
  EXPECT_TRUE(isError(r));
}

TEST_P(ReadFileTest, LastLineWithoutNewline) {
  seed("a.txt", "a\nb");
  json r = call("read_file", {{"path", "a.txt"}});
  EXPECT_EQ(text(r), "     1\ta\n     2\tb\n");
  EXPECT_EQ(r["structuredContent"]["total_lines"], 2);
}

TEST_P(ReadFileTest, CrlfShownWithoutCarriageReturns) {
  seed("w.txt", "a\r\nb\r\n");
  EXPECT_EQ(text(call("read_file", {{"path", "w.txt"}})), "     1\ta\n     2\tb\n");
}

TEST_P(ReadFileTest, EmptyFile) {
  seed("e.txt", "");
  json r = call("read_file", {{"path", "e.txt"}});
  ASSERT_FALSE(isError(r));
  EXPECT_EQ(text(r), "(empty file)\n");
}

TEST_P(ReadFileTest, OffsetPastTheEnd) {
  seed("a.txt", "x\ny\n");
  json r = call("read_file", {{"path", "a.txt"}, {"offset", 9}});
  EXPECT_TRUE(isError(r));
  EXPECT_EQ(text(r), "offset 9 is past the end of 'a.txt', which has 2 lines");
}

TEST_P(ReadFileTest, LongLinesAreCut) {
  seed("long.txt", std::string(5000, 'x') + "\nshort\n");
  json r = call("read_file", {{"path", "long.txt"}});
  const std::string t = text(r);
  EXPECT_NE(t.find("\t" + std::string(2000, 'x') +
                   " [... line cut at 2000 of 5000 bytes; column=2001 reads on]\n"),
            std::string::npos);
  EXPECT_NE(t.find("     2\tshort\n"), std::string::npos);
  EXPECT_NE(t.find("[1 line(s) longer than 2000 bytes were cut;"), std::string::npos);
}

TEST_P(ReadFileTest, HugeSingleLineFileIsReadInBoundedOutput) {
  seed("big.txt", std::string(50 << 20, 'a'));
  json r = call("read_file", {{"path", "big.txt"}});
  ASSERT_FALSE(isError(r)) << text(r);
  EXPECT_LT(text(r).size(), 3000u);
  EXPECT_NE(text(r).find("line cut at 2000 of 52428800 bytes"), std::string::npos);
}

TEST_P(ReadFileTest, AFileOfManyChunksIsReadWholeWithLinesAcrossTheirEdges) {
  // Lines of every length from 1 to 97 bytes, so some cross each edge of the chunks the file
  // is read in; about 1.2 MiB, the last line without a newline.
  std::string content, expected;
  int64_t n = 0;
  while (content.size() < (1200 << 10)) {
    const std::string line(static_cast<size_t>(n % 97) + 1, static_cast<char>('a' + n % 26));
    ++n;
    content += line + "\n";
    std::string number = std::to_string(n);
    expected +=
        std::string(number.size() < 6 ? 6 - number.size() : 0, ' ') + number + "\t" + line + "\n";
  }
  content += "end";
  ++n;
  expected += std::string(6 - std::to_string(n).size(), ' ') + std::to_string(n) + "\tend\n";
  seed("many.txt", content);
  limits_.max_text_bytes = 8 << 20;
  json r = call("read_file", {{"path", "many.txt"}, {"limit", 100'000}});
  ASSERT_FALSE(isError(r)) << text(r).substr(0, 400);
  EXPECT_TRUE(text(r) == expected) << "the numbered text differs from cat -n's";
  EXPECT_TRUE(r["structuredContent"]["content"] == content + "\n");
  EXPECT_EQ(r["structuredContent"]["total_lines"], n);
  EXPECT_EQ(r["structuredContent"]["size"], content.size());
  // The last lines, counted over every chunk first.
  r = call("read_file", {{"path", "many.txt"}, {"offset", -2}});
  ASSERT_FALSE(isError(r)) << text(r);
  EXPECT_EQ(r["structuredContent"]["start_line"], n - 1);
  EXPECT_EQ(r["structuredContent"]["content"], std::string(static_cast<size_t>((n - 2) % 97) + 1,
                                                           static_cast<char>('a' + (n - 2) % 26)) +
                                                   "\nend\n");
  // A file of exactly one chunk's size (256 KiB) and one of a byte more.
  for (const size_t size : {size_t{256} << 10, (size_t{256} << 10) + 1}) {
    std::string exact(size, 'x');
    for (size_t i = 99; i < size; i += 100) exact[i] = '\n';
    seed("exact.txt", exact);
    r = call("read_file", {{"path", "exact.txt"}, {"limit", 100'000}});
    ASSERT_FALSE(isError(r)) << text(r);
    EXPECT_EQ(r["structuredContent"]["size"], size);
    EXPECT_EQ(r["structuredContent"]["total_lines"], (size + 99) / 100);
  }
}

TEST_P(ReadFileTest, InvalidUtf8IsReplacedAndSaid) {
  seed("bad.txt", "ok \xff\xfe here\n");
  json r = call("read_file", {{"path", "bad.txt"}});
  ASSERT_FALSE(isError(r));
  EXPECT_NE(text(r).find("ok \xEF\xBF\xBD\xEF\xBF\xBD here"), std::string::npos);
  EXPECT_NE(text(r).find("not valid UTF-8"), std::string::npos);
  EXPECT_EQ(r["structuredContent"]["invalid_utf8"], true);
}

TEST_P(ReadFileTest, PngComesBackAsImageContent) {
  const std::string png = std::string("\x89PNG\r\n\x1a\n", 8) + std::string("\0\0\0\rIHDR", 8);
  seed("pic.png", png);
  json r = call("read_file", {{"path", "pic.png"}});
  ASSERT_FALSE(isError(r)) << text(r);
  ASSERT_EQ(r["content"].size(), 2u);
  EXPECT_EQ(r["content"][1]["type"], "image");
  EXPECT_EQ(r["content"][1]["mimeType"], "image/png");
  EXPECT_EQ(r["content"][1]["data"], base64(png));
}

TEST_P(ReadFileTest, OtherBinaryIsRefusedWithSize) {
  seed("blob.bin", std::string("\x7f"
                               "ELF\0\0\0\0",
                               8) +
                       std::string(2040, '\0'));
  json r = call("read_file", {{"path", "blob.bin"}});
  EXPECT_TRUE(isError(r));
  EXPECT_EQ(text(r),
            "'blob.bin' is a binary file (2.0 KiB); read_file shows text and png, jpeg, gif and "
            "webp images only");
}

TEST_P(ReadFileTest, DirectoryIsRefused) {
  seed("d/x", "");
  json r = call("read_file", {{"path", "d"}});
  EXPECT_TRUE(isError(r));
  EXPECT_EQ(text(r), "'d' is a directory; use ls to list it");
}

TEST_P(ReadFileTest, MissingFile) {
  json r = call("read_file", {{"path", "nope.txt"}});
  EXPECT_TRUE(isError(r));
  EXPECT_EQ(text(r), "'nope.txt' does not exist");
}

TEST_P(ReadFileTest, ArgumentErrorsNameTheField) {
  json r = call("read_file", {{"path", "a"}, {"limit", 0}});
  EXPECT_TRUE(isError(r));
  EXPECT_EQ(text(r), "invalid arguments for read_file: arguments.limit: must be >= 1, got 0");
  r = call("read_file", json::object());
  EXPECT_EQ(text(r),
            "invalid arguments for read_file: arguments.path: required property is missing");
}

TEST_P(ReadFileTest, OutputIsCappedAtTheTextLimit) {
  limits_.max_text_bytes = 4096;
  std::string content;
  for (int i = 0; i < 1000; ++i) content += "some line of text number " + std::to_string(i) + "\n";
  seed("a.txt", content);
  json r = call("read_file", {{"path", "a.txt"}});
  ASSERT_FALSE(isError(r));
  EXPECT_LT(text(r).size(), 4096u + 200);
  const int64_t next = r["structuredContent"]["next_offset"];
  EXPECT_GT(next, 10);
  EXPECT_NE(text(r).find("continue with offset=" + std::to_string(next)), std::string::npos);
}

TEST_P(ReadFileTest, OnlyLinesShownCountAsCut) {
  // Two lines fill most of the room; the third, over-long, is left for the next page, so no
  // line shown was cut and the footer must not say one was.
  limits_.max_text_bytes = 4096;
  seed("a.txt", std::string(1500, 'a') + "\n" + std::string(1500, 'b') + "\n" +
                    std::string(5000, 'c') + "\n");
  json r = call("read_file", {{"path", "a.txt"}});
  ASSERT_FALSE(isError(r)) << text(r);
  EXPECT_EQ(r["structuredContent"]["next_offset"], 3);
  EXPECT_EQ(text(r).find("were cut"), std::string::npos) << text(r);
  r = call("read_file", {{"path", "a.txt"}, {"offset", 3}});
  EXPECT_NE(text(r).find("[1 line(s) longer than 2000 bytes were cut;"), std::string::npos);
}

TEST_P(ReadFileTest, AbsolutePathInsideTheWorkspace) {
  seed("in.txt", "x\n");
  json r = call("read_file", {{"path", backend_->root() + "/in.txt"}});
  ASSERT_FALSE(isError(r)) << text(r);
  EXPECT_EQ(text(r), "     1\tx\n");
}

}  // namespace
}  // namespace byd::testing

namespace byd::testing {
namespace {

class ReadFileImageTest : public ToolTest {};
BYD_TOOL_SUITE(ReadFileImageTest);

TEST_P(ReadFileImageTest, LargeImageIsReadWhole) {
  // Larger than the first chunk read_file looks at, so the rest must be fetched.
  const std::string gif = "GIF89a" + std::string((1 << 20) + 4096, 'g');
  seed("big.gif", gif);
  json r = call("read_file", {{"path", "big.gif"}});
  ASSERT_FALSE(isError(r)) << text(r);
  EXPECT_EQ(r["content"][1]["mimeType"], "image/gif");
  EXPECT_EQ(r["content"][1]["data"], base64(gif));
  EXPECT_EQ(r["structuredContent"]["size"], gif.size());
}

TEST_P(ReadFileImageTest, ImageOverTheReadLimitIsRefused) {
  limits_.max_read_bytes = 4096;
  seed("pic.webp", std::string("RIFF\x10\0\0\0WEBPVP8 ", 16) + std::string(8000, 'w'));
  json r = call("read_file", {{"path", "pic.webp"}});
  EXPECT_TRUE(isError(r));
  EXPECT_EQ(text(r), "'pic.webp' is an image of 7.8 KiB, over the 4.0 KiB read limit");
}

}  // namespace
}  // namespace byd::testing
