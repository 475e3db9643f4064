#pragma once
// The identities (device and inode) of the workspace's files that the read rules deny, so that
// a hard link to a secret (`ln .env notes.txt`, made by a command or present in a checkout) is
// judged as the file it reaches, not by its own name. Paths alone cannot see this: a hard link
// is the file itself under another name. Only files with more than one link are looked up; the
// index is a walk of the workspace, made when first needed and again once it is older than its
// time to live or the workspace changed through a tool. One per backend, shared by its calls;
// thread-safe.

#include <sys/types.h>

#include <chrono>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "backends/backend.h"
#include "common/result.h"
#include "permissions/guard.h"

namespace byd::permissions {

class DeniedFiles {
 public:
  // Past `max_entries` the walk stops, and every file with several links is refused: the
  // workspace is too large to prove it is not a secret's.
  explicit DeniedFiles(std::chrono::milliseconds ttl = std::chrono::seconds(1),
                       size_t max_entries = 200000)
      : ttl_(ttl), max_entries_(max_entries) {}

  // OK, or PermissionDenied when `info` (the file `key` reaches) is another name of a file the
  // read rules deny. `inner` is the backend without its guard.
  Status check(const Backend& inner, const Guard& guard, const std::string& key,
               const FileInfo& info);
  // Something was written or removed: the next check walks again.
  void invalidate();

 private:
  void walk(const Backend& inner, const Guard& guard, const std::string& dir, size_t& entries);

  const std::chrono::milliseconds ttl_;
  const size_t max_entries_;
  std::mutex mu_;
  std::set<std::pair<uint64_t, uint64_t>> denied_;  // (device, inode)
  bool complete_ = false;
  std::chrono::steady_clock::time_point built_{};
  bool built_once_ = false;
};

}  // namespace byd::permissions
