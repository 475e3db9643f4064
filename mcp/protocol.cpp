#include "mcp/protocol.h"

#include <algorithm>

namespace byd::mcp {
namespace {

// params may be absent (null) for methods whose fields are all optional.
Status requireObject(const json& params, bool allow_missing) {
  if (params.is_object() || (allow_missing && params.is_null())) return okStatus();
  return invalidArgument(params.is_null() ? "params are required" : "params must be an object");
}

// Reads an optional string member; an existing member of another type is an error.
Status optionalString(const json& obj, std::string_view key, std::string* out) {
  if (!obj.is_object()) return okStatus();
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return okStatus();
  if (!it->is_string()) return invalidArgument(std::string(key) + " must be a string");
  *out = it->get<std::string>();
  return okStatus();
}

}  // namespace

std::string negotiateVersion(std::string_view requested) {
  auto it = std::find(kProtocolVersions.begin(), kProtocolVersions.end(), requested);
  return std::string(it != kProtocolVersions.end() ? *it : kProtocolVersions.back());
}

Result<InitializeParams> parseInitialize(const json& params) {
  BYD_RETURN_IF_ERROR(requireObject(params, false));
  InitializeParams p;
  auto version = params.find("protocolVersion");
  if (version == params.end() || !version->is_string()) {
    return invalidArgument("protocolVersion is required and must be a string");
  }
  p.protocol_version = version->get<std::string>();
  if (auto info = params.find("clientInfo"); info != params.end()) {
    BYD_RETURN_IF_ERROR(optionalString(*info, "name", &p.client_name));
    BYD_RETURN_IF_ERROR(optionalString(*info, "version", &p.client_version));
  }
  if (auto caps = params.find("capabilities"); caps != params.end() && caps->is_object()) {
    p.elicitation = caps->contains("elicitation");
  }
  return p;
}

Result<ListToolsParams> parseListTools(const json& params) {
  BYD_RETURN_IF_ERROR(requireObject(params, true));
  ListToolsParams p;
  std::string cursor;
  BYD_RETURN_IF_ERROR(optionalString(params, "cursor", &cursor));
  if (params.is_object() && params.contains("cursor") && !params["cursor"].is_null()) {
    p.cursor = cursor;
  }
  return p;
}

Result<CallToolParams> parseCallTool(const json& params) {
  BYD_RETURN_IF_ERROR(requireObject(params, false));
  CallToolParams p;
  auto name = params.find("name");
  if (name == params.end() || !name->is_string()) {
    return invalidArgument("name is required and must be a string");
  }
  p.name = name->get<std::string>();
  if (auto args = params.find("arguments"); args != params.end() && !args->is_null()) {
    if (!args->is_object()) return invalidArgument("arguments must be an object");
    p.arguments = *args;
  }
  if (auto meta = params.find("_meta"); meta != params.end() && meta->is_object()) {
    if (auto token = meta->find("progressToken");
        token != meta->end() && (token->is_string() || token->is_number_integer())) {
      p.progress_token = *token;
    }
  }
  return p;
}

Result<SetLevelParams> parseSetLevel(const json& params) {
  BYD_RETURN_IF_ERROR(requireObject(params, false));
  auto level = params.find("level");
  if (level == params.end() || !level->is_string()) {
    return invalidArgument("level is required and must be a string");
  }
  const std::string name = level->get<std::string>();
  auto it = std::find(kLogLevels.begin(), kLogLevels.end(), name);
  if (it == kLogLevels.end()) {
    return invalidArgument("unknown level '" + name +
                           "' (expected debug, info, notice, warning, error, critical, alert or "
                           "emergency)");
  }
  return SetLevelParams{static_cast<int>(it - kLogLevels.begin())};
}

Result<CancelledParams> parseCancelled(const json& params) {
  BYD_RETURN_IF_ERROR(requireObject(params, false));
  auto id = params.find("requestId");
  if (id == params.end() || (!id->is_string() && !id->is_number_integer())) {
    return invalidArgument("requestId is required");
  }
  return CancelledParams{*id};
}

}  // namespace byd::mcp
