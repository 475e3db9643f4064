#pragma once
// PathResolver opens paths beneath one base directory with the kernel enforcing containment:
// openat2() with RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS, or, where openat2 is missing, a
// component-by-component walk with O_NOFOLLOW that follows symlinks itself and never lets ".."
// or a link leave the base. It never compares path strings. A resolver is immutable after
// open() and safe to use from several threads at once.

#include <sys/types.h>

#include <cstdint>
#include <optional>

#include <string>
#include <string_view>

#include "backends/backend.h"
#include "common/result.h"
#include "common/unique_fd.h"

namespace byd {

enum class ResolveStrategy {
  kAuto,  // openat2 when the kernel has it, else the walk
  kWalk,  // always the userspace walk (tests use this to cover the fallback)
};

// Symlinks followed per resolution before giving up with ELOOP; the kernel's MAXSYMLINKS.
inline constexpr int kMaxSymlinkHops = 40;

class PathResolver {
 public:
  // Opens `dir` (an absolute, canonical directory) as the base. Keys beneath it are spelled
  // `key_prefix` + "/" + rel in messages ("" for the workspace root, so keys stay relative).
  static Result<PathResolver> open(const std::string& dir, std::string key_prefix,
                                   ResolveStrategy strategy = ResolveStrategy::kAuto);

  // Opens `rel` (relative to the base; "" is the base itself; ".." components are resolved
  // physically and refused above the base) with open(2) `flags`. Symlinks are followed while
  // they stay beneath the base; absolute symlinks are refused (RESOLVE_BENEATH semantics, even
  // when they point back inside). O_CLOEXEC is always added.
  Result<UniqueFd> open(std::string_view rel, int flags, mode_t mode = 0) const;
  // Like open() but returns the descriptor or -errno, for callers that branch on the errno.
  int openRaw(std::string_view rel, int flags, mode_t mode = 0) const;
  // Like openRaw() without O_CREAT, but fails with -ELOOP when any component of `rel` is a
  // symlink; -ENOSYS when only the walk is available.
  int openWithoutSymlinksRaw(std::string_view rel, int flags) const;

  // Maps an errno from resolving `rel` to a Status naming its key. ENOTDIR is diagnosed to name
  // the component that is not a directory; ELOOP is split into "leaves the workspace" (magic
  // links) and a genuine symlink loop.
  Status errorFor(int err, std::string_view rel) const;
  // Absolute symlink targets at or below `root` are read as beneath the base, as a container
  // that mounts the base at `root` reads them ("/workspace/t.txt" is "t.txt"); any other
  // absolute target is still refused. Set before the resolver is shared.
  void mapAbsoluteLinks(std::string root) { link_root_ = std::move(root); }
  // A symlink target as a path relative to the base: `target` itself when relative; mapped
  // when absolute below the link root; nullopt when it is absolute otherwise (it leaves).
  std::optional<std::string> linkTarget(std::string_view target) const;
  // The user-facing key of `rel`.
  std::string keyOf(std::string_view rel) const;

  const std::string& dir() const { return dir_; }
  int baseFd() const { return base_.get(); }
  bool usesOpenat2() const { return !walk_only_; }

 private:
  PathResolver(UniqueFd base, std::string dir, std::string key_prefix, bool walk_only)
      : base_(std::move(base)),
        dir_(std::move(dir)),
        key_prefix_(std::move(key_prefix)),
        walk_only_(walk_only) {}

  int openat2Raw(const std::string& rel, int flags, mode_t mode, uint64_t extra_resolve = 0) const;
  int walkRaw(std::string_view rel, int flags, mode_t mode) const;
  std::string notDirMessage(std::string_view rel) const;

  UniqueFd base_;
  std::string dir_;
  std::string key_prefix_;
  bool walk_only_;
  std::string link_root_;  // "" when absolute links are never mapped
};

// The FileType of a stat(2) mode.
FileType fileTypeOf(mode_t mode);

// Maps an errno to a Status naming `key`, without any probing of the file system.
Status errnoStatus(int err, const std::string& key);
// Reads the symlink `name` in `dirfd` into *target; returns 0 or an errno.
int readLinkAt(int dirfd, const char* name, std::string* target);
// "'<key>' is outside the workspace".
Status outsideWorkspace(const std::string& key);

}  // namespace byd
