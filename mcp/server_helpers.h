#pragma once
// What the parts of the dispatcher share (server.cpp: dispatch and the session's own methods;
// server_tools.cpp: tools/list and running a tool call with its checks and approvals;
// server_catalog.cpp: the catalog's resources, prompts and completions). Not for use outside
// them.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "mcp/server.h"

namespace byd::mcp::detail {

using nlohmann::json;

// A JSON-RPC id as a map key.
std::string idKey(const json& id);
double msSince(std::chrono::steady_clock::time_point start);
// One page of `items` as {key: [...], nextCursor}. Cursors are opaque to clients; ours are
// "<key>:<index>".
Result<json> page(std::vector<json> items, const std::optional<std::string>& cursor,
                  const std::string& key, size_t page_size);
// What a client at `version` understands of a tool definition: titles and output schemas
// came with 2025-06-18, annotations with 2025-03-26.
json toolForVersion(json tool, const std::string& version);
// The capability a client must have declared to be asked `method`.
const char* capabilityFor(std::string_view method);
// Checks the questions a peer is to ask ({key: {method, params}}): each of a method a client
// can be asked, whose capability the client has (`has`) or whose answer is already there
// (`answered`, with the key and method).
Status checkQuestions(const json& questions, const std::function<bool(const char*)>& has,
                      const std::function<bool(const std::string&, const std::string&)>& answered);

// Details of a Status that errorFor() turns into an error's data.
inline constexpr const char* kCapabilityDetail = "capability";  // the client capability missing
inline constexpr const char* kUriDetail = "uri";                // the unknown resource
Status missingCapability(std::string_view capability, std::string_view method);
Status resourceNotFound(const std::string& uri);

}  // namespace byd::mcp::detail

namespace byd::mcp {

// A stateless subscriptions/listen stream: what it asked for, by notification.
struct Server::Listener {
  json id;
  json honored;  // the subset of its notifications filter the server serves
  std::set<std::string> uris;
  bool active = false;  // acknowledged: notifications may follow
};

}  // namespace byd::mcp
