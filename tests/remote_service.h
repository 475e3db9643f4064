#pragma once
// A backyard-mcp HTTP service in the test's process, serving a backend the test made, and a
// RemoteClient on it: the tool suites call their tools through it as --backend remote does
// (the same HTTP server, dispatcher and client as the binary's, over a real loopback socket).

#include <memory>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "mcp/http_server.h"
#include "mcp/remote_client.h"
#include "tools/tool.h"

namespace byd::testing {

class RemoteService {
 public:
  // Serves `backend` (which must outlive this) to every session, with no rules.
  explicit RemoteService(Backend& backend, Limits limits = {}) {
    mcp::HttpOptions http;
    http.host = "127.0.0.1";
    http.port = 0;
    http.token = "remote-service-token";
    mcp::SessionFactory factory =
        [&backend](const mcp::Tenant&, const mcp::SessionAsk&) -> Result<mcp::SessionBackend> {
      return mcp::SessionBackend{&backend, nullptr, ""};
    };
    server_ =
        std::make_unique<mcp::HttpServer>(http, factory, limits, mcp::ServerOptions{}, nullptr);
    bound_ = server_->bind();
    if (bound_.ok()) thread_ = std::thread([this] { (void)server_->run(); });
    mcp::RemoteOptions remote;
    remote.url = "http://127.0.0.1:" + std::to_string(server_->port()) + "/mcp";
    remote.token = http.token;
    client_ = std::make_unique<mcp::RemoteClient>(remote);
  }
  ~RemoteService() {
    client_.reset();  // ends its session while the server still serves
    if (thread_.joinable()) {
      server_->stop();
      thread_.join();
    }
  }
  const Status& bound() const { return bound_; }

  // A tool called through the client as the front calls it: the progress and cancellation of
  // `ctx` travel to the service and back, and a failure of the call is a tool error, as
  // callTool() makes one.
  nlohmann::json call(const std::string& name, const nlohmann::json& args, ToolContext& ctx,
                      bool structured) {
    mcp::RemoteCall call;
    call.cancel = ctx.cancel;
    if (ctx.progress) {
      call.progress = [&ctx](double progress, std::optional<double>, std::string message) {
        ctx.progress(progress, std::move(message));
      };
    }
    Result<nlohmann::json> r = client_->callTool(name, args, call, structured);
    if (r.ok()) return *r;
    return {{"content", {{{"type", "text"}, {"text", r.status().message()}}}}, {"isError", true}};
  }

 private:
  std::unique_ptr<mcp::HttpServer> server_;
  Status bound_;
  std::thread thread_;
  std::unique_ptr<mcp::RemoteClient> client_;
};

}  // namespace byd::testing
