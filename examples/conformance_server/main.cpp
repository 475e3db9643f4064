// backyard-conformance: an MCP server over Streamable HTTP that serves the fixtures of the
// official conformance suite (fixtures.cpp) from the same mcp/ library, transport and
// dispatcher as backyard-mcp. It listens on loopback only.
//   backyard-conformance [--port N] [--log-level LEVEL]
// The address goes to stderr once the socket is bound: "... at http://127.0.0.1:PORT/mcp".

#include <signal.h>

#include <cstdio>
#include <memory>

#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include "backends/state/state_backend.h"
#include "common/logging.h"
#include "examples/conformance_server/fixtures.h"
#include "mcp/http_server.h"

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  CLI::App app("MCP server with the fixtures of the official conformance suite",
               "backyard-conformance");
  int port = 0;
  std::string log_level = "warn";
  app.add_option("--port", port, "TCP port on 127.0.0.1 (0: any free port)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error or off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  CLI11_PARSE(app, argc, argv);
  byd::setUpLogging("backyard-conformance", log_level);
  byd::mcp::blockStopSignals();

  byd::mcp::HttpOptions http;
  http.host = "127.0.0.1";
  http.port = port;
  http.version = "1.0.0";
  byd::mcp::ServerOptions options;
  options.name = "backyard-conformance";
  options.title = "backyard-mcp conformance fixtures";
  options.version = "1.0.0";
  options.instructions = "Fixture tools, resources and prompts for the MCP conformance suite.";
  options.catalog = byd::conformance::fixtureCatalog();
  // The fixtures need no files; each session still gets a backend of its own (in memory).
  byd::mcp::SessionFactory factory =
      [](const byd::mcp::Tenant&,
         const byd::mcp::SessionAsk&) -> byd::Result<byd::mcp::SessionBackend> {
    auto backend = std::make_shared<byd::StateBackend>();
    return byd::mcp::SessionBackend{backend.get(), backend, ""};
  };
  byd::mcp::HttpServer server(http, factory, byd::Limits{}, options, nullptr);
  if (byd::Status s = server.bind(); !s.ok()) {
    fprintf(stderr, "backyard-conformance: %s\n", s.message().c_str());
    return 1;
  }
  fprintf(stderr,
          "backyard-conformance: serving the conformance fixtures at http://127.0.0.1:%d/mcp\n",
          server.port());
  byd::Status run = byd::mcp::runUntilStopSignal(server, nullptr);
  if (!run.ok()) {
    spdlog::error("{}", run.message());
    return 1;
  }
  return 0;
}
