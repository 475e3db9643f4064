#include "backends/local/dir_ops.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/stat.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/local/atomic_write.h"
#include "common/unique_fd.h"

namespace byd {
namespace {

std::string quote(std::string_view s) { return "'" + std::string(s) + "'"; }

// The directory holding `path` (opened beneath the base) and the last component's name.
struct Entry {
  UniqueFd parent;
  std::string name;
};

std::pair<std::string, std::string> splitParent(const std::string& rel) {
  const size_t slash = rel.rfind('/');
  if (slash == std::string::npos) return {"", rel};
  return {rel.substr(0, slash), rel.substr(slash + 1)};
}

Result<Entry> entryOf(const Beneath& path, bool create_parents) {
  auto [parent, name] = splitParent(path.rel);
  const int fd = create_parents ? openOrCreateDir(*path.resolver, parent)
                                : path.resolver->openRaw(parent, O_PATH | O_DIRECTORY);
  if (fd < 0) return path.resolver->errorFor(-fd, parent.empty() ? path.rel : parent);
  return Entry{UniqueFd(fd), std::move(name)};
}

Status refuseBase(const Beneath& path, std::string_view what) {
  if (!path.rel.empty()) return okStatus();
  const std::string name = path.key.empty() ? "the workspace root" : quote(path.key);
  return invalidArgument(name + " cannot be " + std::string(what));
}

// Which mount a directory entry is on: its mount id where the kernel says, else its device.
struct MountOf {
  uint64_t id = 0;
  bool by_id = false;
  bool operator==(const MountOf&) const = default;
};

int entryStat(int dir, const char* name, MountOf* mount, mode_t* mode) {
  struct statx stx;
  if (::statx(dir, name, AT_SYMLINK_NOFOLLOW, STATX_TYPE | STATX_MNT_ID, &stx) != 0) return errno;
  *mode = stx.stx_mode;
  mount->by_id = (stx.stx_mask & STATX_MNT_ID) != 0;
  mount->id =
      mount->by_id ? stx.stx_mnt_id : (uint64_t{stx.stx_dev_major} << 32 | stx.stx_dev_minor);
  return 0;
}

// Removes what the directory `key` holds, depth first; `dir` is open for reading, and each
// level holds that one descriptor. Never follows a link; stops at another mount.
Status removeContents(UniqueFd dir, const std::string& key, const MountOf& mount,
                      RemoveOutcome& out) {
  DIR* stream = ::fdopendir(dir.get());
  if (stream == nullptr) return errnoStatus(errno, key);
  dir.release();
  std::unique_ptr<DIR, int (*)(DIR*)> closer(stream, ::closedir);
  const int fd = ::dirfd(stream);
  while (true) {
    errno = 0;
    const dirent* e = ::readdir(stream);
    if (e == nullptr) {
      if (errno != 0) return errnoStatus(errno, key);
      break;
    }
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    const std::string child = joinKey(key, name);
    MountOf on;
    mode_t mode = 0;
    if (const int err = entryStat(fd, name.c_str(), &on, &mode); err != 0) {
      if (err == ENOENT) continue;  // gone meanwhile
      return errnoStatus(err, child);
    }
    if (!S_ISDIR(mode)) {
      if (::unlinkat(fd, name.c_str(), 0) != 0 && errno != ENOENT) {
        return errnoStatus(errno, child);
      }
      ++out.files;
      continue;
    }
    if (!(on == mount)) {
      return failedPrecondition(quote(child) + " is a mount point; it is not deleted");
    }
    const int sub = ::openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub < 0) return errnoStatus(errno, child);
    BYD_RETURN_IF_ERROR(removeContents(UniqueFd(sub), child, mount, out));
    if (::unlinkat(fd, name.c_str(), AT_REMOVEDIR) != 0) return errnoStatus(errno, child);
    ++out.dirs;
  }
  return okStatus();
}

}  // namespace

Result<bool> makeDirBeneath(const Beneath& dir) {
  const int fd = dir.resolver->openRaw(dir.rel, O_PATH | O_DIRECTORY);
  if (fd >= 0) {
    ::close(fd);
    return false;
  }
  if (fd == -ENOTDIR) {
    // The last component is a file: say so plainly; a file on the way gets the resolver's words.
    BYD_ASSIGN_OR_RETURN(Entry entry, entryOf(dir, false));
    struct stat st;
    if (::fstatat(entry.parent.get(), entry.name.c_str(), &st, 0) == 0 && !S_ISDIR(st.st_mode)) {
      return alreadyExists(quote(dir.key) + " already exists and is not a directory");
    }
  }
  if (fd != -ENOENT) return dir.resolver->errorFor(-fd, dir.rel);
  const int made = openOrCreateDir(*dir.resolver, dir.rel);
  if (made < 0) return dir.resolver->errorFor(-made, dir.rel);
  ::close(made);
  return true;
}

Result<MoveOutcome> moveBeneath(const Beneath& from, const Beneath& to, bool replace) {
  BYD_RETURN_IF_ERROR(refuseBase(from, "moved"));
  BYD_RETURN_IF_ERROR(refuseBase(to, "replaced"));
  if (from.key == to.key) {
    return invalidArgument(quote(from.key) + " is both the source and the destination");
  }
  BYD_ASSIGN_OR_RETURN(Entry source, entryOf(from, false));
  struct stat st;
  if (::fstatat(source.parent.get(), source.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return errnoStatus(errno, from.key);
  }
  MoveOutcome out{fileTypeOf(st.st_mode), false};
  if (out.type == FileType::kDir && to.resolver == from.resolver &&
      to.rel.starts_with(from.rel + "/")) {
    return invalidArgument(quote(from.key) + " cannot be moved into itself (" + quote(to.key) +
                           ")");
  }
  // Parents are made only when missing, so a move refused below leaves nothing behind.
  Result<Entry> found = entryOf(to, false);
  if (!found.ok() && found.status().code() == Code::kNotFound) found = entryOf(to, true);
  BYD_ASSIGN_OR_RETURN(Entry dest, std::move(found));
  struct stat old;
  out.replaced = ::fstatat(dest.parent.get(), dest.name.c_str(), &old, AT_SYMLINK_NOFOLLOW) == 0;
  const std::string advice = "; pass overwrite: true to replace it";
  if (out.replaced && !replace) return alreadyExists(quote(to.key) + " already exists" + advice);
  int rc = ::renameat2(source.parent.get(), source.name.c_str(), dest.parent.get(),
                       dest.name.c_str(), replace ? 0 : RENAME_NOREPLACE);
  if (rc != 0 && !replace && (errno == EINVAL || errno == ENOSYS)) {
    // A file system without RENAME_NOREPLACE: the check above is all there is.
    rc = ::renameat(source.parent.get(), source.name.c_str(), dest.parent.get(), dest.name.c_str());
  }
  if (rc == 0) return out;
  switch (errno) {
    case EEXIST:
      return alreadyExists(quote(to.key) + " already exists" + advice);
    case ENOTEMPTY:
      return failedPrecondition(quote(to.key) +
                                " is a directory that is not empty; only an empty one is replaced");
    case EISDIR:
      return failedPrecondition(quote(to.key) + " is a directory; a file does not replace it");
    case ENOTDIR:
      return failedPrecondition(quote(to.key) +
                                " is not a directory; a directory does not "
                                "replace it");
    case EXDEV:
      return failedPrecondition(quote(from.key) + " and " + quote(to.key) +
                                " are on different file systems, so it cannot be moved in one "
                                "step");
    case EINVAL:
      return invalidArgument(quote(from.key) + " cannot be moved into itself (" + quote(to.key) +
                             ")");
    case EBUSY:
      return failedPrecondition(quote(from.key) + " or " + quote(to.key) +
                                " is in use as a mount point");
    default:
      return errnoStatus(errno, from.key);
  }
}

Result<RemoveOutcome> removeBeneath(const Beneath& target, bool recursive) {
  BYD_RETURN_IF_ERROR(refuseBase(target, "deleted"));
  BYD_ASSIGN_OR_RETURN(Entry entry, entryOf(target, false));
  struct stat st;
  if (::fstatat(entry.parent.get(), entry.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return errnoStatus(errno, target.key);
  }
  RemoveOutcome out{fileTypeOf(st.st_mode), 0, 0};
  if (out.type != FileType::kDir) {
    if (::unlinkat(entry.parent.get(), entry.name.c_str(), 0) != 0) {
      return errnoStatus(errno, target.key);
    }
    out.files = 1;
    return out;
  }
  if (recursive) {
    MountOf mount;
    mode_t mode = 0;
    if (const int err = entryStat(entry.parent.get(), entry.name.c_str(), &mount, &mode);
        err != 0) {
      return errnoStatus(err, target.key);
    }
    const int fd = ::openat(entry.parent.get(), entry.name.c_str(),
                            O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return errnoStatus(errno, target.key);
    if (Status s = removeContents(UniqueFd(fd), target.key, mount, out); !s.ok()) {
      if (out.files + out.dirs == 0) return s;
      // Part is gone: say how much.
      return Status(s.code(), s.message() + " (" + std::to_string(out.files) + " files and " +
                                  std::to_string(out.dirs) +
                                  " directories below it were deleted before this)");
    }
  }
  if (::unlinkat(entry.parent.get(), entry.name.c_str(), AT_REMOVEDIR) != 0) {
    if (errno == ENOTEMPTY || errno == EEXIST) {
      return failedPrecondition(quote(target.key) +
                                " is a directory that is not empty; pass recursive: true to "
                                "delete it and everything in it");
    }
    if (errno == EBUSY) return failedPrecondition(quote(target.key) + " is a mount point");
    return errnoStatus(errno, target.key);
  }
  ++out.dirs;
  return out;
}

}  // namespace byd
