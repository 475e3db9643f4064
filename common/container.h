#pragma once
// Whether this process runs inside a container or a pod, which --sandbox container takes as the
// isolation boundary instead of a sandbox of its own.

#include <functional>
#include <string>

namespace byd {

// What shows that the file system at `root` and the environment `env` (a getenv) belong to a
// container: "/.dockerenv" (Docker, with runc or gVisor), "/run/.containerenv" (Podman),
// "KUBERNETES_SERVICE_HOST" (a Kubernetes pod) or "container=NAME" (systemd-nspawn, LXC,
// Podman); "" when nothing does.
std::string containerEvidence(const std::string& root = "/",
                              const std::function<const char*(const char*)>& env = nullptr);

}  // namespace byd
