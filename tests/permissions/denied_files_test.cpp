#include "permissions/denied_files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "backends/local/local_backend.h"
#include "permissions/guarded_backend.h"
#include "permissions/presets.h"
#include "tests/test_util.h"

namespace byd::permissions {
namespace {

class DeniedFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto local = LocalBackend::open(tmp_.str(), {});
    ASSERT_TRUE(local.ok()) << local.status().message();
    backend_ = std::move(*local);
  }
  void write(const std::string& name, const std::string& text) {
    std::ofstream(tmp_.path() / name) << text;
  }
  void link(const std::string& from, const std::string& to) {
    ASSERT_EQ(::link((tmp_.path() / from).c_str(), (tmp_.path() / to).c_str()), 0);
  }
  // A read through the guard, as read_file makes it.
  Status read(const std::string& path, DeniedFiles& files) {
    GuardedBackend guarded(*backend_, guard_, Operation::kRead, nullptr, &files);
    auto key = guarded.normalize(path);
    if (!key.ok()) return key.status();
    return guarded.read(*key, 0, 1 << 20).status();
  }

  byd::testing::TempDir tmp_;
  std::unique_ptr<LocalBackend> backend_;
  Guard guard_{Ruleset::fromJson(*presetJson("permissive")).value(), AskFallback::kDeny};
};

TEST_F(DeniedFilesTest, AHardLinkToASecretIsJudgedAsTheSecret) {
  write(".env", "TOKEN=x\n");
  link(".env", "notes.txt");
  write("a.txt", "plain\n");
  link("a.txt", "b.txt");
  DeniedFiles files;
  const Status s = read("notes.txt", files);
  EXPECT_EQ(s.code(), Code::kPermissionDenied);
  EXPECT_EQ(s.message(),
            "read denied for 'notes.txt': it is another name (a hard link) of a file the rules "
            "deny");
  EXPECT_TRUE(read("b.txt", files).ok());
  // Without the index, only the name is judged: the test shows what the index adds.
  GuardedBackend unindexed(*backend_, guard_, Operation::kRead, nullptr, nullptr);
  EXPECT_TRUE(unindexed.read("notes.txt", 0, 100).ok());
}

// Listings go the short way where no symlink lies on the path; a directory reached through
// one is still judged by where it leads, and what the rules deny is still left out.
TEST_F(DeniedFilesTest, AListingThroughALinkIsJudgedByWhereItLeads) {
  std::filesystem::create_directories(tmp_.path() / "d/.ssh");
  write("d/.ssh/id_ed25519", "KEY\n");
  write("d/plain.txt", "x\n");
  std::filesystem::create_directory_symlink("d/.ssh", tmp_.path() / "keys");
  std::filesystem::create_directory_symlink("d", tmp_.path() / "dl");
  DeniedFiles files;
  GuardedBackend lister(*backend_, guard_, Operation::kLs, nullptr, &files);
  std::vector<std::string> seen;
  auto keep = [&](const FileInfo& e) { return seen.push_back(e.name), true; };
  const Status through = lister.listEach("keys", keep);
  EXPECT_EQ(through.code(), Code::kPermissionDenied);
  EXPECT_EQ(through.message(),
            "read denied for 'keys': it leads to 'd/.ssh', which the rules deny");
  EXPECT_EQ(lister.listEach("d/.ssh", keep).code(), Code::kPermissionDenied);
  EXPECT_TRUE(seen.empty());
  ASSERT_TRUE(lister.listEach("d", keep).ok());
  EXPECT_EQ(seen, std::vector<std::string>{"plain.txt"});
  EXPECT_EQ(lister.hiddenCount(), 1u);
  seen.clear();
  ASSERT_TRUE(lister.listEach("dl", keep).ok());  // a link to a directory the rules allow
  EXPECT_EQ(seen, std::vector<std::string>{"plain.txt"});
}

TEST_F(DeniedFilesTest, ALinkMadeAfterTheWalkIsFoundOnceTheIndexIsInvalidated) {
  write("a.txt", "plain\n");
  link("a.txt", "b.txt");
  DeniedFiles files(std::chrono::hours(1));
  EXPECT_TRUE(read("b.txt", files).ok());  // walked now: no secret has other names
  write("id_rsa", "KEY\n");
  link("id_rsa", "later.txt");
  files.invalidate();  // as a write or a command does
  EXPECT_EQ(read("later.txt", files).code(), Code::kPermissionDenied);
}

TEST_F(DeniedFilesTest, TooLargeAWorkspaceRefusesFilesWithOtherNames) {
  for (int i = 0; i < 10; ++i) write("f" + std::to_string(i), "x");
  link("f0", "g0");
  DeniedFiles files(std::chrono::seconds(1), /*max_entries=*/5);
  const Status s = read("g0", files);
  EXPECT_EQ(s.code(), Code::kPermissionDenied);
  EXPECT_NE(s.message().find("the workspace is too large (over 5 entries)"), std::string::npos)
      << s.message();
  EXPECT_TRUE(read("f1", files).ok());  // one name only: nothing to prove
}

}  // namespace
}  // namespace byd::permissions
