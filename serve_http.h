#pragma once
// Serving MCP over HTTP, from a module that ships inside the binary. The HTTP transport and the
// libraries under it (cpp-httplib, and through it OpenSSL, zlib and brotli) are half of the
// shared libraries the server would load, and loading them cost more than everything else in a
// start; a server on stdio never needs them. So mcp/http_*.cpp and serve_http.cpp are linked
// into a shared module, embedded in the binary (as byd-enter is), and --transport http loads it
// from a memfd. The module takes everything else (the dispatcher, the tools, the backends) from
// the binary, which exports its symbols for it.

#include "config.h"
#include "permissions/guard.h"

namespace byd {

// Serves MCP over HTTP until SIGTERM or SIGINT; the process's exit code. Each session opens a
// backend of its own; the one opened at start, which checks the configuration, serves the first
// session. Loads the module first; when it cannot be loaded, says why and returns 1.
int serveHttp(const Config& config, const permissions::Guard& guard);

}  // namespace byd

// The module's entry point, looked up by name once the module is loaded.
extern "C" int byd_serve_http(const byd::Config* config, const byd::permissions::Guard* guard);
