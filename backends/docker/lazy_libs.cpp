#include "backends/docker/lazy_libs.h"

#include "common/lazy_library.h"

namespace byd::docker {
namespace {

constexpr const char* kUser = "the Docker and remote backends";

bool bindCurl(void* lib, CurlApi& api) {
  CURLcode (*global_init)(long) = nullptr;
  const bool ok = bindSymbol(lib, "curl_global_init", global_init) &&
                  bindSymbol(lib, "curl_easy_init", api.easy_init) &&
                  bindSymbol(lib, "curl_easy_cleanup", api.easy_cleanup) &&
                  bindSymbol(lib, "curl_easy_reset", api.easy_reset) &&
                  bindSymbol(lib, "curl_easy_setopt", api.easy_setopt) &&
                  bindSymbol(lib, "curl_easy_perform", api.easy_perform) &&
                  bindSymbol(lib, "curl_easy_getinfo", api.easy_getinfo) &&
                  bindSymbol(lib, "curl_easy_send", api.easy_send) &&
                  bindSymbol(lib, "curl_easy_strerror", api.easy_strerror) &&
                  bindSymbol(lib, "curl_slist_append", api.slist_append) &&
                  bindSymbol(lib, "curl_slist_free_all", api.slist_free_all) &&
                  bindSymbol(lib, "curl_multi_init", api.multi_init) &&
                  bindSymbol(lib, "curl_multi_cleanup", api.multi_cleanup) &&
                  bindSymbol(lib, "curl_multi_add_handle", api.multi_add_handle) &&
                  bindSymbol(lib, "curl_multi_remove_handle", api.multi_remove_handle) &&
                  bindSymbol(lib, "curl_multi_perform", api.multi_perform) &&
                  bindSymbol(lib, "curl_multi_poll", api.multi_poll) &&
                  bindSymbol(lib, "curl_multi_info_read", api.multi_info_read);
  if (ok) global_init(CURL_GLOBAL_DEFAULT);
  return ok;
}

bool bindArchive(void* lib, ArchiveApi& api) {
  return bindSymbol(lib, "archive_write_new", api.write_new) &&
         bindSymbol(lib, "archive_write_free", api.write_free) &&
         bindSymbol(lib, "archive_write_set_format_pax_restricted",
                    api.write_set_format_pax_restricted) &&
         bindSymbol(lib, "archive_write_open", api.write_open) &&
         bindSymbol(lib, "archive_write_header", api.write_header) &&
         bindSymbol(lib, "archive_write_data", api.write_data) &&
         bindSymbol(lib, "archive_write_close", api.write_close) &&
         bindSymbol(lib, "archive_error_string", api.error_string) &&
         bindSymbol(lib, "archive_entry_new", api.entry_new) &&
         bindSymbol(lib, "archive_entry_free", api.entry_free) &&
         bindSymbol(lib, "archive_entry_set_pathname", api.entry_set_pathname) &&
         bindSymbol(lib, "archive_entry_set_size", api.entry_set_size) &&
         bindSymbol(lib, "archive_entry_set_filetype", api.entry_set_filetype) &&
         bindSymbol(lib, "archive_entry_set_perm", api.entry_set_perm) &&
         bindSymbol(lib, "archive_entry_set_mtime", api.entry_set_mtime);
}

}  // namespace

Result<const CurlApi*> curlApi() {
  return loadLibraryOnce<CurlApi>("libcurl.so.4", bindCurl, kUser, "libcurl4");
}

Result<const ArchiveApi*> archiveApi() {
  return loadLibraryOnce<ArchiveApi>("libarchive.so.13", bindArchive, kUser, "libarchive13");
}

}  // namespace byd::docker
