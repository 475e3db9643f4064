#pragma once
// How the Local backend writes a file so that a crash leaves it entirely old or entirely new:
// the data goes to a temporary file beside the target (O_EXCL, a random name), which is
// synced and renamed over it; an append copies the old contents first (holes stay holes); the
// replacement keeps the old file's owner and mode. The target's directory is found beneath the
// workspace by the path resolver, creating missing directories one at a time, and a final
// symlink is followed by hand under the resolver's rules (relative, beneath the root).

#include <sys/stat.h>

#include <string>
#include <string_view>

#include "backends/backend.h"
#include "backends/local/path_resolver.h"
#include "common/result.h"
#include "common/unique_fd.h"

namespace byd {

// The directory entry a write replaces: its parent (opened beneath the base) and its name.
struct WriteTarget {
  UniqueFd dir;
  std::string name;
  bool exists = false;
  struct stat st = {};
};

// Opens directory `parent` beneath the resolver's base (O_PATH), creating missing directories
// one at a time. Each new one is reopened through the resolver, so a symlink cannot steer
// creation outside. Returns a descriptor or -errno.
int openOrCreateDir(const PathResolver& resolver, const std::string& parent);

// Finds the entry a write to `rel` lands on, creating missing parent directories. A final
// symlink is followed by hand (keeping the link and replacing its target) with the resolver's
// rules: relative targets only, resolved beneath the base, so a link pointing out, dangling or
// not, is refused before anything is created. Messages name `key`, the user's path.
Result<WriteTarget> findWriteTarget(const PathResolver& resolver, const std::string& rel,
                                    const std::string& key);

// Writes `data` to a new file that then takes the target's place; with `append`, after a copy
// of the existing file's contents; with `no_replace`, only if the target does not exist.
// Readers, and a crash of the writer, see the old file or the new one, never a part. With
// `sync`, the new file's data reaches the disk before it takes the old one's place and the
// directory after, so the write survives a power loss too; without, the kernel writes both
// back when it will (within seconds): after a power loss a write may be missing whole, and
// ext4 and btrfs flush a file that replaces another by rename before the rename is committed,
// but a file new since the last write-back may be found empty there.
Result<WriteOutcome> replaceAtomically(const WriteTarget& target, bool append,
                                       std::string_view data, bool no_replace, bool sync,
                                       const std::string& key);

}  // namespace byd
