// Packages on demand for the Docker backend: pip runs as the container's user in a container
// of a backend of its own, whose workspace (/workspace) is the packages directory and whose
// only way out is the server's proxy, judged to reach the package index alone. The containers
// of code mount that directory read-only (DockerOptions::packages_dir).

#include "backends/docker/docker_backend.h"

namespace byd {
namespace {

std::string shellQuote(const std::string& word) {
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

class DockerInstaller : public PackageInstaller {
 public:
  DockerInstaller(std::unique_ptr<DockerBackend> box, std::string host_dir, PackageIndex index,
                  std::string python)
      : PackageInstaller(std::move(host_dir), std::string(kContainerWorkspace), std::move(index),
                         std::move(python)),
        box_(std::move(box)) {}

 protected:
  Result<ExecResult> run(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                         std::shared_ptr<egress::NetworkPolicy> network,
                         std::chrono::milliseconds timeout, const CancelToken& cancel) override {
    ExecRequest request;
    for (const std::string& word : argv) {
      request.command += (request.command.empty() ? "" : " ") + shellQuote(word);
    }
    for (const std::string& variable : env) {
      const size_t eq = variable.find('=');
      request.env.emplace_back(variable.substr(0, eq), variable.substr(eq + 1));
    }
    request.timeout = timeout;
    request.max_output = 1 << 20;
    request.network = std::move(network);
    return box_->execute(request, cancel);
  }

 private:
  std::unique_ptr<DockerBackend> box_;
};

}  // namespace

std::unique_ptr<PackageInstaller> dockerPackageInstaller(std::unique_ptr<DockerBackend> box,
                                                         std::string host_dir, PackageIndex index,
                                                         std::string python) {
  return std::make_unique<DockerInstaller>(std::move(box), std::move(host_dir), std::move(index),
                                           std::move(python));
}

}  // namespace byd
