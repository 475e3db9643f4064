#include "backends/local/atomic_write.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <utility>
#include <vector>

namespace byd {
namespace {

std::string quote(std::string_view s) { return "'" + std::string(s) + "'"; }

Status writeAll(int fd, std::string_view data, const std::string& key) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errnoStatus(errno, key);
    data.remove_prefix(static_cast<size_t>(n));
  }
  return okStatus();
}

std::string randomSuffix() {
  static constexpr char kAlphabet[] =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  unsigned char bytes[8];
  if (::getrandom(bytes, sizeof bytes, GRND_NONBLOCK) != sizeof bytes) {
    // Uniqueness, not secrecy, is what matters: O_EXCL catches collisions and we retry.
    struct timespec ts;
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    for (size_t i = 0; i < sizeof bytes; ++i)
      bytes[i] = static_cast<unsigned char>(ts.tv_nsec >> (i * 3));
  }
  std::string out;
  for (unsigned char b : bytes) out += kAlphabet[b % (sizeof kAlphabet - 1)];
  return out;
}

// A temp file beside the target, unlinked on destruction unless commit() renamed it.
class TempFile {
 public:
  static Result<TempFile> create(int dirfd, const std::string& target, mode_t mode,
                                 const std::string& key) {
    // Keep the name under NAME_MAX even when the target's own name is at the limit.
    const std::string stem = "." + target.substr(0, 200) + ".byd-";
    for (int attempt = 0; attempt < 100; ++attempt) {
      std::string name = stem + randomSuffix();
      int fd =
          ::openat(dirfd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
      if (fd >= 0) return TempFile(dirfd, std::move(name), UniqueFd(fd));
      if (errno != EEXIST && errno != EINTR) return errnoStatus(errno, key);
    }
    return internalError(quote(key) + ": could not create a unique temporary file");
  }

  TempFile(TempFile&& other) noexcept
      : dirfd_(other.dirfd_), name_(std::exchange(other.name_, {})), fd_(std::move(other.fd_)) {}
  TempFile& operator=(TempFile&&) = delete;
  ~TempFile() {
    if (!name_.empty()) ::unlinkat(dirfd_, name_.c_str(), 0);
  }

  int fd() const { return fd_.get(); }
  // Closes the file, saying whether the data was written: a network or FUSE file system may
  // report a failed write only here (without an fsync before it).
  Status close(const std::string& key) {
    if (::close(fd_.release()) != 0 && errno != EINTR) return errnoStatus(errno, key);
    return okStatus();
  }

  // Renames the temp file over `target` (or, with `no_replace`, only if it does not exist).
  Status commit(const std::string& target, bool no_replace, const std::string& key) {
    if (!no_replace) {
      if (::renameat(dirfd_, name_.c_str(), dirfd_, target.c_str()) != 0) {
        return errnoStatus(errno, key);
      }
    } else if (::renameat2(dirfd_, name_.c_str(), dirfd_, target.c_str(), RENAME_NOREPLACE) != 0) {
      if (errno != EINVAL && errno != ENOSYS) return errnoStatus(errno, key);
      // Some file systems lack RENAME_NOREPLACE; link() refuses an existing target too, and
      // the destructor then removes the temp name.
      if (::linkat(dirfd_, name_.c_str(), dirfd_, target.c_str(), 0) != 0) {
        return errnoStatus(errno, key);
      }
      return okStatus();
    }
    name_.clear();
    return okStatus();
  }

 private:
  TempFile(int dirfd, std::string name, UniqueFd fd)
      : dirfd_(dirfd), name_(std::move(name)), fd_(std::move(fd)) {}

  int dirfd_;
  std::string name_;
  UniqueFd fd_;
};

std::pair<std::string, std::string> splitLast(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return {"", path};
  return {path.substr(0, slash), path.substr(slash + 1)};
}

// The existing file of `target`, opened for reading, checked to be the one found.
Result<UniqueFd> openExisting(const WriteTarget& target, const std::string& key) {
  int fd = ::openat(target.dir.get(), target.name.c_str(),
                    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return errnoStatus(errno, key);
  UniqueFd owned(fd);
  struct stat st;
  if (::fstat(fd, &st) != 0) return errnoStatus(errno, key);
  if (st.st_dev != target.st.st_dev || st.st_ino != target.st.st_ino) {
    return failedPrecondition(quote(key) + " changed while it was being written");
  }
  return owned;
}

// Copies the first `size` bytes of `src` to `dst` at the same offsets, in the kernel where it
// can and through a 1 MiB buffer where it cannot: memory stays bounded whatever the size, and
// holes stay holes (only the data extents are copied), so a sparse file costs no more disk.
Status copyContents(int src, int dst, uint64_t size, const std::string& key) {
  std::vector<char> buffer;
  for (off_t at = 0; static_cast<uint64_t>(at) < size;) {
    off_t begin = ::lseek(src, at, SEEK_DATA);
    if (begin < 0 && errno == ENXIO) break;  // only a hole is left
    if (begin < 0) return errnoStatus(errno, key);
    off_t end = ::lseek(src, begin, SEEK_HOLE);
    if (end < 0) return errnoStatus(errno, key);
    end = std::min<off_t>(end, static_cast<off_t>(size));
    loff_t in = begin, out = begin;
    while (in < end) {
      ssize_t n = ::copy_file_range(src, &in, dst, &out, static_cast<size_t>(end - in), 0);
      if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP)) {
        buffer.resize(1 << 20);
        n = ::pread(src, buffer.data(), std::min<size_t>(buffer.size(), end - in), in);
        if (n > 0 && ::pwrite(dst, buffer.data(), n, out) != n) return errnoStatus(errno, key);
        if (n > 0) in += n, out += n;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return errnoStatus(errno, key);
      if (n == 0) break;  // the file shrank meanwhile
    }
    at = end;
  }
  if (::ftruncate(dst, static_cast<off_t>(size)) != 0) return errnoStatus(errno, key);
  if (::lseek(dst, static_cast<off_t>(size), SEEK_SET) < 0) return errnoStatus(errno, key);
  return okStatus();
}

// The replacement keeps the old file's owner (when we may set it) and permission bits.
Status copyAttributes(int fd, const struct stat& old, const std::string& key) {
  if (old.st_uid != ::geteuid() || old.st_gid != ::getegid()) {
    // Only root (or a member of the group) can do this; otherwise the writer owns the file,
    // as with any editor that saves by rename.
    (void)::fchown(fd, old.st_uid, old.st_gid);
  }
  if (::fchmod(fd, old.st_mode & 07777) != 0) return errnoStatus(errno, key);
  return okStatus();
}

void syncDir(int dirfd) {
  // Best effort: the rename is already visible; this only makes it survive a crash. A
  // directory we may write but not read cannot be opened for fsync.
  const UniqueFd fd(::openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.valid()) (void)::fsync(fd.get());
}

}  // namespace

int openOrCreateDir(const PathResolver& resolver, const std::string& parent) {
  int fd = resolver.openRaw(parent, O_PATH | O_DIRECTORY);
  if (fd != -ENOENT) return fd;
  UniqueFd cur(resolver.openRaw("", O_PATH | O_DIRECTORY));
  if (!cur.valid()) return cur.get();
  std::string prefix;
  for (size_t pos = 0; pos < parent.size();) {
    size_t end = std::min(parent.find('/', pos), parent.size());
    const std::string name = parent.substr(pos, end - pos);
    pos = end + 1;
    if (name.empty()) continue;
    prefix += (prefix.empty() ? "" : "/") + name;
    int next = resolver.openRaw(prefix, O_PATH | O_DIRECTORY);
    if (next == -ENOENT) {
      // EEXIST: a concurrent writer made it, or it is a dangling symlink the reopen judges.
      if (::mkdirat(cur.get(), name.c_str(), 0777) != 0 && errno != EEXIST) return -errno;
      next = resolver.openRaw(prefix, O_PATH | O_DIRECTORY);
    }
    if (next < 0) return next;
    cur.reset(next);
  }
  return cur.release();
}

Result<WriteTarget> findWriteTarget(const PathResolver& resolver, const std::string& rel,
                                    const std::string& key) {
  std::string path = rel;
  for (int hops = 0; hops <= kMaxSymlinkHops; ++hops) {
    auto [parent, name] = splitLast(path);
    if (name.empty() || name == "." || name == "..") {
      return invalidArgument(quote(key) + " is a directory");
    }
    int dirfd = openOrCreateDir(resolver, parent);
    // After a hop the path holds the link's target; messages still name the user's key.
    if (dirfd < 0) return hops == 0 ? resolver.errorFor(-dirfd, rel) : errnoStatus(-dirfd, key);
    WriteTarget target{UniqueFd(dirfd), name};
    if (::fstatat(dirfd, name.c_str(), &target.st, AT_SYMLINK_NOFOLLOW) == 0) {
      target.exists = true;
    } else if (errno != ENOENT) {
      return errnoStatus(errno, key);
    }
    if (!target.exists || !S_ISLNK(target.st.st_mode)) return target;
    std::string link;
    if (int err = readLinkAt(dirfd, name.c_str(), &link); err != 0) return errnoStatus(err, key);
    const std::optional<std::string> beneath = resolver.linkTarget(link);
    if (link.empty() || !beneath) return outsideWorkspace(key);
    if (link.front() == '/') {
      path = *beneath;  // from the base, as the container reads it
    } else {
      path = parent.empty() ? link : parent + "/" + link;
    }
  }
  return errnoStatus(ELOOP, key);
}

Result<WriteOutcome> replaceAtomically(const WriteTarget& target, bool append,
                                       std::string_view data, bool no_replace, bool sync,
                                       const std::string& key) {
  // A new file gets 0666 minus the umask from open(); an existing file's copy starts private
  // and gets the old bits before any data is written.
  const mode_t mode = target.exists ? 0600 : 0666;
  BYD_ASSIGN_OR_RETURN(TempFile tmp, TempFile::create(target.dir.get(), target.name, mode, key));
  if (target.exists) BYD_RETURN_IF_ERROR(copyAttributes(tmp.fd(), target.st, key));
  if (append && target.exists) {
    BYD_ASSIGN_OR_RETURN(UniqueFd existing, openExisting(target, key));
    struct stat now;
    if (::fstat(existing.get(), &now) != 0) return errnoStatus(errno, key);
    BYD_RETURN_IF_ERROR(copyContents(existing.get(), tmp.fd(), now.st_size, key));
  }
  BYD_RETURN_IF_ERROR(writeAll(tmp.fd(), data, key));
  if (sync && ::fsync(tmp.fd()) != 0) return errnoStatus(errno, key);
  struct stat st;
  if (::fstat(tmp.fd(), &st) != 0) return errnoStatus(errno, key);
  BYD_RETURN_IF_ERROR(tmp.close(key));
  BYD_RETURN_IF_ERROR(tmp.commit(target.name, no_replace, key));
  if (sync) syncDir(target.dir.get());
  return WriteOutcome{!target.exists, static_cast<uint64_t>(st.st_size)};
}

}  // namespace byd
