#pragma once
// A depth-first walk over a backend's tree, used by glob and grep. It never follows symlinks
// into directories (so no loops and no escapes), skips `.git` unless asked, and checks the
// cancel token between directories. Where the machine has a second core, a second thread
// lists directories beside the first once there are two to read (the kernel's directory
// reads and stats are most of a walk): `visit` and `descend` are still called one at a time,
// `detail` from either thread. Safe to run several walks at once.

#include <functional>
#include <string>

#include "backends/backend.h"
#include "common/cancel.h"

namespace byd {

struct WalkOptions {
  bool skip_git = true;
  // Return false to skip a directory (relative path below the start) and everything in it.
  std::function<bool(const std::string& rel_dir)> descend;
  // Which entries (not directories) the visit needs in full: size, times, mode. The others come
  // with their name and type alone, where the backend can tell types without reading the rest
  // (FileSystem::listTyped). Unset: all of every entry.
  std::function<bool(const std::string& rel, FileType type)> detail;
};

// Calls `visit(key, rel, info)` for every entry below `start_key` (not the start itself);
// `rel` is the entry's path relative to the start. `visit` returns false to stop the walk.
// Directories that cannot be listed are skipped. Returns Cancelled if the token fires.
Status walkTree(const Backend& backend, const std::string& start_key, const WalkOptions& options,
                const CancelToken& cancel,
                const std::function<bool(const std::string& key, const std::string& rel,
                                         const FileInfo& info)>& visit);

}  // namespace byd
