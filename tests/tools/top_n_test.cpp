#include "tools/top_n.h"

#include <gtest/gtest.h>

#include <functional>

namespace byd {
namespace {

TEST(TopN, KeepsTheFirstInOrderAndCountsAll) {
  std::vector<int> all(1000);
  for (int i = 0; i < 1000; ++i) all[i] = (i * 7919) % 1000;  // 0..999, shuffled
  auto top = makeTopN<int>(5, std::less<int>());
  for (int v : all) top.offer(v);
  EXPECT_EQ(top.seen(), 1000u);
  EXPECT_EQ(top.take(), (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(TopN, FewerThanTheLimitAndZero) {
  auto few = makeTopN<int>(10, std::greater<int>());
  for (int v : {3, 9, 1}) few.offer(v);
  EXPECT_EQ(few.take(), (std::vector<int>{9, 3, 1}));
  auto none = makeTopN<int>(0, std::less<int>());
  none.offer(1);
  EXPECT_EQ(none.seen(), 1u);
  EXPECT_TRUE(none.take().empty());
}

TEST(TopN, ExactlyAtTheLimitAndOneBeyond) {
  auto at = makeTopN<int>(4, std::less<int>());
  for (int v : {8, 2, 6, 4}) at.offer(v);  // gathered, never a heap
  EXPECT_EQ(at.take(), (std::vector<int>{2, 4, 6, 8}));
  auto beyond = makeTopN<int>(4, std::less<int>());
  for (int v : {8, 2, 6, 4, 5, 9, 1}) beyond.offer(v);  // a heap from the fifth on
  EXPECT_EQ(beyond.seen(), 7u);
  EXPECT_EQ(beyond.take(), (std::vector<int>{1, 2, 4, 5}));
}

}  // namespace
}  // namespace byd
