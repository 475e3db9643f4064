// walkTree over a real tree: every entry once (however many threads list), the skipped and
// pruned parts left out, a stop and a cancel honoured.

#include "tools/walk.h"

#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>

#include "backends/local/local_backend.h"
#include "tests/test_util.h"

namespace byd {
namespace {

class WalkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // 3 levels of 5 directories with 4 files each: 155 directories, 500 files.
    for (int a = 0; a < 5; ++a) {
      for (int b = 0; b < 5; ++b) {
        for (int c = 0; c < 5; ++c) {
          for (int f = 0; f < 4; ++f) {
            const std::string rel = "d" + std::to_string(a) + "/e" + std::to_string(b) + "/g" +
                                    std::to_string(c) + "/f" + std::to_string(f) + ".txt";
            tmp_.write(rel, rel);
            files_.insert(rel);
          }
        }
      }
    }
    tmp_.write(".git/config", "[core]");
    auto backend = LocalBackend::open(tmp_.str(), {});
    ASSERT_TRUE(backend.ok()) << backend.status().toString();
    backend_ = std::move(*backend);
  }

  testing::TempDir tmp_;
  std::set<std::string> files_;
  std::unique_ptr<LocalBackend> backend_;
};

TEST_F(WalkTest, EveryEntryOnceWithItsKeyAndDetailWhereAsked) {
  std::map<std::string, int> seen;
  size_t dirs = 0;
  WalkOptions options;
  options.detail = [](const std::string& rel, FileType) { return rel.ends_with("f0.txt"); };
  const CancelToken cancel;
  ASSERT_TRUE(walkTree(*backend_, "", options, cancel,
                       [&](const std::string& key, const std::string& rel, const FileInfo& info) {
                         EXPECT_EQ(key, rel);  // from the root, the two agree
                         if (info.type == FileType::kDir) {
                           ++dirs;
                           return true;
                         }
                         ++seen[rel];
                         // Detail where asked: a size; elsewhere none was read.
                         EXPECT_EQ(info.size, rel.ends_with("f0.txt") ? rel.size() : 0u) << rel;
                         return true;
                       })
                  .ok());
  EXPECT_EQ(dirs, 5u + 25u + 125u);  // .git is skipped
  EXPECT_EQ(seen.size(), files_.size());
  for (const auto& [rel, times] : seen) {
    EXPECT_TRUE(files_.contains(rel)) << rel;
    EXPECT_EQ(times, 1) << rel;
  }
}

TEST_F(WalkTest, PrunedDirectoriesAreNotEntered) {
  WalkOptions options;
  options.skip_git = false;
  options.descend = [](const std::string& rel) {
    return rel == "d2" || rel.starts_with("d2/") || rel == ".git";
  };
  std::set<std::string> seen;
  ASSERT_TRUE(walkTree(*backend_, "", options, CancelToken(),
                       [&](const std::string&, const std::string& rel, const FileInfo& info) {
                         if (info.type != FileType::kDir) seen.insert(rel);
                         return true;
                       })
                  .ok());
  EXPECT_EQ(seen.size(), 5u * 5 * 4 + 1);  // d2's files, and .git's config
  EXPECT_TRUE(seen.contains(".git/config"));
  for (const std::string& rel : seen) {
    EXPECT_TRUE(rel.starts_with("d2/") || rel == ".git/config") << rel;
  }
}

TEST_F(WalkTest, AVisitThatSaysStopEndsTheWalk) {
  size_t visits = 0;
  ASSERT_TRUE(walkTree(*backend_, "", WalkOptions{}, CancelToken(),
                       [&](const std::string&, const std::string&, const FileInfo& info) {
                         ++visits;
                         return info.type == FileType::kDir || visits < 10;
                       })
                  .ok());
  EXPECT_LT(visits, 30u);  // the first file of at most a few directories, then nothing
}

TEST_F(WalkTest, ACancelledWalkSaysSo) {
  CancelToken cancel;
  size_t visits = 0;
  const Status walked = walkTree(*backend_, "", WalkOptions{}, cancel,
                                 [&](const std::string&, const std::string&, const FileInfo&) {
                                   if (++visits == 20) cancel.cancel();
                                   return true;
                                 });
  EXPECT_EQ(walked.code(), Code::kCancelled);
  EXPECT_LT(visits, 200u);
}

TEST_F(WalkTest, WhatAVisitOrADetailThrowsReachesTheCaller) {
  // Either walker may be the one that meets it: it ends the walk, the caller gets it.
  size_t visits = 0;
  EXPECT_THROW(walkTree(*backend_, "", WalkOptions{}, CancelToken(),
                        [&](const std::string&, const std::string&, const FileInfo&) -> bool {
                          if (++visits == 100) throw std::runtime_error("visit");
                          return true;
                        }),
               std::runtime_error);
  WalkOptions options;
  size_t details = 0;
  std::mutex mu;
  options.detail = [&](const std::string&, FileType) {
    std::lock_guard lock(mu);
    if (++details == 100) throw std::runtime_error("detail");
    return false;
  };
  EXPECT_THROW(
      walkTree(*backend_, "", options, CancelToken(),
               [](const std::string&, const std::string&, const FileInfo&) { return true; }),
      std::runtime_error);
}

}  // namespace
}  // namespace byd
