#pragma once
// libcurl and libarchive, which only the Docker and remote backends use, loaded when it first needs
// them (dlopen of their sonames) instead of at every start: with their dependencies (GnuTLS,
// Kerberos, LDAP, ICU, ...) and those libraries' initialisers they cost about 8 ms of each
// start of the server. The functions are called through these tables, with the argument types
// the libraries declare.

#include <archive.h>
#include <archive_entry.h>
#include <curl/curl.h>

#include "common/result.h"

namespace byd::docker {

struct CurlApi {
  CURL* (*easy_init)();
  void (*easy_cleanup)(CURL*);
  void (*easy_reset)(CURL*);
  CURLcode (*easy_setopt)(CURL*, CURLoption, ...);
  CURLcode (*easy_perform)(CURL*);
  CURLcode (*easy_getinfo)(CURL*, CURLINFO, ...);
  CURLcode (*easy_send)(CURL*, const void*, size_t, size_t*);
  const char* (*easy_strerror)(CURLcode);
  curl_slist* (*slist_append)(curl_slist*, const char*);
  void (*slist_free_all)(curl_slist*);
  // The multi interface: a transfer the caller drives, so that it can stop it at any time.
  CURLM* (*multi_init)();
  CURLMcode (*multi_cleanup)(CURLM*);
  CURLMcode (*multi_add_handle)(CURLM*, CURL*);
  CURLMcode (*multi_remove_handle)(CURLM*, CURL*);
  CURLMcode (*multi_perform)(CURLM*, int*);
  CURLMcode (*multi_poll)(CURLM*, curl_waitfd*, unsigned int, int, int*);
  CURLMsg* (*multi_info_read)(CURLM*, int*);
};

struct ArchiveApi {
  struct archive* (*write_new)();
  int (*write_free)(struct archive*);
  int (*write_set_format_pax_restricted)(struct archive*);
  int (*write_open)(struct archive*, void*, archive_open_callback*, archive_write_callback*,
                    archive_close_callback*);
  int (*write_header)(struct archive*, struct archive_entry*);
  la_ssize_t (*write_data)(struct archive*, const void*, size_t);
  int (*write_close)(struct archive*);
  const char* (*error_string)(struct archive*);
  struct archive_entry* (*entry_new)();
  void (*entry_free)(struct archive_entry*);
  void (*entry_set_pathname)(struct archive_entry*, const char*);
  void (*entry_set_size)(struct archive_entry*, la_int64_t);
  void (*entry_set_filetype)(struct archive_entry*, unsigned int);
  void (*entry_set_perm)(struct archive_entry*, __LA_MODE_T);
  void (*entry_set_mtime)(struct archive_entry*, time_t, long);
};

// The library, loaded (and libcurl initialised) on the first call; an error naming it when it
// cannot be loaded. Thread-safe.
Result<const CurlApi*> curlApi();
Result<const ArchiveApi*> archiveApi();

}  // namespace byd::docker
