#pragma once
// LocalBackend serves one directory on the host (plus optional extra allowed directories).
// Every access is resolved beneath its base directory by the kernel (see PathResolver), never
// by comparing strings, so "..", sibling prefixes and symlinks cannot leave it; writes are
// atomic (temp file + rename). The only state is descriptors opened at construction, so all
// methods are safe to call from several threads at once.

#include <sys/stat.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/egress/network_policy.h"
#include "backends/local/dir_cache.h"
#include "backends/local/package_installer.h"
#include "backends/local/path_resolver.h"
#include "backends/local/python_sessions.h"
#include "backends/local/sandbox.h"
#include "backends/local/workspace_index.h"

namespace byd {

// What `st` says of the entry `name`, as a listing gives it.
FileInfo statInfo(std::string name, const struct stat& st);

class LocalBackend : public Backend, public Executor {
 public:
  // `root` must be an existing directory; `allowed` are extra directories the tools may also
  // use, addressed by absolute keys. All are made absolute and canonical here; an error names
  // the bad directory. `strategy` exists so tests can force the userspace walk.
  static Result<std::unique_ptr<LocalBackend>> open(
      const std::string& root, const std::vector<std::string>& allowed,
      ResolveStrategy strategy = ResolveStrategy::kAuto);

  std::string_view kind() const override { return "local"; }
  std::string root() const override { return root_.dir(); }
  Result<std::string> normalize(std::string_view user_path) const override;

  Result<FileInfo> stat(const std::string& key) const override;
  Result<std::string> realKey(const std::string& key) const override;
  Result<std::vector<FileInfo>> list(const std::string& key) const override;
  Status listEach(const std::string& key,
                  const std::function<bool(const FileInfo&)>& visit) const override;
  Status listTyped(const std::string& key, const Detail& detail,
                   const std::function<bool(const FileInfo&)>& visit) const override;
  // Turns the listing cache (see dir_cache.h) on or off; on by default where it can be had.
  void setDirCache(bool on);
  const DirCache* dirCache() const { return cache_.get(); }
  std::optional<Status> listTypedDirect(
      const std::string& key, const Detail& detail,
      const std::function<bool(const FileInfo&)>& visit) const override;
  Result<std::string> read(const std::string& key, uint64_t offset,
                           uint64_t max_bytes) const override;
  Result<WriteOutcome> write(const std::string& key, std::string_view data,
                             WriteMode mode) override;
  Result<bool> makeDir(const std::string& key) override;
  Result<MoveOutcome> move(const std::string& from, const std::string& to, bool replace) override;
  Result<RemoveOutcome> remove(const std::string& key, bool recursive) override;
  // None without a sandbox (bubblewrap missing); under --sandbox none, commands but no Python.
  Executor* executor() override { return sandbox_ ? this : nullptr; }
  bool runsPython() const override { return python_ != nullptr; }
  std::optional<ResourceUse> resourceUse() override {
    return sandbox_ ? sandbox_->resourceUse() : std::nullopt;
  }
  Result<ExecResult> execute(const ExecRequest& request, const CancelToken& cancel) override;
  Result<PythonResult> runPython(const PythonRequest& request, const CancelToken& cancel) override;
  Result<std::vector<std::string>> installPackages(const std::vector<std::string>& names,
                                                   const CancelToken& cancel) override;
  bool installsPackages() const override { return installer_ != nullptr; }
  // The sandbox checked (its helper started) and a spare kernel starting.
  void prepare() override {
    if (sandbox_ && sandbox_->verify().ok() && python_) python_->warm(/*ahead=*/false);
  }
  // Gives the backend its sandbox; without one (or with `why_not` set) execute() refuses and
  // says why.
  void setSandbox(std::unique_ptr<Sandbox> sandbox, std::string why_not = "",
                  PythonOptions python = {});
  // Installs packages on demand into its directory, which the sandbox binds read-only (after
  // setSandbox).
  void setInstaller(std::unique_ptr<PackageInstaller> installer) {
    installer_ = std::move(installer);
  }
  // Starts a spare Python kernel in the background (see PythonSessions::warm).
  void warmPython() {
    if (python_) python_->warm();
  }
  // Absolute symlinks below `mount_point` are read as beneath the root, for a root that a
  // container mounts there (see PathResolver::mapAbsoluteLinks). Before the backend is shared.
  void mapAbsoluteLinks(std::string mount_point) { root_.mapAbsoluteLinks(std::move(mount_point)); }
  // Writes also fsync the file and its directory (see replaceAtomically). Before it is shared.
  void setWriteSync(bool on) { write_sync_ = on; }
  // Every directory a sandboxed process may write: the root and the --allow directories.
  std::vector<std::string> writableDirs() const;

  Status readStream(const std::string& key, size_t chunk_bytes,
                    const std::function<bool(std::string_view)>& sink) const override;

 private:
  // A key split into the resolver that owns it and the path relative to that resolver's base.
  struct Location {
    const PathResolver* resolver;
    std::string rel;
    std::string key;
  };

  LocalBackend(PathResolver root, std::vector<PathResolver> allowed)
      : root_(std::move(root)), allowed_(std::move(allowed)) {}

  Result<Location> locate(std::string_view path) const;
  // Lists the open directory `dir_fd` in full into `cache`, then visits it; nullopt (having
  // read nothing) when the cache cannot keep it.
  std::optional<Status> listAndKeep(DirCache& cache, int dir_fd, const Location& loc,
                                    const std::function<bool(const FileInfo&)>& visit) const;
  // Lists the open directory `dir_fd`, whose key is `key`, as listTyped() does.
  Status listOpen(int dir_fd, const std::string& key, const Detail& detail,
                  const std::function<bool(const FileInfo&)>& visit) const;
  // realKey() with at most `hops` more symlinks followed by hand (dangling ones, see below).
  Result<std::string> realKeyWithin(const std::string& key, int hops) const;
  // The real key of a path that does not exist: its parent's real key and its name, or where
  // a dangling symlink of that name points.
  Result<std::string> missingRealKey(const Location& loc, int hops) const;
  Result<UniqueFd> openRegular(const Location& loc, struct stat* st) const;

  PathResolver root_;
  std::vector<PathResolver> allowed_;
  // Listings of the workspace's directories while inotify reports no change (null where the
  // file system may change without telling, or when turned off).
  std::unique_ptr<DirCache> cache_;
  bool write_sync_ = false;
  std::unique_ptr<Sandbox> sandbox_;
  std::string sandbox_unavailable_;
  std::unique_ptr<PythonSessions> python_;  // after sandbox_: stopped before it
  std::unique_ptr<WorkspaceIndex> index_;   // what the sandbox masks, when it can
  // The sandbox's way out, when its rules may open one, and what judges it: the latest
  // call's policy.
  std::unique_ptr<egress::CallProxy> proxy_;     // when the sandbox has the proxy's port
  std::unique_ptr<PackageInstaller> installer_;  // when packages may be installed
};

}  // namespace byd
