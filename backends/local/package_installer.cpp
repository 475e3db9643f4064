#include "backends/local/package_installer.h"

#include <fcntl.h>
#include <sys/file.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <regex>

#include <spdlog/spdlog.h>

#include "backends/egress/address_policy.h"
#include "common/text.h"
#include "common/unique_fd.h"

namespace byd {
namespace {

bool validDistributionName(const std::string& name) {
  // PEP 508's names: letters and digits, with '.', '_' and '-' inside.
  static const std::regex kName("[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?");
  return name.size() <= 200 && std::regex_match(name, kName);
}

class IndexOnly : public egress::NetworkPolicy {
 public:
  explicit IndexOnly(PackageIndex index) : index_(std::move(index)) {}
  bool open() const override { return true; }
  egress::Verdict judge(const std::string& host, uint16_t port) override {
    egress::Verdict v;
    sockaddr_storage literal;
    const bool files = index_.host == "pypi.org" && host == "files.pythonhosted.org" && port == 443;
    if ((host == index_.host && port == index_.port) || files) {
      v.allow = true;
      v.rule = "the package index (" + index_.url + ")";
      v.names_literal = egress::parseAddress(host, port, literal);
    } else {
      v.rule = "the installer reaches only the package index";
      v.reason =
          host + ":" + std::to_string(port) + " is not the package index (" + index_.url + ")";
    }
    return v;
  }

 private:
  const PackageIndex index_;
};

// The last `lines` lines of `text`.
std::string tail(const std::string& text, size_t lines) {
  size_t at = text.size();
  while (at > 0 && text[at - 1] == '\n') --at;
  for (size_t n = 0; at > 0 && n < lines; ++n) {
    at = text.rfind('\n', at - 1);
    if (at == std::string::npos) return text;
  }
  return text.substr(at + 1);
}

}  // namespace

Result<PackageIndex> parsePackageIndex(const std::string& url) {
  static const std::regex kUrl(
      R"((https?)://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:[0-9]{1,5})?(/[^\s]*)?)");
  std::smatch m;
  if (!std::regex_match(url, m, kUrl)) {
    return invalidArgument("--package-index: '" + url + "'" +
                           " is not an http:// or https:// URL with a host name");
  }
  PackageIndex index;
  index.url = url;
  while (index.url.ends_with('/')) index.url.pop_back();
  index.host = m[2].str();
  std::transform(index.host.begin(), index.host.end(), index.host.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (index.host.starts_with('[')) index.host = index.host.substr(1, index.host.size() - 2);
  const int port = m[3].matched ? std::atoi(m[3].str().c_str() + 1) : (m[1] == "https" ? 443 : 80);
  if (port < 1 || port > 65535) {
    return invalidArgument("--package-index: port " + std::to_string(port) + " is out of range");
  }
  index.port = static_cast<uint16_t>(port);
  return index;
}

std::string defaultPackagesDir() {
  const char* cache = getenv("XDG_CACHE_HOME");
  const char* home = getenv("HOME");
  std::string base = cache && *cache == '/' ? std::string(cache)
                     : home && *home == '/' ? std::string(home) + "/.cache"
                                            : std::string("/var/cache");
  return base + "/backyard-mcp/python-packages";
}

std::shared_ptr<egress::NetworkPolicy> indexOnlyPolicy(const PackageIndex& index) {
  return std::make_shared<IndexOnly>(index);
}

std::vector<std::string> installedByPip(const std::string& output) {
  std::vector<std::string> out;
  static const std::string kMark = "Successfully installed ";
  for (size_t at = output.find(kMark); at != std::string::npos; at = output.find(kMark, at + 1)) {
    if (at > 0 && output[at - 1] != '\n') continue;
    const size_t end = output.find('\n', at);
    for (const std::string& item :
         splitList(output.substr(at + kMark.size(), end - at - kMark.size()), ' ')) {
      // "name-version": names may hold '-', versions may not.
      const size_t dash = item.rfind('-');
      out.push_back(dash == std::string::npos ? item
                                              : item.substr(0, dash) + " " + item.substr(dash + 1));
    }
  }
  return out;
}

namespace {

class LocalInstaller : public PackageInstaller {
 public:
  LocalInstaller(std::unique_ptr<Sandbox> sandbox, std::string dir, PackageIndex index,
                 std::string python)
      : PackageInstaller(dir, dir, std::move(index), std::move(python)),
        sandbox_(std::move(sandbox)),
        proxy_(std::make_unique<egress::CallProxy>()) {
    sandbox_->setProxyListener([this](UniqueFd listener) {
      if (Status s = proxy_->serve(std::move(listener)); !s.ok()) {
        spdlog::warn("package installer: {}", s.message());
      }
    });
  }
  ~LocalInstaller() override {
    sandbox_.reset();  // its helper first: the proxy it reaches goes next
    proxy_.reset();
  }

 protected:
  Result<ExecResult> run(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                         std::shared_ptr<egress::NetworkPolicy> network,
                         std::chrono::milliseconds timeout, const CancelToken& cancel) override {
    BYD_RETURN_IF_ERROR(sandbox_->verify());
    RunRequest run;
    run.argv = argv;
    run.cwd = "/tmp";
    run.env = {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8", "TERM=dumb"};
    run.env.insert(run.env.end(), env.begin(), env.end());
    for (std::string& v : egress::proxyEnvironment(sandbox_->proxyPort())) {
      run.env.push_back(std::move(v));
    }
    run.timeout = timeout;
    run.max_output = 1 << 20;
    proxy_->take(network);
    return sandbox_->run(run, cancel);
  }

 private:
  std::unique_ptr<Sandbox> sandbox_;
  std::unique_ptr<egress::CallProxy> proxy_;
};

}  // namespace

PackageInstaller::PackageInstaller(std::string lock_dir, std::string target, PackageIndex index,
                                   std::string python)
    : lock_dir_(std::move(lock_dir)),
      target_(std::move(target)),
      index_(std::move(index)),
      python_(std::move(python)) {}

std::unique_ptr<PackageInstaller> PackageInstaller::local(std::unique_ptr<Sandbox> sandbox,
                                                          std::string dir, PackageIndex index,
                                                          std::string python) {
  return std::make_unique<LocalInstaller>(std::move(sandbox), std::move(dir), std::move(index),
                                          std::move(python));
}

Result<std::vector<std::string>> PackageInstaller::install(const std::vector<std::string>& names,
                                                           const CancelToken& cancel) {
  if (names.empty()) return std::vector<std::string>{};
  std::string listed;
  for (const std::string& name : names) {
    if (!validDistributionName(name)) {
      return invalidArgument("'" + name + "' is not a distribution's name");
    }
    listed += (listed.empty() ? "" : ", ") + name;
  }
  std::lock_guard lock(mu_);
  // Servers sharing the directory install one at a time too.
  // The directory itself: a file in it could be a link that pip's builds planted.
  UniqueFd lock_file(open(lock_dir_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!lock_file.valid() || flock(lock_file.get(), LOCK_EX) != 0) {
    return internalError("cannot lock " + lock_dir_ + ": " + std::string(strerror(errno)));
  }
  // -I: nothing installed in the directory (a `pip` of its own) stands in for pip.
  std::vector<std::string> argv = {python_,
                                   "-I",
                                   "-m",
                                   "pip",
                                   "install",
                                   "--target",
                                   target_,
                                   "--index-url",
                                   index_.url + "/",
                                   "--no-cache-dir",
                                   "--disable-pip-version-check",
                                   "--no-input",
                                   "--progress-bar",
                                   "off"};
  // A plain-http index the operator named is meant: pip would otherwise ignore it.
  if (index_.url.starts_with("http://")) argv.insert(argv.end(), {"--trusted-host", index_.host});
  argv.insert(argv.end(), names.begin(), names.end());
  constexpr auto kTimeout = std::chrono::minutes(10);
  spdlog::info("installing {} from {}", listed, index_.url);
  BYD_ASSIGN_OR_RETURN(ExecResult r,
                       run(argv, {"PYTHONNOUSERSITE=1", "PIP_ROOT_USER_ACTION=ignore"},
                           indexOnlyPolicy(index_), kTimeout, cancel));
  if (r.cancelled) return cancelled("cancelled while installing " + listed);
  if (r.timed_out) {
    return Status(Code::kDeadlineExceeded, "installing " + listed + " took over 10 minutes");
  }
  if (r.exit_code != 0) {
    return failedPrecondition("could not install " + listed + " from " + index_.url +
                              " (pip exited with status " + std::to_string(r.exit_code) + "):\n" +
                              tail(r.stderr_data.empty() ? r.stdout_data : r.stderr_data, 25));
  }
  return installedByPip(r.stdout_data);
}

}  // namespace byd
