#pragma once
// Python packages installed on demand (run_python's ModuleNotFoundError, judged by the
// ruleset's `install` operation): one directory per server (per image on Docker), on every
// kernel's and command's import path and mounted read-only into their sandboxes or
// containers, written only by the installer. The installer runs `python -m pip install
// --target DIR` in a sandbox (a container) of its own whose only writable directory is DIR
// and whose only way out is a proxy that lets it reach the package index's host (and, for
// PyPI, the host its files are served from), nothing else. Installs are one at a time (also
// across servers sharing DIR: a lock file). Thread-safe.

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "backends/egress/network_policy.h"
#include "backends/local/sandbox.h"
#include "common/cancel.h"
#include "common/result.h"

namespace byd {

inline constexpr const char* kDefaultPackageIndex = "https://pypi.org/simple";

// A package index's address, as --package-index gives it.
struct PackageIndex {
  std::string url;   // as given, without a trailing slash
  std::string host;  // lower-case; an IPv6 literal without brackets
  uint16_t port = 0;
};
// Parses an http:// or https:// URL with a host; an error says what is wrong with it.
Result<PackageIndex> parsePackageIndex(const std::string& url);

// The directory packages go to when --python-packages is not given:
// $XDG_CACHE_HOME/backyard-mcp/python-packages (or ~/.cache/...).
std::string defaultPackagesDir();

// What the installer's pip may reach: the index's host and port, PyPI's file host when the
// index is PyPI's, nothing else. Exposed for tests.
std::shared_ptr<egress::NetworkPolicy> indexOnlyPolicy(const PackageIndex& index);

// The names and versions in pip's "Successfully installed a-1.0 b_c-2.0" line(s):
// {"a 1.0", "b_c 2.0"}.
std::vector<std::string> installedByPip(const std::string& output);

// Runs pip where packages go and says what it installed. Subclasses run it: in a sandbox of
// the Local backend (local()), in a container of the Docker backend.
class PackageInstaller {
 public:
  // `lock_dir`: the directory on this machine (its .lock file keeps servers that share it one
  // install at a time); `target`: that directory as pip sees it.
  PackageInstaller(std::string lock_dir, std::string target, PackageIndex index,
                   std::string python);
  virtual ~PackageInstaller() = default;

  // One whose pip runs in `sandbox` (with `dir` as its only writable directory and a proxy
  // port), into `dir`.
  static std::unique_ptr<PackageInstaller> local(std::unique_ptr<Sandbox> sandbox, std::string dir,
                                                 PackageIndex index, std::string python);

  // Installs `names` (distribution names, checked here) into the directory.
  Result<std::vector<std::string>> install(const std::vector<std::string>& names,
                                           const CancelToken& cancel);
  // The directory as pip sees it.
  const std::string& target() const { return target_; }

 protected:
  // Runs `argv` (pip) with `env` added to a plain environment, its network judged by
  // `network`, to its end or `timeout`.
  virtual Result<ExecResult> run(const std::vector<std::string>& argv,
                                 const std::vector<std::string>& env,
                                 std::shared_ptr<egress::NetworkPolicy> network,
                                 std::chrono::milliseconds timeout, const CancelToken& cancel) = 0;

 private:
  const std::string lock_dir_, target_;
  const PackageIndex index_;
  const std::string python_;
  std::mutex mu_;  // one install at a time
};

}  // namespace byd
