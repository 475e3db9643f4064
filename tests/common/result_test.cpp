#include "common/result.h"

#include <gtest/gtest.h>

namespace byd {
namespace {

TEST(Status, DetailsAreDataBesideTheMessage) {
  const Status s = notFound("resource not found: mem://a").withDetail("uri", "mem://a");
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_EQ(s.message(), "resource not found: mem://a");
  EXPECT_EQ(s.detail("uri"), "mem://a");
  EXPECT_EQ(s.detail("capability"), std::nullopt);
  const Status again = Status(s).withDetail("uri", "mem://b");
  EXPECT_EQ(again.detail("uri"), "mem://b");  // the later one wins
  EXPECT_EQ(invalidArgument("x").detail("uri"), std::nullopt);
}

TEST(Result, MadeFromAnOkStatusIsAnInternalErrorInEveryBuild) {
  const Result<int> r(okStatus());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInternal);
  EXPECT_NE(r.status().message().find("a result was made from an OK status"), std::string::npos);
}

TEST(Result, HoldsAValueOrAnError) {
  const Result<int> good(7);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 7);
  EXPECT_TRUE(good.status().ok());
  const Result<int> bad(notFound("gone"));
  EXPECT_EQ(bad.status().message(), "gone");
}

}  // namespace
}  // namespace byd
