#include "common/container.h"

#include <unistd.h>

#include <cstdlib>

namespace byd {

std::string containerEvidence(const std::string& root,
                              const std::function<const char*(const char*)>& env) {
  const auto get = [&](const char* name) -> const char* {
    return env ? env(name) : std::getenv(name);
  };
  const std::string base = root.ends_with('/') ? root.substr(0, root.size() - 1) : root;
  for (const char* marker : {"/.dockerenv", "/run/.containerenv"}) {
    if (access((base + marker).c_str(), F_OK) == 0) return marker;
  }
  if (const char* k8s = get("KUBERNETES_SERVICE_HOST"); k8s && *k8s) {
    return "KUBERNETES_SERVICE_HOST";
  }
  if (const char* name = get("container"); name && *name) return std::string("container=") + name;
  return "";
}

}  // namespace byd
