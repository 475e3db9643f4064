#pragma once
// Shared libraries that only some paths of the server use (libcurl and libarchive for Docker,
// libcrypto for signed request state), loaded by their soname when first needed instead of at
// every start: each library linked in costs the dynamic loader its mappings, relocations and
// initialisers at every spawn. Their functions are called through a table of pointers that the
// caller fills with bindSymbol(), with the types the library's headers declare.

#include <dlfcn.h>

#include <mutex>
#include <string>

#include "common/result.h"

namespace byd {

// Looks `name` up in `lib` into `fn`; false when it is missing.
template <typename Fn>
bool bindSymbol(void* lib, const char* name, Fn*& fn) {
  fn = reinterpret_cast<Fn*>(dlsym(lib, name));
  return fn != nullptr;
}

// Opens `soname` and fills the table with `bind_all`, once per table type; the outcome, every
// time. A failure names `user` (what needs the library) and the Debian `package` that holds it.
// Thread-safe.
template <typename Api>
Result<const Api*> loadLibraryOnce(const char* soname, bool (*bind_all)(void*, Api&),
                                   const char* user, const char* package) {
  static std::once_flag once;
  static Api api;
  static Status status;
  std::call_once(once, [&] {
    const auto cannot = [&](const std::string& why) {
      return failedPrecondition(std::string(user) + " needs " + soname + ", which " + why +
                                " (Debian: apt-get install " + package + ")");
    };
    void* lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      status = cannot(std::string("cannot be loaded: ") + dlerror());
    } else if (!bind_all(lib, api)) {
      status = cannot(std::string("lacks a function: ") + dlerror());
    }
  });
  if (!status.ok()) return status;
  return &api;
}

}  // namespace byd
