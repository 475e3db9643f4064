#pragma once
// MCP protocol revisions this server speaks, and the typed params of the methods it serves.
// Params are parsed from untrusted JSON in exactly one place (protocol.cpp) and never throw.
// Pure data and functions; safe from any thread.

#include <array>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace byd::mcp {

using nlohmann::json;

// Oldest first; the last one is the latest.
inline constexpr std::array<std::string_view, 4> kProtocolVersions = {"2024-11-05", "2025-03-26",
                                                                      "2025-06-18", "2025-11-25"};

// The client's version when we speak it, else our latest.
std::string negotiateVersion(std::string_view requested);
// True when `version` is at least `since` (both known revision strings, which sort as dates).
inline bool atLeast(std::string_view version, std::string_view since) { return version >= since; }

struct InitializeParams {
  std::string protocol_version;
  std::string client_name;
  std::string client_version;
  json capabilities = json::object();  // as the client declared them
};

// A retried request's answers to an InputRequiredResult (2026-07-28): tools/call, prompts/get.
struct InputResponses {
  json responses;                            // {key: result}; null when absent
  std::optional<std::string> request_state;  // as the server issued it
};

// tools/list, resources/list, resources/templates/list, prompts/list.
struct ListParams {
  std::optional<std::string> cursor;
};

// resources/read, resources/subscribe, resources/unsubscribe.
struct UriParams {
  std::string uri;
};

struct GetPromptParams {
  std::string name;
  std::map<std::string, std::string> arguments;
  InputResponses input;
};

struct CompleteParams {
  json ref;  // {"type": "ref/prompt", "name": ...} or {"type": "ref/resource", "uri": ...}
  std::string argument;
  std::string value;
  json context = json::object();  // {"arguments": {...}} already filled in, from 2025-06-18
};

struct CallToolParams {
  std::string name;
  json arguments = json::object();
  json progress_token;  // params._meta.progressToken, null when absent
  InputResponses input;
};

struct SetLevelParams {
  int level = 0;  // index into kLogLevels
};

struct CancelledParams {
  json request_id;
};

// RFC 5424 severities as MCP names them, least severe first.
inline constexpr std::array<std::string_view, 8> kLogLevels = {
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"};

Result<InitializeParams> parseInitialize(const json& params);
Result<ListParams> parseList(const json& params);
Result<CallToolParams> parseCallTool(const json& params);
Result<SetLevelParams> parseSetLevel(const json& params);
Result<CancelledParams> parseCancelled(const json& params);
Result<UriParams> parseUri(const json& params);
Result<GetPromptParams> parseGetPrompt(const json& params);
Result<CompleteParams> parseComplete(const json& params);

}  // namespace byd::mcp
