#include <algorithm>

#include "mcp/server.h"
#include "mcp/server_helpers.h"
#include "tools/tool.h"

// The dispatcher's side of --backend remote: a console tool's call sent to the remote, and
// what the remote sends back while it runs relayed to this client.

namespace byd::mcp {

using namespace detail;

RemoteCall Server::remoteCall(const Caller& caller, const json& progress_token,
                              const std::string& tool) {
  RemoteCall call;
  call.cancel = caller.cancel;
  // The remote session is this session's: it declares what this session's client declared
  // (ask() below refuses a question where this call's asker cannot answer it).
  call.capabilities = sessionCaller().capabilities;
  call.progress = progressReporter(progress_token);
  call.log = [this, caller, tool](const json& params) {
    const auto field = [&params](const char* key) {
      auto it = params.find(key);
      return it != params.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    const std::string level = field("level");
    auto it = std::find(kLogLevels.begin(), kLogLevels.end(), level);
    if (it == kLogLevels.end()) return;
    const std::string logger = field("logger");
    logToClient(static_cast<int>(it - kLogLevels.begin()),
                params.contains("data") ? params["data"] : json(), caller,
                logger.empty() ? tool : logger);
  };
  call.ask = [this, caller](const std::string& method, const json& params) -> Result<json> {
    const char* capability = capabilityFor(method);
    if (capability == nullptr || caller.stateless || fromOperatorPage() ||
        !caller.has(capability)) {
      return unimplemented("the client does not answer " + method);
    }
    return client_requests_.call(method, params, options_.ask_timeout, caller.cancel);
  };
  return call;
}

Result<json> Server::forwardToolCall(const CallToolParams& p, const Caller& caller,
                                     bool structured) {
  // This server's ceiling of a call's timeout (its tenant's, its runtime's) holds before the
  // call leaves; the remote holds its own.
  if (p.arguments.is_object() && p.arguments.contains("timeout_s")) {
    if (auto asked = argTimeout(p.arguments, 0, limits_); !asked.ok()) {
      return json{{"content", {{{"type", "text"}, {"text", asked.status().message()}}}},
                  {"isError", true}};
    }
  }
  return options_.remote->callTool(p.name, p.arguments,
                                   remoteCall(caller, p.progress_token, p.name), structured);
}

}  // namespace byd::mcp
