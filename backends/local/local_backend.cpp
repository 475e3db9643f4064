#include "backends/local/local_backend.h"

#include <spdlog/spdlog.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <limits>
#include <memory>
#include <utility>

#include "backends/local/atomic_write.h"
#include "backends/local/dir_ops.h"

namespace byd {
namespace {

std::string quote(std::string_view s) { return "'" + std::string(s) + "'"; }

FileType fileTypeOfDirent(unsigned char d_type) {
  switch (d_type) {
    case DT_REG:
      return FileType::kFile;
    case DT_DIR:
      return FileType::kDir;
    case DT_LNK:
      return FileType::kSymlink;
    default:
      return FileType::kOther;
  }
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

}  // namespace

FileInfo statInfo(std::string name, const struct stat& st) {
  FileInfo info;
  info.name = std::move(name);
  info.type = fileTypeOf(st.st_mode);
  info.size = static_cast<uint64_t>(st.st_size);
  info.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  info.mode = st.st_mode & 07777;
  info.dev = st.st_dev;
  info.ino = st.st_ino;
  info.nlink = st.st_nlink;
  return info;
}

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
  std::unique_ptr<LocalBackend> backend(
      new LocalBackend(std::move(root_resolver), std::move(extra)));
  backend->setDirCache(true);
  return backend;
}

void LocalBackend::setDirCache(bool on) {
  cache_.reset();
  if (!on) return;
  const UniqueFd root(root_.openWithoutSymlinksRaw("", O_PATH | O_DIRECTORY));
  if (root.valid()) cache_ = DirCache::forRoot(root.get(), {});
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
  // A dangling symlink. An absolute one is refused by write() (unless a container's mount
  // point maps it beneath); reading it finds nothing.
  const std::optional<std::string> beneath = dir.resolver->linkTarget(target);
  if (target.empty() || !beneath) return joinKey(parent, name);
  if (hops <= 0) return errnoStatus(ELOOP, loc.key);
  if (target.front() == '/') return realKeyWithin(dir.resolver->keyOf(*beneath), hops - 1);
  return realKeyWithin(parent.empty() ? target : parent + "/" + target, hops - 1);
}

Result<FileInfo> LocalBackend::stat(const std::string& key) const {
  BYD_ASSIGN_OR_RETURN(Location loc, locate(key));
  BYD_ASSIGN_OR_RETURN(UniqueFd fd, loc.resolver->open(loc.rel, O_PATH));
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return errnoStatus(errno, loc.key);
  return statInfo(loc.key, st);
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
  return listTyped(key, nullptr, visit);
}

Status LocalBackend::listTyped(const std::string& key, const Detail& detail,
                               const std::function<bool(const FileInfo&)>& visit) const {
  BYD_ASSIGN_OR_RETURN(Location loc, locate(key));
  BYD_ASSIGN_OR_RETURN(UniqueFd fd, loc.resolver->open(loc.rel, O_RDONLY | O_DIRECTORY));
  return listOpen(fd.get(), loc.key, detail, visit);
}

std::optional<Status> LocalBackend::listTypedDirect(
    const std::string& key, const Detail& detail,
    const std::function<bool(const FileInfo&)>& visit) const {
  auto loc = locate(key);
  if (!loc.ok()) return std::nullopt;
  DirCache* const cache = loc->resolver == &root_ ? cache_.get() : nullptr;
  if (cache != nullptr) {
    if (const DirCache::Listing held = cache->find(loc->rel)) {
      for (const FileInfo& entry : *held) {
        if (!visit(entry)) break;
      }
      return okStatus();
    }
  }
  const int fd = loc->resolver->openWithoutSymlinksRaw(loc->rel, O_RDONLY | O_DIRECTORY);
  if (fd < 0) return std::nullopt;
  const UniqueFd owned(fd);
  if (cache != nullptr) {
    if (std::optional<Status> kept = listAndKeep(*cache, fd, *loc, visit)) return kept;
  }
  return listOpen(fd, loc->key, detail, visit);
}

std::optional<Status> LocalBackend::listAndKeep(
    DirCache& cache, int dir_fd, const Location& loc,
    const std::function<bool(const FileInfo&)>& visit) const {
  // Past a few thousand entries a directory is read as it streams, not held.
  constexpr off_t kMaxKeptDirBytes = 256 * 1024;
  struct stat st;
  if (::fstat(dir_fd, &st) != 0 || st.st_size > kMaxKeptDirBytes) return std::nullopt;
  const auto open_dir = [this](const std::string& rel) {
    return root_.openWithoutSymlinksRaw(rel, O_PATH | O_DIRECTORY);
  };
  const std::optional<uint64_t> ticket = cache.watch(loc.rel, dir_fd, open_dir);
  if (!ticket) return std::nullopt;
  // Every entry in full, so the listing serves whatever a later walk asks of it.
  auto entries = std::make_shared<std::vector<FileInfo>>();
  BYD_RETURN_IF_ERROR(listOpen(dir_fd, loc.key, nullptr, [&](const FileInfo& e) {
    entries->push_back(e);
    return true;
  }));
  // Held sorted by name, the order ls shows: a listing served from memory needs no sort.
  std::sort(entries->begin(), entries->end(),
            [](const FileInfo& a, const FileInfo& b) { return a.name < b.name; });
  cache.store(loc.rel, *ticket, entries, open_dir);
  for (const FileInfo& entry : *entries) {
    if (!visit(entry)) break;
  }
  return okStatus();
}

Status LocalBackend::listOpen(int dir_fd, const std::string& key, const Detail& detail,
                              const std::function<bool(const FileInfo&)>& visit) const {
  // getdents64 itself rather than readdir: fdopendir costs a stat and two fcntls per directory,
  // which a walk of many small directories feels.
  alignas(struct dirent64) char buf[32 * 1024];
  for (;;) {
    const long got = ::syscall(SYS_getdents64, dir_fd, buf, sizeof buf);
    if (got < 0) {
      if (errno == EINTR) continue;
      return errnoStatus(errno, key);
    }
    if (got == 0) return okStatus();
    for (long pos = 0; pos < got;) {
      const auto* entry = reinterpret_cast<const struct dirent64*>(buf + pos);
      pos += entry->d_reclen;
      const std::string_view name = entry->d_name;
      if (name == "." || name == "..") continue;
      if (detail && entry->d_type != DT_UNKNOWN) {
        const FileType type = fileTypeOfDirent(entry->d_type);
        if (!detail(name, type)) {
          FileInfo info;
          info.name = std::string(name);
          info.type = type;
          if (!visit(info)) return okStatus();
          continue;
        }
      }
      struct stat st;
      if (::fstatat(dir_fd, entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) continue;  // removed since it was listed
        return errnoStatus(errno, joinKey(key, name));
      }
      if (!visit(statInfo(std::string(name), st))) return okStatus();
    }
  }
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
                           write_sync_, loc.key);
}

Result<bool> LocalBackend::makeDir(const std::string& key) {
  BYD_ASSIGN_OR_RETURN(Location loc, locate(key));
  return makeDirBeneath({loc.resolver, loc.rel, loc.key});
}

Result<MoveOutcome> LocalBackend::move(const std::string& from, const std::string& to,
                                       bool replace) {
  BYD_ASSIGN_OR_RETURN(Location source, locate(from));
  BYD_ASSIGN_OR_RETURN(Location dest, locate(to));
  return moveBeneath({source.resolver, source.rel, source.key}, {dest.resolver, dest.rel, dest.key},
                     replace);
}

Result<RemoveOutcome> LocalBackend::remove(const std::string& key, bool recursive) {
  BYD_ASSIGN_OR_RETURN(Location loc, locate(key));
  return removeBeneath({loc.resolver, loc.rel, loc.key}, recursive);
}

void LocalBackend::setSandbox(std::unique_ptr<Sandbox> sandbox, std::string why_not,
                              PythonOptions python) {
  python_.reset();
  sandbox_ = std::move(sandbox);
  sandbox_unavailable_ = std::move(why_not);
  index_.reset();
  proxy_.reset();
  if (sandbox_ && sandbox_->proxyPort() != 0) {
    proxy_ = std::make_unique<egress::CallProxy>();
    sandbox_->setProxyListener([this](UniqueFd listener) {
      if (Status s = proxy_->serve(std::move(listener)); !s.ok()) {
        spdlog::warn("network: {}", s.message());
      }
    });
  }
  if (sandbox_) {
    if (!sandbox_->isolated()) python.fork_sessions = false;  // a plain kernel cannot fork
    python_ = std::make_unique<PythonSessions>(*sandbox_, root_.dir(), std::move(python));
  }
  if (sandbox_ && sandbox_->isolated()) {
    std::vector<WorkspaceIndex::Root> roots = {{"", root_.dir()}};
    for (const PathResolver& resolver : allowed_) roots.push_back({resolver.dir(), resolver.dir()});
    index_ = std::make_unique<WorkspaceIndex>(std::move(roots));
  }
}

Result<PythonResult> LocalBackend::runPython(const PythonRequest& request,
                                             const CancelToken& cancel) {
  if (proxy_) proxy_->take(request.network);
  if (!python_) {
    return failedPrecondition("Python cannot run: " + (sandbox_unavailable_.empty()
                                                           ? std::string("no sandbox")
                                                           : sandbox_unavailable_));
  }
  if (!index_ && (request.isolated || !request.fork_from.empty())) {
    // Both rest on the sandbox's namespaces: a run's processes, /tmp and /dev/shm swept
    // after it, a fork found and adopted in its parent's sandbox.
    return failedPrecondition(
        std::string(request.isolated ? "an isolated run" : "forking a session") +
        " needs the sandbox (--sandbox bwrap); under " + std::string(sandbox_->plainMode()) +
        " run_python has named sessions only");
  }
  BYD_ASSIGN_OR_RETURN(
      PythonSessions::Run run,
      runPythonIn(*python_, request, cancel, index_ ? index_->masks(request.view) : nullptr));
  return pythonResult(run);
}

Result<std::vector<std::string>> LocalBackend::installPackages(
    const std::vector<std::string>& names, const CancelToken& cancel) {
  if (!installer_) return failedPrecondition("this server installs no Python packages");
  return installer_->install(names, cancel);
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
  if (installer_) run.env.push_back("PYTHONPATH=" + installer_->target());
  for (const auto& [name, value] : request.env) run.env.push_back(name + "=" + value);
  run.stdin_data = request.stdin_data;
  run.timeout = request.timeout;
  run.max_output = request.max_output;
  run.on_progress = request.on_progress;
  if (index_) run.masks = index_->masks(request.view);
  if (proxy_) proxy_->take(request.network);
  return sandbox_->run(run, cancel);
}

}  // namespace byd
