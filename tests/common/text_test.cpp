#include "common/text.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <ctime>
#include <random>
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
// The formatting a listing does per entry, against the C library's on the same values.
static std::string libcIsoTime(int64_t unix_ns) {
  time_t secs = static_cast<time_t>(unix_ns / 1000000000);
  if (unix_ns % 1000000000 < 0) --secs;
  struct tm tm;
  gmtime_r(&secs, &tm);
  char buf[48];
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

TEST(IsoTime, AgreesWithGmtimeAndStrftime) {
  std::mt19937_64 random(42);
  std::vector<int64_t> values = {0,
                                 -1,
                                 1,
                                 999999999,
                                 1000000000,
                                 -1000000000,
                                 951782400LL * 1000000000,
                                 4107542399LL * 1000000000,
                                 9214646400LL * 1000000000,
                                 -9214646400LL * 1000000000,
                                 INT64_MAX,
                                 INT64_MIN};
  for (int i = 0; i < 200000; ++i) values.push_back(static_cast<int64_t>(random()));
  for (int i = 0; i < 200000; ++i) {  // days of 1680-2260: all that nanoseconds reach
    values.push_back((static_cast<int64_t>(random() % 212000) - 106000) * 86400 * 1000000000 +
                     static_cast<int64_t>(random() % 86400000000000ULL));
  }
  for (int64_t v : values) ASSERT_EQ(isoTime(v), libcIsoTime(v)) << v;
  EXPECT_EQ(isoTime(1700000000123456789), "2023-11-14T22:13:20Z");
}

TEST(HumanSize, AgreesWithPrintfTenthsOfTheUnit) {
  auto printfSize = [](uint64_t bytes) -> std::string {
    if (bytes < 1024) return std::to_string(bytes) + " B";
    const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
    double v = static_cast<double>(bytes);
    int u = -1;
    while (v >= 1024 && u < 3) {
      v /= 1024;
      ++u;
    }
    char buf[48];
    snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
    return buf;
  };
  std::mt19937_64 random(7);
  std::vector<uint64_t> values = {0,
                                  1,
                                  1023,
                                  1024,
                                  1075,
                                  1076,
                                  1126,
                                  1127,
                                  1048575,
                                  1048576,
                                  (1ULL << 40) - 1,
                                  1ULL << 40,
                                  1ULL << 52,
                                  UINT64_MAX};
  // Halves of a tenth, where the rounding is decided: 1.05 KiB is 1075.2 bytes, 0.25 of a
  // tenth of a MiB 26214.4.
  for (uint64_t unit : {1ULL << 10, 1ULL << 20, 1ULL << 30, 1ULL << 40}) {
    for (uint64_t t = 10; t < 200; ++t) {
      const uint64_t at = unit * t / 10 + unit / 20;
      for (uint64_t d : {at - 1, at, at + 1}) values.push_back(d);
    }
  }
  for (int i = 0; i < 200000; ++i) values.push_back(random() >> (random() % 64));
  for (uint64_t v : values) ASSERT_EQ(humanSize(v), printfSize(v)) << v;
}

}  // namespace byd
