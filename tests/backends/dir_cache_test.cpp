#include "backends/local/dir_cache.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "backends/local/local_backend.h"
#include "tests/test_util.h"

namespace byd {
namespace {

namespace fs = std::filesystem;

// What a listing shows of each entry: its type, size, time and mode.
struct Seen {
  FileType type;
  uint64_t size;
  int64_t mtime_ns;
  uint32_t mode;
  bool operator==(const Seen&) const = default;
};
using Listing = std::map<std::string, Seen>;

class DirCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(tmp_.path() / "a/b");
    tmp_.write("a/b/one.txt", "1");
    tmp_.write("a/top.txt", "top");
    open();
  }
  void open() {
    auto local = LocalBackend::open(tmp_.str(), {});
    ASSERT_TRUE(local.ok()) << local.status().toString();
    backend_ = std::move(*local);
    ASSERT_NE(backend_->dirCache(), nullptr) << "this file system is not cached";
  }
  // The listing the backend gives, cached or not, checked against the disk's.
  Listing list(const std::string& rel) {
    Listing got;
    std::optional<Status> s = backend_->listTypedDirect(rel, nullptr, [&](const FileInfo& e) {
      got[e.name] = Seen{e.type, e.type == FileType::kDir ? 0 : e.size, e.mtime_ns, e.mode};
      return true;
    });
    EXPECT_TRUE(s.has_value() && s->ok()) << rel << ": " << (s ? s->toString() : "not listed");
    EXPECT_EQ(got, onDisk(rel)) << rel;
    return got;
  }
  Listing onDisk(const std::string& rel) {
    Listing want;
    for (const auto& e : fs::directory_iterator(tmp_.path() / rel)) {
      struct stat st;
      EXPECT_EQ(::lstat(e.path().c_str(), &st), 0);
      const FileType type = S_ISDIR(st.st_mode)   ? FileType::kDir
                            : S_ISREG(st.st_mode) ? FileType::kFile
                            : S_ISLNK(st.st_mode) ? FileType::kSymlink
                                                  : FileType::kOther;
      want[e.path().filename().string()] =
          Seen{type, type == FileType::kDir ? 0 : static_cast<uint64_t>(st.st_size),
               st.st_mtim.tv_sec * 1'000'000'000LL + st.st_mtim.tv_nsec, st.st_mode & 07777};
    }
    return want;
  }
  uint64_t hits() const { return backend_->dirCache()->stats().hits; }
  fs::path at(const std::string& rel) const { return tmp_.path() / rel; }

  testing::TempDir tmp_;
  std::unique_ptr<LocalBackend> backend_;
};

TEST_F(DirCacheTest, ASecondListingComesFromMemory) {
  list("a/b");
  EXPECT_EQ(hits(), 0u);
  list("a/b");
  list("a/b");
  EXPECT_EQ(hits(), 2u);
  EXPECT_EQ(backend_->dirCache()->stats().stored, 1u);
  EXPECT_EQ(backend_->dirCache()->stats().dirs, 3u);  // "", "a" and "a/b" watched
}

TEST_F(DirCacheTest, EveryChangeToAnEntryIsSeenAtTheNextListing) {
  struct Change {
    const char* what;
    std::function<void()> make;
  };
  const Change changes[] = {
      {"a file made", [&] { tmp_.write("a/b/two.txt", "22"); }},
      {"a file written", [&] { std::ofstream(at("a/b/one.txt"), std::ios::app) << "more"; }},
      {"a file truncated", [&] { fs::resize_file(at("a/b/one.txt"), 1); }},
      {"its time set",
       [&] {
         struct timespec times[2] = {{1000, 0}, {1000, 0}};
         ASSERT_EQ(::utimensat(AT_FDCWD, at("a/b/one.txt").c_str(), times, 0), 0);
       }},
      {"its mode changed",
       [&] { fs::permissions(at("a/b/one.txt"), fs::perms::owner_read | fs::perms::owner_write); }},
      {"a file renamed", [&] { fs::rename(at("a/b/two.txt"), at("a/b/three.txt")); }},
      {"a file removed", [&] { fs::remove(at("a/b/three.txt")); }},
      {"a symlink made", [&] { fs::create_symlink("one.txt", at("a/b/ln")); }},
      {"a directory made", [&] { fs::create_directory(at("a/b/sub")); }},
      {"a file written by another process",
       [&] { ASSERT_EQ(std::system(("echo hi >> " + at("a/b/one.txt").string()).c_str()), 0); }},
  };
  list("a/b");
  for (const Change& change : changes) {
    SCOPED_TRACE(change.what);
    list("a/b");  // held
    const uint64_t before = hits();
    change.make();
    list("a/b");  // checked against the disk by list()
    EXPECT_EQ(hits(), before) << "served from memory after " << change.what;
  }
}

TEST_F(DirCacheTest, ARenameAboveADirectoryDropsWhatWasHeldUnderItsName) {
  // Listed directly: its parents are watched for it, though never listed.
  const Listing before = list("a/b");
  list("a/b");
  fs::rename(at("a"), at("z"));
  fs::create_directories(at("a/b"));
  tmp_.write("a/b/other.txt", "other");
  const Listing after = list("a/b");
  EXPECT_EQ(after.count("other.txt"), 1u);
  EXPECT_EQ(after.count("one.txt"), 0u);
  EXPECT_EQ(list("z/b"), before);
  // And a directory replaced by a symlink is not listed directly at all.
  list("a");
  fs::remove_all(at("a"));
  fs::create_directory_symlink("z", at("a"));
  EXPECT_FALSE(
      backend_->listTypedDirect("a/b", nullptr, [](const FileInfo&) { return true; }).has_value());
}

// A subdirectory's own entry (its time, its link count) changes with what is made in it, an
// event only a watch on it hears: the listing above is read again.
TEST_F(DirCacheTest, WhatChangesInASubdirectoryChangesItsEntryAbove) {
  list("a");  // "a/b" is an entry here, never listed itself
  list("a");
  struct timespec old_times[2] = {{1000, 0}, {1000, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, at("a/b").c_str(), old_times, 0), 0);
  EXPECT_EQ(list("a").at("b").mtime_ns, 1000'000'000'000LL);  // checked against the disk
  const uint64_t before = hits();
  tmp_.write("a/b/new.txt", "n");  // b's time moves
  list("a");
  fs::create_directory(at("a/b/sub"));  // and its link count
  list("a");
  EXPECT_EQ(hits(), before);
}

// A file system mounted below the root may change without telling: it is read every time.
TEST_F(DirCacheTest, AFileSystemMountedBelowTheRootIsNotKept) {
  fs::create_directory(at("a/mnt"));
  if (::mount("tmpfs", at("a/mnt").c_str(), "tmpfs", 0, "size=1m") != 0) {
    GTEST_SKIP() << "cannot mount here: " << strerror(errno);
  }
  tmp_.write("a/mnt/x.txt", "x");
  list("a/mnt");
  const uint64_t before = hits();
  list("a/mnt");
  EXPECT_EQ(hits(), before);
  EXPECT_EQ(backend_->dirCache()->stats().stored, 0u);
  ASSERT_EQ(::umount2(at("a/mnt").c_str(), MNT_DETACH), 0);
}

TEST_F(DirCacheTest, ADirectoryRemovedAndMadeAgainIsReadAgain) {
  list("a/b");
  fs::remove_all(at("a/b"));
  fs::create_directory(at("a/b"));
  tmp_.write("a/b/new.txt", "n");
  EXPECT_EQ(list("a/b").count("new.txt"), 1u);
}

TEST_F(DirCacheTest, PastItsLimitsNothingMoreIsHeldAndListingsStayRight) {
  DirCache cache({.max_dirs = 2, .max_entries = 100});
  const int root = ::open(tmp_.str().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(root, 0);
  auto open_dir = [&](const std::string& rel) {
    return ::openat(root, rel.empty() ? "." : rel.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  };
  const int ab = open_dir("a/b");
  EXPECT_FALSE(cache.watch("a/b", ab, open_dir).has_value()) << "three directories to watch";
  const int a = open_dir("a");
  auto ticket = cache.watch("a", a, open_dir);
  ASSERT_TRUE(ticket.has_value());
  auto big = std::make_shared<std::vector<FileInfo>>(101);
  cache.store("a", *ticket, big, open_dir);
  EXPECT_EQ(cache.find("a"), nullptr) << "over max_entries";
  auto small = std::make_shared<std::vector<FileInfo>>(2);
  cache.store("a", *ticket, small, open_dir);
  EXPECT_EQ(cache.find("a"), small);
  tmp_.write("a/late.txt", "x");
  EXPECT_EQ(cache.find("a"), nullptr) << "held after a file was made in it";
  // A change between watch() and store() spoils what was read before it.
  auto again = cache.watch("a", a, open_dir);
  ASSERT_TRUE(again.has_value());
  tmp_.write("a/later.txt", "x");
  cache.store("a", *again, small, open_dir);
  EXPECT_EQ(cache.find("a"), nullptr);
  auto third = cache.watch("a", a, open_dir);
  ASSERT_TRUE(third.has_value());
  cache.store("a", *third, small, open_dir);
  EXPECT_EQ(cache.find("a"), small);
  ::close(ab);
  ::close(a);
  ::close(root);
}

TEST_F(DirCacheTest, LostEventsDropEverything) {
  long queued = 16384;
  std::ifstream("/proc/sys/fs/inotify/max_queued_events") >> queued;
  list("a/b");
  list("a");
  ASSERT_EQ(backend_->dirCache()->stats().stored, 2u);
  // Each file made is at least two events (made, closed after writing): enough to overflow.
  fs::create_directory(at("a/b/many"));
  list("a/b");
  list("a/b/many");
  for (long i = 0; i < queued / 2 + 64; ++i) {
    std::ofstream(at("a/b/many/f" + std::to_string(i))) << "x";
  }
  const uint64_t before = hits();
  list("a");  // unchanged, but events were lost: read again
  EXPECT_EQ(hits(), before) << "held across lost events";
  list("a/b");
  list("a/b/many");
  EXPECT_EQ(backend_->dirCache()->stats().entries,
            list("a").size() + list("a/b").size() + list("a/b/many").size());
}

TEST_F(DirCacheTest, OnlyFileSystemsThatReportEveryChangeAreCached) {
  const int proc = ::open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(proc, 0);
  EXPECT_EQ(DirCache::forRoot(proc, {}), nullptr);
  ::close(proc);
  backend_->setDirCache(false);
  EXPECT_EQ(backend_->dirCache(), nullptr);
  list("a/b");  // still listed, from the disk
}

}  // namespace
}  // namespace byd
