// Loads the embedded HTTP module (see serve_http.h) and enters it.

#include <dlfcn.h>
#include <sys/mman.h>

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "common/unique_fd.h"
#include "serve_http.h"

namespace byd {

extern const unsigned char kHttpModule[];
extern const size_t kHttpModule_size;

namespace {

Status systemError(const std::string& what) { return internalError(what + ": " + strerror(errno)); }

using Entry = int (*)(const Config*, const permissions::Guard*);

// The module's entry point, or an error saying why it cannot be had.
Result<Entry> loadHttpModule() {
  const UniqueFd fd(memfd_create("backyard-mcp-http", MFD_CLOEXEC));
  if (!fd.valid()) return systemError("memfd_create for the HTTP module");
  size_t done = 0;
  while (done < kHttpModule_size) {
    const ssize_t n = write(fd.get(), kHttpModule + done, kHttpModule_size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return systemError("writing the HTTP module to its memfd");
    done += static_cast<size_t>(n);
  }
  // The module's own references resolve against this binary's exported symbols first.
  const std::string path = "/proc/self/fd/" + std::to_string(fd.get());
  void* module = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (module == nullptr) {
    return failedPrecondition(std::string("the HTTP transport cannot be loaded: ") + dlerror() +
                              " (it needs libcpp-httplib0.11 and /proc mounted)");
  }
  auto entry = reinterpret_cast<Entry>(dlsym(module, "byd_serve_http"));
  if (entry == nullptr) return internalError("the HTTP module has no entry point");
  return entry;
}

}  // namespace

int serveHttp(const Config& config, const permissions::Guard& guard) {
  auto entry = loadHttpModule();
  if (!entry.ok()) {
    fprintf(stderr, "backyard-mcp: %s\n", entry.status().message().c_str());
    return 1;
  }
  return (*entry)(&config, &guard);
}

}  // namespace byd
