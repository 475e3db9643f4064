#include "backends/local/workspace_index.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "tests/test_util.h"

namespace byd {
namespace {

namespace fs = std::filesystem;

// Rules for the tests: names ending in ".secret" and directories named "private" (and all
// below them) are denied; "locked" (a file) and "frozen/" (a directory and what it holds) may
// not be written; under "ro/" writing asks, except "ro/open" which is allowed.
class TestRules : public FileRules {
 public:
  PathActions judge(std::string_view key) const override {
    ++calls;
    const std::string k(key);
    auto has_component = [&](std::string_view c) {
      const std::string s = "/" + k + "/";
      return s.find("/" + std::string(c) + "/") != std::string::npos;
    };
    PathActions a;
    if (k.ends_with(".secret") || has_component("private")) a.read = a.write = ViewAction::kDeny;
    if (k == "locked" || k.ends_with("/locked") || has_component("frozen")) {
      a.write = ViewAction::kDeny;
    }
    if (k == "ro" || k.starts_with("ro/")) {
      a.write = k == "ro/open" || k.starts_with("ro/open/") ? ViewAction::kAllow : ViewAction::kAsk;
    }
    return a;
  }
  mutable size_t calls = 0;
};

void touch(const fs::path& p, const std::string& text = "x") {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

bool has(const FileMasks& masks, FileMask::Kind kind, const fs::path& path) {
  return std::find(masks.begin(), masks.end(), FileMask{kind, path.string()}) != masks.end();
}

class WorkspaceIndexTest : public ::testing::TestWithParam<bool> {
 protected:
  WorkspaceIndexTest() : root(fs::path(dir.str())), index({{"", dir.str()}}, GetParam()) {}
  FileView view(bool approved = false) { return {rules, approved}; }
  testing::TempDir dir;
  fs::path root;
  std::shared_ptr<TestRules> rules = std::make_shared<TestRules>();
  WorkspaceIndex index;
};

TEST_P(WorkspaceIndexTest, HidesWhatTheRulesDenyAndNothingElse) {
  touch(root / "a.txt");
  touch(root / "src" / "deep" / "key.secret");
  touch(root / "private" / "notes.txt");
  touch(root / "src" / "main.c");
  const auto masks = index.masks(view());
  EXPECT_TRUE(has(*masks, FileMask::kHideFile, root / "src" / "deep" / "key.secret"));
  EXPECT_TRUE(has(*masks, FileMask::kHideDir, root / "private"));
  EXPECT_EQ(masks->size(), 2u);
}

TEST_P(WorkspaceIndexTest, WhatMayNotBeWrittenIsReadOnlyAndAnApprovalOpensWhatAsks) {
  touch(root / "locked");
  touch(root / "frozen" / "a");
  touch(root / "ro" / "b");
  touch(root / "ro" / "open" / "c");
  const auto plain = index.masks(view(false));
  EXPECT_TRUE(has(*plain, FileMask::kReadOnly, root / "locked"));
  EXPECT_TRUE(has(*plain, FileMask::kReadOnly, root / "frozen"));
  EXPECT_TRUE(has(*plain, FileMask::kReadOnly, root / "ro"));
  EXPECT_TRUE(has(*plain, FileMask::kWritable, root / "ro" / "open"));
  // A directory's mask comes before what lies below it.
  const auto at = [&](const fs::path& p) {
    return std::find_if(plain->begin(), plain->end(),
                        [&](const FileMask& m) { return m.path == p.string(); }) -
           plain->begin();
  };
  EXPECT_LT(at(root / "ro"), at(root / "ro" / "open"));
  const auto approved = index.masks(view(true));
  EXPECT_FALSE(has(*approved, FileMask::kReadOnly, root / "ro"));
  EXPECT_FALSE(has(*approved, FileMask::kWritable, root / "ro" / "open"));
  // What a rule denies stays closed after an approval.
  EXPECT_TRUE(has(*approved, FileMask::kReadOnly, root / "locked"));
  EXPECT_TRUE(has(*approved, FileMask::kReadOnly, root / "frozen"));
}

TEST_P(WorkspaceIndexTest, ANewSecretIsMaskedAndOnlyWhatChangedIsReadAgain) {
  for (int i = 0; i < 20; ++i) touch(root / ("d" + std::to_string(i)) / "sub" / "f.txt");
  if (!GetParam()) usleep(60'000);  // past the polled clock tick
  const auto first = index.masks(view());
  EXPECT_TRUE(first->empty());
  const auto reads = index.stats().dir_reads;
  EXPECT_EQ(reads, 41u);  // the root, 20 directories and their 20 subdirectories
  // Nothing changed: the same answer, nothing read.
  EXPECT_EQ(index.masks(view()), first);
  EXPECT_EQ(index.stats().dir_reads, reads);
  if (!GetParam()) usleep(60'000);  // past the polled clock tick
  touch(root / "d7" / "sub" / "new.secret");
  const auto second = index.masks(view());
  EXPECT_TRUE(has(*second, FileMask::kHideFile, root / "d7" / "sub" / "new.secret"));
  if (GetParam()) {
    EXPECT_EQ(index.stats().dir_reads, reads + 1);
  }
}

TEST_P(WorkspaceIndexTest, RenamedAndRemovedDirectoriesAreFollowed) {
  touch(root / "a" / "b" / "k.secret");
  EXPECT_TRUE(has(*index.masks(view()), FileMask::kHideFile, root / "a" / "b" / "k.secret"));
  if (!GetParam()) usleep(60'000);
  fs::rename(root / "a", root / "z");
  auto masks = index.masks(view());
  EXPECT_TRUE(has(*masks, FileMask::kHideFile, root / "z" / "b" / "k.secret"));
  EXPECT_FALSE(has(*masks, FileMask::kHideFile, root / "a" / "b" / "k.secret"));
  // A directory moved in from elsewhere is read whole.
  touch(root / ".." / (root.filename().string() + "-out") / "x.secret");
  const fs::path outside = root / ".." / (root.filename().string() + "-out");
  fs::rename(outside, root / "in");
  masks = index.masks(view());
  EXPECT_TRUE(has(*masks, FileMask::kHideFile, root / "in" / "x.secret"));
  fs::remove_all(root / "z");
  masks = index.masks(view());
  EXPECT_EQ(masks->size(), 1u);
  // The watch of the moved directory went with it: a change inside is still seen.
  touch(root / "in" / "y.secret");
  masks = index.masks(view());
  EXPECT_TRUE(has(*masks, FileMask::kHideFile, root / "in" / "y.secret"));
}

TEST_P(WorkspaceIndexTest, ASymlinkIsNotFollowedAndNewRulesJudgeAgain) {
  touch(root / "real" / "k.secret");
  fs::create_directory_symlink(root / "real", root / "link");
  auto masks = index.masks(view());
  EXPECT_TRUE(has(*masks, FileMask::kHideFile, root / "real" / "k.secret"));
  EXPECT_EQ(masks->size(), 1u);  // nothing below the link: it reaches the masked file
  auto other = std::make_shared<TestRules>();
  const auto before = index.stats().dir_reads;
  masks = index.masks({other, false});
  EXPECT_EQ(masks->size(), 1u);
  EXPECT_GT(other->calls, 0u);
  EXPECT_GT(index.stats().dir_reads, before);
}

TEST_P(WorkspaceIndexTest, AnotherNameOfASecretIsHiddenToo) {
  touch(root / "k.secret", "s");
  touch(root / "plain.txt");
  fs::create_hard_link(root / "plain.txt", root / "plain2.txt");  // harmless links stay
  fs::create_directories(root / "deep" / "er");
  fs::create_hard_link(root / "k.secret", root / "deep" / "er" / "notes.txt");
  auto masks = index.masks(view());
  EXPECT_TRUE(has(*masks, FileMask::kHideFile, root / "deep" / "er" / "notes.txt"));
  EXPECT_EQ(masks->size(), 2u);
  // A name made later, outside the sandbox, in a directory the index has already read.
  if (!GetParam()) usleep(60'000);
  fs::create_hard_link(root / "k.secret", root / "late.txt");
  masks = index.masks(view());
  EXPECT_TRUE(has(*masks, FileMask::kHideFile, root / "late.txt"));
  EXPECT_EQ(masks->size(), 3u);
}

TEST_P(WorkspaceIndexTest, NoRulesNoMasks) {
  touch(root / "k.secret");
  EXPECT_TRUE(index.masks(FileView{})->empty());
}

INSTANTIATE_TEST_SUITE_P(Follow, WorkspaceIndexTest, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "Inotify" : "Polling"; });

}  // namespace
}  // namespace byd
