#include "common/text.h"

#include <gtest/gtest.h>

#include <string>

namespace byd {
namespace {

TEST(Utf8, SequenceLengths) {
  EXPECT_EQ(utf8SequenceLength("a", 0), 1u);
  EXPECT_EQ(utf8SequenceLength("\xC3\xA9", 0), 2u);
  EXPECT_EQ(utf8SequenceLength("\xE2\x82\xAC", 0), 3u);
  EXPECT_EQ(utf8SequenceLength("\xF0\x9F\x98\x80", 0), 4u);
  EXPECT_EQ(utf8SequenceLength("\xC0\xAF", 0), 0u) << "overlong";
  EXPECT_EQ(utf8SequenceLength("\xE0\x80\xAF", 0), 0u) << "overlong";
  EXPECT_EQ(utf8SequenceLength("\xED\xA0\x80", 0), 0u) << "surrogate";
  EXPECT_EQ(utf8SequenceLength("\xF4\x90\x80\x80", 0), 0u) << "above U+10FFFF";
  EXPECT_EQ(utf8SequenceLength("\xE2\x82", 0), 0u) << "cut short";
  EXPECT_EQ(utf8SequenceLength("\x80", 0), 0u) << "continuation byte alone";
  EXPECT_EQ(utf8SequenceLength("\xFF", 0), 0u);
}

// Every length of ASCII run before the byte in question, so that it falls at every place in
// and across the 16-byte blocks that the scan skips at once.
TEST(Utf8, ValidPrefixStopsAtTheFirstBadByteWhereverItFalls) {
  for (size_t run = 0; run < 50; ++run) {
    const std::string ascii(run, 'x');
    EXPECT_EQ(validUtf8Prefix(ascii), run);
    EXPECT_EQ(validUtf8Prefix(ascii + "\xFF" + std::string(20, 'y')), run) << run;
    EXPECT_EQ(validUtf8Prefix(ascii + "\xE2\x82"), run) << run;  // cut at the end
    const std::string good = ascii + "\xF0\x9F\x98\x80" + std::string(17, 'z') + "\xC3\xA9";
    EXPECT_EQ(validUtf8Prefix(good), good.size()) << run;
    EXPECT_TRUE(isValidUtf8(good));
    EXPECT_EQ(validUtf8Prefix(good + "\xED\xA0\x80"), good.size()) << run;
  }
}

TEST(Utf8, RepairInPlaceLeavesValidTextAloneAndReplacesEachBadByte) {
  std::string text = "caf\xC3\xA9 and plain text that is longer than sixteen bytes";
  const std::string before = text;
  EXPECT_FALSE(repairUtf8InPlace(text));
  EXPECT_EQ(text, before);

  std::string bad = std::string(20, 'a') + "\xFF\xC3" + "b";
  EXPECT_TRUE(repairUtf8InPlace(bad));
  EXPECT_EQ(bad, std::string(20, 'a') + "\xEF\xBF\xBD\xEF\xBF\xBD" + "b");
  bool replaced = false;
  EXPECT_EQ(repairUtf8(std::string(20, 'a') + "\xFF\xC3" + "b", &replaced), bad);
  EXPECT_TRUE(replaced);
}

}  // namespace
}  // namespace byd

namespace byd {
namespace {

TEST(SplitList, PartsBetweenSeparatorsWithoutEmptyOnes) {
  EXPECT_EQ(splitList("landlock,uid", ','), (std::vector<std::string>{"landlock", "uid"}));
  EXPECT_EQ(splitList(",a,,b,", ','), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(splitList("", ',').empty());
  EXPECT_EQ(splitList("one", ','), (std::vector<std::string>{"one"}));
}

TEST(RandomHex, LowercaseHexOfTheLengthAskedAndNeverTheSameTwice) {
  const std::string a = randomHex(16), b = randomHex(16);
  EXPECT_EQ(a.size(), 32u);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos) << a;
  EXPECT_NE(a, b);
  EXPECT_EQ(randomHex(0), "");
}

}  // namespace
}  // namespace byd
