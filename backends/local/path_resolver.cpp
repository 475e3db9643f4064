#include "backends/local/path_resolver.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <vector>

#include "backends/backend.h"

namespace byd {

namespace {

// openat2 returns EAGAIN when a concurrent rename or mount raced a ".." step; it is safe to
// retry, and after a few tries the walk gets the answer instead.
constexpr int kOpenat2Attempts = 8;

int openAt(int dirfd, const char* name, int flags, mode_t mode) {
  for (;;) {
    int fd = ::openat(dirfd, name, flags | O_CLOEXEC, mode);
    if (fd >= 0) return fd;
    if (errno != EINTR) return -errno;
  }
}

// Resolves a path one component at a time, following symlinks itself. It keeps a descriptor
// for every directory entered so ".." steps back physically (as the kernel does) and is
// refused at the base.
class Walk {
 public:
  Walk(int base_fd, const PathResolver& resolver) : base_fd_(base_fd), resolver_(resolver) {}

  int run(std::string_view rel, int flags, mode_t mode) {
    pushPath(rel);
    while (!pending_.empty()) {
      std::string name = std::move(pending_.back());
      pending_.pop_back();
      int rc = step(name, pending_.empty(), flags, mode);
      if (rc != kContinue) return rc;
    }
    // The path named a directory already entered: "" or a trailing "..".
    return openAt(current(), ".", flags, mode);
  }

 private:
  static constexpr int kContinue = INT_MIN;

  int current() const { return dirs_.empty() ? base_fd_ : dirs_.back().get(); }

  void pushPath(std::string_view path) {
    // Components are kept in reverse so the next one is at the back.
    std::vector<std::string> parts;
    size_t pos = 0;
    while (pos <= path.size()) {
      size_t end = path.find('/', pos);
      if (end == std::string_view::npos) end = path.size();
      if (end > pos) parts.emplace_back(path.substr(pos, end - pos));
      pos = end + 1;
    }
    pending_.insert(pending_.end(), parts.rbegin(), parts.rend());
  }

  int step(const std::string& name, bool last, int flags, mode_t mode) {
    if (name == ".") return kContinue;
    if (name == "..") {
      if (dirs_.empty()) return -EXDEV;
      dirs_.pop_back();
      return kContinue;
    }
    return last ? finalStep(name, flags, mode) : dirStep(name);
  }

  // An intermediate component: a directory to enter or a symlink to follow. The O_PATH
  // descriptor pins the object, so what we inspect is what we use.
  int dirStep(const std::string& name) {
    int fd = openAt(current(), name.c_str(), O_PATH | O_NOFOLLOW, 0);
    if (fd < 0) return fd;
    UniqueFd owned(fd);
    struct stat st;
    if (::fstat(fd, &st) != 0) return -errno;
    if (S_ISLNK(st.st_mode)) return followLink(fd, "");
    if (!S_ISDIR(st.st_mode)) return -ENOTDIR;
    dirs_.push_back(std::move(owned));
    return kContinue;
  }

  // The last component, opened with the caller's flags plus O_NOFOLLOW. A symlink there makes
  // the open fail (ELOOP, or ENOTDIR with O_DIRECTORY) or, with O_PATH, opens the link itself;
  // either way we follow it ourselves.
  int finalStep(const std::string& name, int flags, mode_t mode) {
    const bool follow =
        (flags & O_NOFOLLOW) == 0 && (flags & (O_CREAT | O_EXCL)) != (O_CREAT | O_EXCL);
    int fd = openAt(current(), name.c_str(), flags | O_NOFOLLOW, mode);
    if (fd < 0) {
      if (!follow) return fd;
      std::string target;
      // EINVAL: not a symlink, so the open's own error stands.
      if (readLinkAt(current(), name.c_str(), &target) != 0) return fd;
      return pushLink(target);
    }
    UniqueFd owned(fd);
    struct stat st;
    if (follow && (flags & O_PATH) && ::fstat(fd, &st) == 0 && S_ISLNK(st.st_mode)) {
      return followLink(fd, "");
    }
    return owned.release();
  }

  int followLink(int fd, const char* name) {
    std::string target;
    if (int err = readLinkAt(fd, name, &target); err != 0) return -err;
    return pushLink(target);
  }

  // Absolute targets are refused even when they point back inside: the same rule as
  // RESOLVE_BENEATH, so both strategies agree; only those below the link root (a container's
  // mount point of the base) are read as beneath the base, and start again from it. Magic
  // links read as absolute paths or as "pipe:[123]"-style names that resolve to nothing, so
  // they cannot leave either.
  int pushLink(std::string_view target) {
    if (++hops_ > kMaxSymlinkHops) return -ELOOP;
    if (target.empty()) return -ENOENT;
    if (target.front() == '/') {
      const std::optional<std::string> mapped = resolver_.linkTarget(target);
      if (!mapped) return -EXDEV;
      dirs_.clear();
      pushPath(*mapped);
      return kContinue;
    }
    pushPath(target);
    return kContinue;
  }

  int base_fd_;
  const PathResolver& resolver_;
  std::vector<std::string> pending_;
  std::vector<UniqueFd> dirs_;
  int hops_ = 0;
};

// Probes once at open: ENOSYS on old kernels, EPERM under seccomp profiles that predate it.
bool kernelHasOpenat2(int dirfd) {
  struct open_how how = {};
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_BENEATH;
  const UniqueFd fd(static_cast<int>(::syscall(SYS_openat2, dirfd, ".", &how, sizeof how)));
  if (fd.valid()) return true;
  return errno != ENOSYS && errno != EPERM;
}

std::string quote(std::string_view s) { return "'" + std::string(s) + "'"; }

}  // namespace

int readLinkAt(int dirfd, const char* name, std::string* target) {
  char buf[PATH_MAX];
  ssize_t n = ::readlinkat(dirfd, name, buf, sizeof buf);
  if (n < 0) return errno;
  if (static_cast<size_t>(n) == sizeof buf) return ENAMETOOLONG;
  target->assign(buf, static_cast<size_t>(n));
  return 0;
}

FileType fileTypeOf(mode_t mode) {
  if (S_ISREG(mode)) return FileType::kFile;
  if (S_ISDIR(mode)) return FileType::kDir;
  if (S_ISLNK(mode)) return FileType::kSymlink;
  return FileType::kOther;
}

Status outsideWorkspace(const std::string& key) {
  return permissionDenied(quote(key) + " is outside the workspace");
}

Status errnoStatus(int err, const std::string& key) {
  const std::string q = key.empty() || key == "." ? "the workspace root" : quote(key);
  switch (err) {
    case EXDEV:
      return outsideWorkspace(key);
    case ENOENT:
      return notFound(q + " does not exist");
    case ENOTDIR:
      return invalidArgument(q + " is not a directory");
    case EISDIR:
      return invalidArgument(q + " is a directory");
    case EEXIST:
      return alreadyExists(q + " already exists");
    case ELOOP:
      return invalidArgument(q + ": too many levels of symbolic links");
    case ENAMETOOLONG:
      return invalidArgument(q + ": a file name is too long");
    case EACCES:
    case EPERM:
      return permissionDenied(q + ": permission denied");
    case EROFS:
      return failedPrecondition(q + " is on a read-only file system");
    case ETXTBSY:
      return failedPrecondition(q + " is busy");
    case ENOSPC:
    case EDQUOT:
      return resourceExhausted(q + ": no space left on the device");
    case EFBIG:
      return resourceExhausted(q + ": file too large");
    case EMFILE:
    case ENFILE:
      return resourceExhausted(q + ": too many open files");
    default:
      return internalError(q + ": " + std::strerror(err));
  }
}

Result<PathResolver> PathResolver::open(const std::string& dir, std::string key_prefix,
                                        ResolveStrategy strategy) {
  int fd = ::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errnoStatus(errno, dir);
  UniqueFd base(fd);
  const bool walk_only = strategy == ResolveStrategy::kWalk || !kernelHasOpenat2(fd);
  return PathResolver(std::move(base), dir, std::move(key_prefix), walk_only);
}

Result<UniqueFd> PathResolver::open(std::string_view rel, int flags, mode_t mode) const {
  int fd = openRaw(rel, flags, mode);
  if (fd < 0) return errorFor(-fd, rel);
  return UniqueFd(fd);
}

namespace {

// 0 for a path the opens may take, else -errno: NUL bytes are refused, and so are absolute
// paths (RESOLVE_BENEATH refuses them; the walk would silently treat them as relative).
int checkRel(std::string_view rel) {
  if (rel.find('\0') != std::string_view::npos) return -EINVAL;
  if (!rel.empty() && rel.front() == '/') return -EXDEV;
  return 0;
}

}  // namespace

int PathResolver::openRaw(std::string_view rel, int flags, mode_t mode) const {
  if (const int err = checkRel(rel); err != 0) return err;
  const std::string path(rel);
  if (!walk_only_) {
    int fd = openat2Raw(path, flags, mode);
    // EXDEV may be an absolute link the walk maps beneath the base.
    if (fd != -ENOSYS && fd != -EAGAIN && (fd != -EXDEV || link_root_.empty())) return fd;
  }
  return walkRaw(path, flags, mode);
}

int PathResolver::openWithoutSymlinksRaw(std::string_view rel, int flags) const {
  if (walk_only_) return -ENOSYS;
  if (const int err = checkRel(rel); err != 0) return err;
  const int fd = openat2Raw(std::string(rel), flags, 0, RESOLVE_NO_SYMLINKS);
  return fd == -EAGAIN ? -ENOSYS : fd;
}

int PathResolver::openat2Raw(const std::string& rel, int flags, mode_t mode,
                             uint64_t extra_resolve) const {
  struct open_how how = {};
  how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
  // openat2 rejects a mode without O_CREAT or O_TMPFILE (EINVAL), unlike openat.
  const bool creates = (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE;
  how.mode = creates ? mode : 0;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | extra_resolve;
  const char* path = rel.empty() ? "." : rel.c_str();
  for (int attempt = 0; attempt < kOpenat2Attempts;) {
    long fd = ::syscall(SYS_openat2, base_.get(), path, &how, sizeof how);
    if (fd >= 0) return static_cast<int>(fd);
    if (errno == EAGAIN)
      ++attempt;
    else if (errno != EINTR)
      return -errno;
  }
  return -EAGAIN;
}

int PathResolver::walkRaw(std::string_view rel, int flags, mode_t mode) const {
  return Walk(base_.get(), *this).run(rel, flags, mode);
}

std::optional<std::string> PathResolver::linkTarget(std::string_view target) const {
  if (target.empty() || target.front() != '/') return std::string(target);
  if (link_root_.empty()) return std::nullopt;
  auto clean = lexicalNormalize(target);
  std::string rest;
  if (!clean.ok() || !stripDirPrefix(*clean, link_root_, &rest)) return std::nullopt;
  return rest;
}

Status PathResolver::errorFor(int err, std::string_view rel) const {
  if (err == ENOTDIR) return invalidArgument(notDirMessage(rel));
  if (err == ELOOP && !walk_only_) {
    // openat2 reports a magic link and a symlink loop alike. The walk tells them apart: it
    // sees a loop as a loop, and a magic link as a link it refuses or cannot follow.
    if (UniqueFd(walkRaw(rel, O_PATH, 0)).get() != -ELOOP) err = EXDEV;
  }
  return errnoStatus(err, keyOf(rel));
}

std::string PathResolver::notDirMessage(std::string_view rel) const {
  const std::string key = keyOf(rel);
  for (size_t end = rel.find('/'); end != std::string_view::npos; end = rel.find('/', end + 1)) {
    std::string_view prefix = rel.substr(0, end);
    const UniqueFd fd(openRaw(prefix, O_PATH | O_DIRECTORY));
    if (fd.valid()) continue;
    if (fd.get() == -ENOTDIR)
      return quote(key) + ": " + quote(keyOf(prefix)) + " is not a directory";
  }
  return quote(key) + " is not a directory";
}

std::string PathResolver::keyOf(std::string_view rel) const {
  if (key_prefix_.empty()) return std::string(rel);
  if (rel.empty()) return key_prefix_;
  return joinKey(key_prefix_, rel);
}

}  // namespace byd
