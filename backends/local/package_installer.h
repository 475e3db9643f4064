#pragma once
// Python packages installed on demand (run_python's ModuleNotFoundError, judged by the
// ruleset's `install` operation): one directory per server, on every kernel's and command's
// import path and bound read-only into their sandboxes, written only by the installer. The
// installer runs `python -m pip install --target DIR` in a sandbox of its own whose only
// writable directory is DIR and whose only way out is a proxy that lets it reach the package
// index's host (and, for PyPI, the host its files are served from), nothing else. Installs
// are one at a time (also across servers sharing DIR: a lock file). Thread-safe.

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

class PackageInstaller {
 public:
  // `sandbox` has `dir` as its only writable directory and a proxy port.
  PackageInstaller(std::unique_ptr<Sandbox> sandbox, std::string dir, PackageIndex index,
                   std::string python);
  ~PackageInstaller();

  // Installs `names` (distribution names, checked here) into the directory.
  Result<std::vector<std::string>> install(const std::vector<std::string>& names,
                                           const CancelToken& cancel);
  const std::string& dir() const { return dir_; }

 private:
  std::unique_ptr<Sandbox> sandbox_;
  const std::string dir_;
  const PackageIndex index_;
  const std::string python_;
  std::unique_ptr<egress::CallProxy> proxy_;
  std::mutex mu_;  // one install at a time
};

}  // namespace byd
