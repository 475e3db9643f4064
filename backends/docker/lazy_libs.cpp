#include "backends/docker/lazy_libs.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

namespace byd::docker {
namespace {

// Looks `name` up in `lib` into `fn`; false when it is missing.
template <typename Fn>
bool bind(void* lib, const char* name, Fn*& fn) {
  fn = reinterpret_cast<Fn*>(dlsym(lib, name));
  return fn != nullptr;
}

Status cannotLoad(const char* soname, const std::string& why) {
  return failedPrecondition(std::string("the Docker backend needs ") + soname + ", which " + why +
                            " (Debian: apt-get install libcurl4 libarchive13)");
}

// Opens `soname` and fills the table with `bind_all`, once; its outcome, every time (the
// statics are the table type's own).
template <typename Api>
Result<const Api*> loadOnce(const char* soname, bool (*bind_all)(void*, Api&)) {
  static std::once_flag once;
  static Api api;
  static Status status;
  std::call_once(once, [&] {
    void* lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      status = cannotLoad(soname, std::string("cannot be loaded: ") + dlerror());
    } else if (!bind_all(lib, api)) {
      status = cannotLoad(soname, std::string("lacks a function: ") + dlerror());
    }
  });
  if (!status.ok()) return status;
  return &api;
}

bool bindCurl(void* lib, CurlApi& api) {
  CURLcode (*global_init)(long) = nullptr;
  const bool ok = bind(lib, "curl_global_init", global_init) &&
                  bind(lib, "curl_easy_init", api.easy_init) &&
                  bind(lib, "curl_easy_cleanup", api.easy_cleanup) &&
                  bind(lib, "curl_easy_setopt", api.easy_setopt) &&
                  bind(lib, "curl_easy_perform", api.easy_perform) &&
                  bind(lib, "curl_easy_getinfo", api.easy_getinfo) &&
                  bind(lib, "curl_easy_send", api.easy_send) &&
                  bind(lib, "curl_easy_strerror", api.easy_strerror) &&
                  bind(lib, "curl_slist_append", api.slist_append) &&
                  bind(lib, "curl_slist_free_all", api.slist_free_all);
  if (ok) global_init(CURL_GLOBAL_DEFAULT);
  return ok;
}

bool bindArchive(void* lib, ArchiveApi& api) {
  return bind(lib, "archive_write_new", api.write_new) &&
         bind(lib, "archive_write_free", api.write_free) &&
         bind(lib, "archive_write_set_format_pax_restricted",
              api.write_set_format_pax_restricted) &&
         bind(lib, "archive_write_open", api.write_open) &&
         bind(lib, "archive_write_header", api.write_header) &&
         bind(lib, "archive_write_data", api.write_data) &&
         bind(lib, "archive_write_close", api.write_close) &&
         bind(lib, "archive_error_string", api.error_string) &&
         bind(lib, "archive_entry_new", api.entry_new) &&
         bind(lib, "archive_entry_free", api.entry_free) &&
         bind(lib, "archive_entry_set_pathname", api.entry_set_pathname) &&
         bind(lib, "archive_entry_set_size", api.entry_set_size) &&
         bind(lib, "archive_entry_set_filetype", api.entry_set_filetype) &&
         bind(lib, "archive_entry_set_perm", api.entry_set_perm) &&
         bind(lib, "archive_entry_set_mtime", api.entry_set_mtime);
}

}  // namespace

Result<const CurlApi*> curlApi() { return loadOnce<CurlApi>("libcurl.so.4", bindCurl); }

Result<const ArchiveApi*> archiveApi() {
  return loadOnce<ArchiveApi>("libarchive.so.13", bindArchive);
}

}  // namespace byd::docker
