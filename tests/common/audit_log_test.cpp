#include "common/audit_log.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "tests/test_util.h"

namespace byd {
namespace {

std::string contents(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(AuditLog, AppendsWholeLinesFromManyThreadsToAPrivateFile) {
  testing::TempDir dir;
  const std::string path = dir.str() + "/audit.jsonl";
  {
    std::ofstream(path) << "{\"earlier\":true}\n";
    chmod(path.c_str(), 0600);
  }
  {
    auto log = AuditLog::open(path);
    ASSERT_TRUE(log.ok()) << log.status().message();
    std::vector<std::jthread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < 200; ++i) (*log)->write("{\"t\":" + std::to_string(t) + "}");
      });
    }
  }
  const std::string text = contents(path);
  EXPECT_EQ(text.rfind("{\"earlier\":true}\n", 0), 0u) << "appended, not truncated";
  size_t lines = 0, at = 0;
  while ((at = text.find('\n', at)) != std::string::npos) ++lines, ++at;
  EXPECT_EQ(lines, 801u);
  for (int t = 0; t < 4; ++t) {
    const std::string line = "{\"t\":" + std::to_string(t) + "}\n";
    size_t n = 0;
    for (size_t p = text.find(line); p != std::string::npos; p = text.find(line, p + 1)) ++n;
    EXPECT_EQ(n, 200u);
  }
  const std::string fresh = dir.str() + "/fresh.jsonl";
  ASSERT_TRUE(AuditLog::open(fresh).ok());
  struct stat st {};
  ASSERT_EQ(stat(fresh.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(AuditLog, ReopensByNameWhenAsked) {
  testing::TempDir dir;
  const std::string path = dir.str() + "/audit.jsonl";
  auto log = AuditLog::open(path);
  ASSERT_TRUE(log.ok());
  (*log)->write("one");
  ASSERT_EQ(rename(path.c_str(), (path + ".1").c_str()), 0);
  (*log)->write("two");
  AuditLog::reopenSoon();
  (*log)->write("three");
  EXPECT_EQ(contents(path + ".1"), "one\ntwo\n");
  EXPECT_EQ(contents(path), "three\n");
}

TEST(AuditLog, RefusesAFileItCannotOpenNamingIt) {
  auto log = AuditLog::open("/nonexistent-dir/audit.jsonl");
  ASSERT_FALSE(log.ok());
  EXPECT_NE(log.status().message().find("--audit-log '/nonexistent-dir/audit.jsonl'"),
            std::string::npos);
}

}  // namespace
}  // namespace byd
