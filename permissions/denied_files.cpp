#include "permissions/denied_files.h"

#include <spdlog/spdlog.h>

namespace byd::permissions {

void DeniedFiles::invalidate() {
  std::lock_guard lock(mu_);
  built_once_ = false;
}

void DeniedFiles::walk(const Backend& inner, const Guard& guard, const std::string& dir,
                       size_t& entries) {
  auto listed = inner.list(dir);
  if (!listed.ok()) return;  // unreadable here: nothing of it can be read through the tools
  for (const FileInfo& e : *listed) {
    if (++entries > max_entries_) {
      complete_ = false;
      return;
    }
    const std::string child = joinKey(dir, e.name);
    if (e.type == FileType::kDir) {
      walk(inner, guard, child, entries);
      if (entries > max_entries_) return;
    } else if (e.type == FileType::kFile && e.nlink > 1 && guard.hidesFromListings(child)) {
      denied_.insert({e.dev, e.ino});  // a secret with other names
    }
  }
}

Status DeniedFiles::check(const Backend& inner, const Guard& guard, const std::string& key,
                          const FileInfo& info) {
  if (info.type != FileType::kFile || info.nlink <= 1) return okStatus();
  std::lock_guard lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  if (!built_once_ || now - built_ >= ttl_) {
    denied_.clear();
    complete_ = true;
    size_t entries = 0;
    walk(inner, guard, "", entries);
    built_ = now;
    built_once_ = true;
    spdlog::debug("permission: {} files the rules deny have other names ({} entries walked)",
                  denied_.size(), entries);
  }
  if (!complete_) {
    return permissionDenied("read denied for " + displayTarget(key) +
                            ": it has other names (hard links), and the workspace is too large "
                            "(over " +
                            std::to_string(max_entries_) +
                            " entries) to show none of them is a file the rules deny");
  }
  if (denied_.count({info.dev, info.ino}) != 0) {
    return permissionDenied("read denied for " + displayTarget(key) +
                            ": it is another name (a hard link) of a file the rules deny");
  }
  return okStatus();
}

}  // namespace byd::permissions
