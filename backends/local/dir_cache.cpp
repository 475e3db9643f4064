#include "backends/local/dir_cache.h"

#include <errno.h>
#include <linux/magic.h>
#include <stdio.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <string_view>

#include "backends/local/local_backend.h"

namespace byd {
namespace {

// What changes a listing: an entry made, removed or renamed, written to, or given other
// metadata; and the directory itself removed or renamed.
constexpr uint32_t kWatched = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_MODIFY |
                              IN_ATTRIB | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF |
                              IN_ONLYDIR;

constexpr long kF2fsMagic = 0xF2F52010;

// inotify instances are few (128 per user by default) and shared with the workspace index and
// whatever else the server's user runs: the caches of many sessions take a quarter at most.
constexpr int kMaxInstances = 32;
std::atomic<int> live_instances{0};

// Watches too are the user's, shared with everything else it runs (8,192 by default before
// Linux 5.11): these caches together take an eighth at most.
std::atomic<long> live_watches{0};
long watchBudget() {
  static const long budget = [] {
    long max = 8192;
    if (FILE* f = ::fopen("/proc/sys/fs/inotify/max_user_watches", "re")) {
      if (::fscanf(f, "%ld", &max) != 1) max = 8192;
      ::fclose(f);
    }
    return std::max(64L, max / 8);
  }();
  return budget;
}

bool reportsEveryChange(long type) {
  switch (type) {
    case EXT4_SUPER_MAGIC:  // also ext2 and ext3
    case XFS_SUPER_MAGIC:
    case BTRFS_SUPER_MAGIC:
    case TMPFS_MAGIC:
    case kF2fsMagic:
      return true;
    default:
      return false;
  }
}

std::string childOf(const std::string& rel, std::string_view name) {
  return rel.empty() ? std::string(name) : rel + "/" + std::string(name);
}

bool sameFile(int a, int b) {
  struct stat sa, sb;
  return ::fstat(a, &sa) == 0 && ::fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

}  // namespace

std::unique_ptr<DirCache> DirCache::forRoot(int root_fd, Limits limits) {
  struct statfs fs;
  if (::fstatfs(root_fd, &fs) != 0 || !reportsEveryChange(static_cast<long>(fs.f_type))) {
    return nullptr;
  }
  struct stat st;
  if (::fstat(root_fd, &st) != 0) return nullptr;
  return std::make_unique<DirCache>(limits, st.st_dev);
}

DirCache::DirCache(Limits limits, dev_t dev) : limits_(limits), dev_(dev) {}
DirCache::~DirCache() { closeInotify(); }

bool DirCache::ensureInotify() {
  if (inotify_.valid()) return true;
  if (inotify_failed_) return false;
  if (live_instances.fetch_add(1) >= kMaxInstances) {
    live_instances.fetch_sub(1);
    return false;  // tried again at the next miss, when another cache may have gone
  }
  inotify_ = UniqueFd(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  if (!inotify_.valid()) {
    live_instances.fetch_sub(1);
    inotify_failed_ = true;  // none to be had: this cache stays empty
  }
  return inotify_.valid();
}

void DirCache::closeInotify() {
  if (!inotify_.valid()) return;
  inotify_.reset();  // its watches go with it
  live_instances.fetch_sub(1);
  live_watches.fetch_sub(static_cast<long>(watches_));
  watches_ = 0;
}

DirCache::Listing DirCache::find(const std::string& rel) {
  std::lock_guard lock(mu_);
  if (!inotify_.valid()) return nullptr;
  drain();
  auto it = dirs_.find(rel);
  if (it == dirs_.end() || !it->second.listing) {
    ++stats_.misses;
    return nullptr;
  }
  ++stats_.hits;
  return it->second.listing;
}

std::optional<uint64_t> DirCache::watch(const std::string& rel, int dir_fd,
                                        const std::function<int(const std::string&)>& open_dir) {
  std::lock_guard lock(mu_);
  if (!ensureInotify()) return std::nullopt;
  drain();
  // The directories above first, from the root down: a listing is kept only below watches.
  std::vector<std::string> above;
  if (!rel.empty()) {
    above.emplace_back();
    for (size_t slash = rel.find('/'); slash != std::string::npos;
         slash = rel.find('/', slash + 1)) {
      above.push_back(rel.substr(0, slash));
    }
  }
  for (const std::string& dir : above) {
    if (dirs_.count(dir) != 0) continue;
    const UniqueFd fd(open_dir(dir));
    if (!fd.valid() || watchOne(dir, fd.get()) == nullptr) return std::nullopt;
  }
  Dir* self = nullptr;
  if (auto it = dirs_.find(rel); it != dirs_.end()) {
    self = &it->second;
  } else {
    self = watchOne(rel, dir_fd);
    if (self == nullptr) return std::nullopt;
  }
  // `dir_fd` was opened before the watches above were: its name must still lead to it. From
  // here on, a rename on its path is an event.
  const UniqueFd now(open_dir(rel));
  if (!now.valid() || !sameFile(now.get(), dir_fd)) {
    dropTree(rel);
    return std::nullopt;
  }
  return self->generation;
}

DirCache::Dir* DirCache::watchOne(const std::string& rel, int fd) {
  if (dirs_.size() >= limits_.max_dirs || live_watches.load() >= watchBudget()) return nullptr;
  if (dev_ != 0) {
    struct stat st;
    if (::fstat(fd, &st) != 0 || st.st_dev != dev_) return nullptr;  // another file system
  }
  // By the descriptor, through its link in /proc: no name to race with.
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  const int wd = ::inotify_add_watch(inotify_.get(), link.c_str(), kWatched);
  if (wd < 0) return nullptr;  // out of watches, or no /proc
  if (by_wd_.count(wd) == 0) {
    ++watches_;
    live_watches.fetch_add(1);
  }
  Dir& dir = dirs_[rel];
  dir.wd = wd;
  dir.generation = next_generation_++;
  by_wd_[wd].push_back(rel);
  return &dir;
}

void DirCache::store(const std::string& rel, uint64_t ticket,
                     std::shared_ptr<std::vector<FileInfo>> entries,
                     const std::function<int(const std::string&)>& open_dir) {
  std::lock_guard lock(mu_);
  if (!inotify_.valid() || !entries) return;
  drain();
  auto held = [&] {
    auto it = dirs_.find(rel);
    return it != dirs_.end() && it->second.generation == ticket && !it->second.listing;
  };
  if (!held() || entries_ + entries->size() > limits_.max_entries) return;
  for (FileInfo& entry : *entries) {
    if (entry.type != FileType::kDir) continue;
    const std::string child = childOf(rel, entry.name);
    if (dirs_.count(child) != 0) continue;  // watched: a change since its stat is an event
    const UniqueFd fd(open_dir(child));
    if (!fd.valid() || watchOne(child, fd.get()) == nullptr) return;
    // Watched from now on; what changed in it before is read here.
    struct stat st;
    if (::fstat(fd.get(), &st) != 0 || !S_ISDIR(st.st_mode)) return;
    entry = statInfo(std::move(entry.name), st);
  }
  if (!held()) return;  // a watch above could not be kept
  entries_ += entries->size();
  dirs_.find(rel)->second.listing = std::move(entries);
  ++stats_.stored;
}

void DirCache::drain() {
  alignas(struct inotify_event) char buf[16 * 1024];
  for (;;) {
    const ssize_t got = ::read(inotify_.get(), buf, sizeof buf);
    if (got <= 0) {
      if (got < 0 && errno == EINTR) continue;
      return;  // EAGAIN: all read
    }
    for (ssize_t pos = 0; pos < got;) {
      const auto* ev = reinterpret_cast<const struct inotify_event*>(buf + pos);
      pos += static_cast<ssize_t>(sizeof(struct inotify_event) + ev->len);
      if (ev->mask & IN_Q_OVERFLOW) {
        dropAll();  // events were lost: nothing held can be trusted, renames included
        return;
      }
      auto found = by_wd_.find(ev->wd);
      if (found == by_wd_.end()) continue;  // a watch already given up
      const std::vector<std::string> rels = found->second;
      for (const std::string& rel : rels) {
        if (ev->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT)) {
          dropTree(rel);
          continue;
        }
        if (auto it = dirs_.find(rel); it != dirs_.end()) dropListing(it->second);
        // An entry made, removed or renamed here changes this directory's own entry (its
        // time, its link count) in the listing above.
        if (!rel.empty() &&
            (ev->mask & (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO)) != 0) {
          const size_t slash = rel.rfind('/');
          const std::string parent = slash == std::string::npos ? "" : rel.substr(0, slash);
          if (auto up = dirs_.find(parent); up != dirs_.end()) dropListing(up->second);
        }
        // A subdirectory made, removed or renamed: what was watched under its name is not
        // what the name leads to now.
        if ((ev->mask & IN_ISDIR) && ev->len > 0) {
          dropTree(childOf(rel, std::string_view(ev->name)));
        }
      }
      if (!inotify_.valid()) return;  // the root went: all was dropped
    }
  }
}

void DirCache::dropListing(Dir& dir) {
  // A listing being read now (a ticket given, not yet stored) is spoilt too.
  dir.generation = next_generation_++;
  if (!dir.listing) return;
  entries_ -= dir.listing->size();
  dir.listing.reset();
  ++stats_.dropped;
}

void DirCache::dropTree(const std::string& rel) {
  auto forget = [&](std::map<std::string, Dir>::iterator it) {
    dropListing(it->second);
    auto owners = by_wd_.find(it->second.wd);
    if (owners != by_wd_.end()) {
      std::erase(owners->second, it->first);
      if (owners->second.empty()) {
        ::inotify_rm_watch(inotify_.get(), it->second.wd);
        by_wd_.erase(owners);
        --watches_;
        live_watches.fetch_sub(1);
      }
    }
    return dirs_.erase(it);
  };
  if (rel.empty()) {
    dropAll();
    return;
  }
  if (auto it = dirs_.find(rel); it != dirs_.end()) forget(it);
  const std::string prefix = rel + "/";
  for (auto it = dirs_.lower_bound(prefix);
       it != dirs_.end() && std::string_view(it->first).starts_with(prefix);) {
    it = forget(it);
  }
}

void DirCache::dropAll() {
  for (auto& [rel, dir] : dirs_) dropListing(dir);
  dirs_.clear();
  by_wd_.clear();
  entries_ = 0;
  closeInotify();  // its watches go with it; the next watch() starts afresh
}

DirCache::Stats DirCache::stats() const {
  std::lock_guard lock(mu_);
  Stats s = stats_;
  s.dirs = dirs_.size();
  s.entries = entries_;
  return s;
}

}  // namespace byd
