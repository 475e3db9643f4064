#pragma once
// The entries of directories already listed, each with what stat says of it, kept while
// inotify reports no change: a walk that lists the same tree again (a glob, a grep, an ls)
// reads it from memory instead of opening, reading and closing every directory and stat'ing
// every file again.
//
// A listing is kept only while the directory and each directory above it (up to the
// workspace root) is watched, so a rename or removal anywhere on its path drops it. Any change
// to an entry drops the listing of its directory: one created, deleted, renamed, written to
// (IN_MODIFY), or whose metadata changed (IN_ATTRIB); events come from the kernel as the
// change is made, and are read before every lookup, so what a call finished before the lookup
// is seen. What inotify does not report is not seen: a write through a memory mapping (its
// time changes at writeback, without an event), a write through a hard link in another
// directory, a file system mounted over a directory once its listing is held. Only local disk file
// systems are cached (ext2/3/4, XFS, Btrfs, tmpfs, F2FS): network and FUSE file systems change
// without telling. Thread-safe.

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/backend.h"
#include "common/unique_fd.h"

namespace byd {

class DirCache {
 public:
  struct Limits {
    size_t max_dirs = 4096;        // directories watched, listed or not
    size_t max_entries = 100'000;  // entries held, over all listings
  };
  // nullptr when `root_fd`'s file system may change without inotify telling (see above).
  // Directories on another device (a file system mounted below the root) are not kept.
  static std::unique_ptr<DirCache> forRoot(int root_fd, Limits limits);
  // `dev`: the device whose directories are kept (0: any).
  explicit DirCache(Limits limits, dev_t dev = 0);
  ~DirCache();
  DirCache(const DirCache&) = delete;
  DirCache& operator=(const DirCache&) = delete;

  using Listing = std::shared_ptr<const std::vector<FileInfo>>;
  // The listing of the directory at `rel` ("" for the root, "a/b" beneath it), if it is held
  // and nothing changed since it was read.
  Listing find(const std::string& rel);

  // Watches `rel`, open at `dir_fd`, and the directories above it, opened by `open_dir` (which
  // returns an O_PATH descriptor of a directory reached without a symlink, or -1). Returns a
  // ticket to store() what is read after this call, or nullopt when it cannot be kept (no
  // inotify, a limit reached).
  std::optional<uint64_t> watch(const std::string& rel, int dir_fd,
                                const std::function<int(const std::string&)>& open_dir);
  // Keeps the listing of `rel` read after watch() gave `ticket`, unless it changed since.
  // Each subdirectory in it is watched too (opened by `open_dir`), since what changes inside
  // one changes its own entry here (its time, its link count), and that entry is refreshed
  // once watched; nothing is kept when one cannot be.
  void store(const std::string& rel, uint64_t ticket,
             std::shared_ptr<std::vector<FileInfo>> entries,
             const std::function<int(const std::string&)>& open_dir);

  struct Stats {
    uint64_t hits = 0, misses = 0, stored = 0, dropped = 0;
    size_t dirs = 0, entries = 0;
  };
  Stats stats() const;

 private:
  struct Dir {
    int wd = -1;
    uint64_t generation = 0;  // moves whenever its listing is dropped
    Listing listing;
  };
  bool ensureInotify();
  void closeInotify();
  void drain();
  Dir* watchOne(const std::string& rel, int fd);
  void dropListing(Dir& dir);
  void dropTree(const std::string& rel);  // `rel` and all below it, watches included
  void dropAll();

  const Limits limits_;
  const dev_t dev_;
  mutable std::mutex mu_;
  UniqueFd inotify_;
  bool inotify_failed_ = false;
  std::map<std::string, Dir> dirs_;  // ordered, so a subtree is a range
  std::unordered_map<int, std::vector<std::string>> by_wd_;
  uint64_t next_generation_ = 1;
  size_t entries_ = 0;
  size_t watches_ = 0;  // of the process-wide budget (see dir_cache.cpp)
  Stats stats_;
};

}  // namespace byd
