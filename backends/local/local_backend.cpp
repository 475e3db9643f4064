#include "backends/local/local_backend.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <limits>
#include <memory>
#include <utility>

namespace byd {
namespace {

std::string quote(std::string_view s) { return "'" + std::string(s) + "'"; }

FileType typeOf(mode_t mode) {
  if (S_ISREG(mode)) return FileType::kFile;
  if (S_ISDIR(mode)) return FileType::kDir;
  if (S_ISLNK(mode)) return FileType::kSymlink;
  return FileType::kOther;
}

FileInfo infoFrom(std::string name, const struct stat& st) {
  FileInfo info;
  info.name = std::move(name);
  info.type = typeOf(st.st_mode);
  info.size = static_cast<uint64_t>(st.st_size);
  info.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  info.mode = st.st_mode & 07777;
  info.dev = st.st_dev;
  info.ino = st.st_ino;
  info.nlink = st.st_nlink;
  return info;
}

Status requireRegular(const struct stat& st, const std::string& key) {
  if (S_ISDIR(st.st_mode)) return invalidArgument(quote(key) + " is a directory");
  if (!S_ISREG(st.st_mode)) return invalidArgument(quote(key) + " is not a regular file");
  return okStatus();
}

Result<std::string> canonicalDir(const std::string& path, const std::string& what) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) == nullptr) {
    if (errno == ENOENT) return notFound(what + " " + quote(path) + " does not exist");
    return errnoStatus(errno, path);
  }
  struct stat st;
  if (::stat(buf, &st) != 0) return errnoStatus(errno, path);
  if (!S_ISDIR(st.st_mode))
    return invalidArgument(what + " " + quote(path) + " is not a directory");
  return std::string(buf);
}

// Reads from `offset` until EOF or `max_bytes`. The size is a hint: the buffer starts one byte
// larger (so a file that has not grown ends in one read) and grows only when it fills up.
Result<std::string> preadAll(int fd, uint64_t offset, uint64_t max_bytes, uint64_t size_hint,
                             const std::string& key) {
  constexpr uint64_t kMinChunk = 64 << 10;
  constexpr uint64_t kMaxOffset = std::numeric_limits<off_t>::max();
  std::string out;
  if (offset >= kMaxOffset) return out;
  max_bytes = std::min(max_bytes, kMaxOffset - offset);
  const uint64_t expected = size_hint > offset ? size_hint - offset : 0;
  out.resize(std::min(max_bytes, expected + 1));
  size_t have = 0;
  while (have < max_bytes) {
    if (have == out.size())
      out.resize(std::min<uint64_t>(max_bytes, have + std::max(kMinChunk, have)));
    const ssize_t n =
        ::pread(fd, out.data() + have, out.size() - have, static_cast<off_t>(offset + have));
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      return errnoStatus(errno, key);
    }
    const bool short_read = static_cast<size_t>(n) < out.size() - have;
    have += static_cast<size_t>(n);
    // A short read that reached the size seen at open is the end; skip the read that says so.
    if (short_read && size_hint > 0 && offset + have >= size_hint) break;
  }
  out.resize(have);
  return out;
}

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

// The directory entry a write replaces: its parent (opened beneath the base) and its name.
struct WriteTarget {
  UniqueFd dir;
  std::string name;
  bool exists = false;
  struct stat st = {};
};

// Opens `parent` beneath the base, creating missing directories one at a time. Each new one
// is reopened through the resolver, so a symlink cannot steer creation outside. Returns a
// descriptor or -errno.
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

std::pair<std::string, std::string> splitLast(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return {"", path};
  return {path.substr(0, slash), path.substr(slash + 1)};
}

// Finds the entry a write to `rel` lands on. A final symlink is followed by hand (keeping the
// link and replacing its target) with the resolver's rules: relative targets only, resolved
// beneath the base, so a link pointing out, dangling or not, is refused before anything is
// created.
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
    if (link.empty() || link.front() == '/') return outsideWorkspace(key);
    path = parent.empty() ? link : parent + "/" + link;
  }
  return errnoStatus(ELOOP, key);
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

// Writes `data` to a new file that then takes the target's place; with `append`, after a copy
// of the existing file's contents.
Result<WriteOutcome> replaceAtomically(const WriteTarget& target, bool append,
                                       std::string_view data, bool no_replace,
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
  if (::fsync(tmp.fd()) != 0) return errnoStatus(errno, key);
  struct stat st;
  if (::fstat(tmp.fd(), &st) != 0) return errnoStatus(errno, key);
  BYD_RETURN_IF_ERROR(tmp.commit(target.name, no_replace, key));
  syncDir(target.dir.get());
  return WriteOutcome{!target.exists, static_cast<uint64_t>(st.st_size)};
}

}  // namespace

Result<std::unique_ptr<LocalBackend>> LocalBackend::open(const std::string& root,
                                                         const std::vector<std::string>& allowed,
                                                         ResolveStrategy strategy) {
  BYD_ASSIGN_OR_RETURN(std::string root_dir, canonicalDir(root, "workspace root"));
  BYD_ASSIGN_OR_RETURN(PathResolver root_resolver, PathResolver::open(root_dir, "", strategy));
  std::vector<PathResolver> extra;
  for (const std::string& dir : allowed) {
    BYD_ASSIGN_OR_RETURN(std::string canonical, canonicalDir(dir, "allowed directory"));
    // Absolute keys name paths here, so the key prefix is the directory itself.
    BYD_ASSIGN_OR_RETURN(PathResolver resolver, PathResolver::open(canonical, canonical, strategy));
    extra.push_back(std::move(resolver));
  }
  return std::unique_ptr<LocalBackend>(
      new LocalBackend(std::move(root_resolver), std::move(extra)));
}

Result<LocalBackend::Location> LocalBackend::locate(std::string_view path) const {
  BYD_ASSIGN_OR_RETURN(std::string norm, lexicalNormalize(path));
  if (norm.empty() || norm.front() != '/') return Location{&root_, norm, norm};
  std::string rest;
  if (stripDirPrefix(norm, root_.dir(), &rest)) return Location{&root_, rest, rest};
  for (const PathResolver& resolver : allowed_) {
    if (stripDirPrefix(norm, resolver.dir(), &rest)) {
      return Location{&resolver, rest, resolver.keyOf(rest)};
    }
  }
  return outsideWorkspace(std::string(path));
}

Result<std::string> LocalBackend::normalize(std::string_view user_path) const {
  BYD_ASSIGN_OR_RETURN(Location loc, locate(user_path));
  return loc.key;
}

Result<std::string> LocalBackend::realKey(const std::string& key) const {
  return realKeyWithin(key, kMaxSymlinkHops);
}

Result<std::string> LocalBackend::realKeyWithin(const std::string& key, int hops) const {
  BYD_ASSIGN_OR_RETURN(Location loc, locate(key));
  // The common case first: no symlink on the way, so the file is the one the key names.
  const UniqueFd direct(loc.resolver->openWithoutSymlinksRaw(loc.rel, O_PATH));
  if (direct.valid()) return loc.key;
  if (direct.get() == -ENOENT) return loc.key;  // missing, and no symlink before what is missing
  auto fd = loc.resolver->open(loc.rel, O_PATH);
  if (!fd.ok()) {
    if (fd.status().code() != Code::kNotFound) return fd.status();
    return missingRealKey(loc, hops);
  }
  // The kernel's name for the opened file: our own descriptor's link in /proc, read, never
  // followed. It lies beneath the resolver's directory, since the open was beneath it.
  std::string real;
  const std::string link = "/proc/self/fd/" + std::to_string(fd->get());
  if (readLinkAt(AT_FDCWD, link.c_str(), &real) != 0) return loc.key;
  std::string rest;
  if (stripDirPrefix(real, loc.resolver->dir(), &rest)) return loc.resolver->keyOf(rest);
  return loc.key;
}

Result<std::string> LocalBackend::missingRealKey(const Location& loc, int hops) const {
  // What does not exist yet is where a write would create it: in its parent's real directory,
  // or, when its name there is a dangling symlink, where that link points (as write() follows
  // it). So "keys/new" with keys -> .ssh is ".ssh/new", and judged as such.
  if (loc.rel.empty()) return loc.key;
  const size_t slash = loc.rel.rfind('/');
  const std::string name = loc.rel.substr(slash == std::string::npos ? 0 : slash + 1);
  std::string parent = loc.resolver->keyOf("");  // the base, canonical already
  if (slash != std::string::npos) {
    BYD_ASSIGN_OR_RETURN(parent,
                         realKeyWithin(loc.resolver->keyOf(loc.rel.substr(0, slash)), hops));
  }
  BYD_ASSIGN_OR_RETURN(Location dir, locate(parent));
  const int dirfd = dir.resolver->openRaw(dir.rel, O_PATH | O_DIRECTORY);
  if (dirfd < 0) return joinKey(parent, name);  // the parent is missing too
  const UniqueFd owned(dirfd);
  std::string target;
  if (readLinkAt(dirfd, name.c_str(), &target) != 0) return joinKey(parent, name);
  // A dangling symlink. An absolute one is refused by write(); reading it finds nothing.
  if (target.empty() || target.front() == '/') return joinKey(parent, name);
  if (hops <= 0) return errnoStatus(ELOOP, loc.key);
  return realKeyWithin(parent.empty() ? target : parent + "/" + target, hops - 1);
}

Result<FileInfo> LocalBackend::stat(const std::string& key) const {
  BYD_ASSIGN_OR_RETURN(Location loc, locate(key));
  BYD_ASSIGN_OR_RETURN(UniqueFd fd, loc.resolver->open(loc.rel, O_PATH));
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return errnoStatus(errno, loc.key);
  return infoFrom(loc.key, st);
}

Result<std::vector<FileInfo>> LocalBackend::list(const std::string& key) const {
  std::vector<FileInfo> out;
  BYD_RETURN_IF_ERROR(listEach(key, [&out](const FileInfo& e) {
    out.push_back(e);
    return true;
  }));
  return out;
}

Status LocalBackend::listEach(const std::string& key,
                              const std::function<bool(const FileInfo&)>& visit) const {
  BYD_ASSIGN_OR_RETURN(Location loc, locate(key));
  BYD_ASSIGN_OR_RETURN(UniqueFd fd, loc.resolver->open(loc.rel, O_RDONLY | O_DIRECTORY));
  std::unique_ptr<DIR, int (*)(DIR*)> dir(::fdopendir(fd.get()), &::closedir);
  if (!dir) return errnoStatus(errno, loc.key);
  fd.release();  // now owned by `dir`
  for (;;) {
    errno = 0;
    const struct dirent* entry = ::readdir(dir.get());
    if (entry == nullptr) break;
    const std::string_view name = entry->d_name;
    if (name == "." || name == "..") continue;
    struct stat st;
    if (::fstatat(::dirfd(dir.get()), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) continue;  // removed since readdir saw it
      return errnoStatus(errno, joinKey(loc.key, name));
    }
    if (!visit(infoFrom(std::string(name), st))) return okStatus();
  }
  if (errno != 0) return errnoStatus(errno, loc.key);
  return okStatus();
}

Result<UniqueFd> LocalBackend::openRegular(const Location& loc, struct stat* st) const {
  // Look before opening for reading: opening a FIFO can block and opening a device can act
  // (a watchdog starts ticking). O_NONBLOCK and the inode check cover a swap in between.
  BYD_ASSIGN_OR_RETURN(UniqueFd probe, loc.resolver->open(loc.rel, O_PATH));
  if (::fstat(probe.get(), st) != 0) return errnoStatus(errno, loc.key);
  BYD_RETURN_IF_ERROR(requireRegular(*st, loc.key.empty() ? root_.dir() : loc.key));
  BYD_ASSIGN_OR_RETURN(UniqueFd fd, loc.resolver->open(loc.rel, O_RDONLY | O_NONBLOCK | O_NOCTTY));
  struct stat now;
  if (::fstat(fd.get(), &now) != 0) return errnoStatus(errno, loc.key);
  if (now.st_dev != st->st_dev || now.st_ino != st->st_ino) {
    return failedPrecondition(quote(loc.key) + " changed while it was being opened");
  }
  *st = now;
  return fd;
}

Result<std::string> LocalBackend::read(const std::string& key, uint64_t offset,
                                       uint64_t max_bytes) const {
  BYD_ASSIGN_OR_RETURN(Location loc, locate(key));
  struct stat st;
  BYD_ASSIGN_OR_RETURN(UniqueFd fd, openRegular(loc, &st));
  return preadAll(fd.get(), offset, max_bytes, static_cast<uint64_t>(st.st_size), loc.key);
}

Status LocalBackend::readStream(const std::string& key, size_t chunk_bytes,
                                const std::function<bool(std::string_view)>& sink) const {
  BYD_ASSIGN_OR_RETURN(Location loc, locate(key));
  struct stat st;
  BYD_ASSIGN_OR_RETURN(UniqueFd fd, openRegular(loc, &st));
  // One buffer, reused for every chunk, so a grep over a 50 MiB file touches 256 KiB of memory;
  // sized to the file (plus one byte to see the end) and left uninitialized, since most files
  // are far smaller than a chunk.
  const size_t size = std::clamp<size_t>(static_cast<size_t>(st.st_size) + 1, 1, chunk_bytes);
  auto buf = std::make_unique_for_overwrite<char[]>(size);
  off_t offset = 0;
  while (true) {
    const ssize_t n = ::pread(fd.get(), buf.get(), size, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errnoStatus(errno, loc.key);
    if (n == 0 || !sink(std::string_view(buf.get(), static_cast<size_t>(n)))) return okStatus();
    offset += n;
    // A short read that reached the size seen at open is the end; skip the read that says so.
    if (static_cast<size_t>(n) < size && offset >= st.st_size) return okStatus();
  }
}

Result<WriteOutcome> LocalBackend::write(const std::string& key, std::string_view data,
                                         WriteMode mode) {
  BYD_ASSIGN_OR_RETURN(Location loc, locate(key));
  if (loc.rel.empty()) {
    return invalidArgument(quote(loc.key.empty() ? root_.dir() : loc.key) + " is a directory");
  }
  BYD_ASSIGN_OR_RETURN(WriteTarget target, findWriteTarget(*loc.resolver, loc.rel, loc.key));
  if (target.exists) {
    BYD_RETURN_IF_ERROR(requireRegular(target.st, loc.key));
    if (mode == WriteMode::kCreate) return alreadyExists(quote(loc.key) + " already exists");
  }
  return replaceAtomically(target, mode == WriteMode::kAppend, data, mode == WriteMode::kCreate,
                           loc.key);
}

void LocalBackend::setSandbox(std::unique_ptr<Sandbox> sandbox, std::string why_not,
                              PythonOptions python) {
  python_.reset();
  sandbox_ = std::move(sandbox);
  sandbox_unavailable_ = std::move(why_not);
  if (sandbox_ && sandbox_->isolated()) {
    python_ = std::make_unique<PythonSessions>(*sandbox_, root_.dir(), std::move(python));
  }
}

Result<PythonResult> LocalBackend::runPython(const PythonRequest& request,
                                             const CancelToken& cancel) {
  if (!python_) {
    return failedPrecondition(
        "Python cannot run: " +
        (sandbox_ ? std::string("run_python needs the sandbox (it is off: --sandbox none)")
         : sandbox_unavailable_.empty() ? std::string("no sandbox")
                                        : sandbox_unavailable_));
  }
  BYD_ASSIGN_OR_RETURN(PythonSessions::Run run,
                       python_->run(request.session, request.code, request.reset, request.timeout,
                                    request.max_output, cancel));
  return pythonResult(run);
}

std::vector<std::string> LocalBackend::writableDirs() const {
  std::vector<std::string> dirs = {root_.dir()};
  for (const PathResolver& resolver : allowed_) dirs.push_back(resolver.dir());
  return dirs;
}

Result<ExecResult> LocalBackend::execute(const ExecRequest& request, const CancelToken& cancel) {
  if (!sandbox_) {
    return failedPrecondition("commands cannot run: " + (sandbox_unavailable_.empty()
                                                             ? std::string("no sandbox")
                                                             : sandbox_unavailable_));
  }
  BYD_ASSIGN_OR_RETURN(Location loc, locate(request.cwd));
  BYD_ASSIGN_OR_RETURN(FileInfo info, stat(request.cwd));
  if (info.type != FileType::kDir) return invalidArgument(quote(loc.key) + " is not a directory");
  RunRequest run;
  static const std::string shell = access("/bin/bash", X_OK) == 0 ? "/bin/bash" : "/bin/sh";
  run.argv = {shell, "-c", request.command};
  run.cwd = loc.resolver->dir() + (loc.rel.empty() ? "" : "/" + loc.rel);
  run.env = {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8", "TERM=dumb"};
  for (const auto& [name, value] : request.env) run.env.push_back(name + "=" + value);
  run.stdin_data = request.stdin_data;
  run.timeout = request.timeout;
  run.max_output = request.max_output;
  run.on_progress = request.on_progress;
  return sandbox_->run(run, cancel);
}

}  // namespace byd
