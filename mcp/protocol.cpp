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

// Reads a required string member; `prefix` names the enclosing object in the message.
Result<std::string> requiredString(const json& obj, std::string_view key,
                                   std::string_view prefix = "") {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) {
    return invalidArgument(std::string(prefix) + std::string(key) +
                           " is required and must be a string");
  }
  return it->get<std::string>();
}

// inputResponses and requestState of a retried request.
Result<InputResponses> parseInputResponses(const json& params) {
  InputResponses in;
  if (auto r = params.find("inputResponses"); r != params.end() && !r->is_null()) {
    if (!r->is_object()) return invalidArgument("inputResponses must be an object");
    in.responses = *r;
  }
  std::string state;
  BYD_RETURN_IF_ERROR(optionalString(params, "requestState", &state));
  if (params.contains("requestState") && !params["requestState"].is_null()) {
    in.request_state = state;
  }
  return in;
}

}  // namespace

std::string negotiateVersion(std::string_view requested) {
  auto it = std::find(kProtocolVersions.begin(), kProtocolVersions.end(), requested);
  return std::string(it != kProtocolVersions.end() ? *it : kProtocolVersions.back());
}

Result<InitializeParams> parseInitialize(const json& params) {
  BYD_RETURN_IF_ERROR(requireObject(params, false));
  InitializeParams p;
  BYD_ASSIGN_OR_RETURN(p.protocol_version, requiredString(params, "protocolVersion"));
  if (auto info = params.find("clientInfo"); info != params.end()) {
    BYD_RETURN_IF_ERROR(optionalString(*info, "name", &p.client_name));
    BYD_RETURN_IF_ERROR(optionalString(*info, "version", &p.client_version));
  }
  if (auto caps = params.find("capabilities"); caps != params.end() && caps->is_object()) {
    p.capabilities = *caps;
  }
  return p;
}

Result<ListParams> parseList(const json& params) {
  BYD_RETURN_IF_ERROR(requireObject(params, true));
  ListParams p;
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
  BYD_ASSIGN_OR_RETURN(p.name, requiredString(params, "name"));
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
  BYD_ASSIGN_OR_RETURN(p.input, parseInputResponses(params));
  return p;
}

Result<SetLevelParams> parseSetLevel(const json& params) {
  BYD_RETURN_IF_ERROR(requireObject(params, false));
  BYD_ASSIGN_OR_RETURN(const std::string name, requiredString(params, "level"));
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

Result<UriParams> parseUri(const json& params) {
  BYD_RETURN_IF_ERROR(requireObject(params, false));
  BYD_ASSIGN_OR_RETURN(std::string uri, requiredString(params, "uri"));
  return UriParams{std::move(uri)};
}

Result<GetPromptParams> parseGetPrompt(const json& params) {
  BYD_RETURN_IF_ERROR(requireObject(params, false));
  GetPromptParams p;
  BYD_ASSIGN_OR_RETURN(p.name, requiredString(params, "name"));
  if (auto args = params.find("arguments"); args != params.end() && !args->is_null()) {
    if (!args->is_object()) return invalidArgument("arguments must be an object");
    for (const auto& [key, value] : args->items()) {
      if (!value.is_string()) return invalidArgument("arguments." + key + " must be a string");
      p.arguments[key] = value.get<std::string>();
    }
  }
  BYD_ASSIGN_OR_RETURN(p.input, parseInputResponses(params));
  return p;
}

Result<CompleteParams> parseComplete(const json& params) {
  BYD_RETURN_IF_ERROR(requireObject(params, false));
  CompleteParams p;
  auto ref = params.find("ref");
  if (ref == params.end() || !ref->is_object()) {
    return invalidArgument("ref is required and must be an object");
  }
  BYD_ASSIGN_OR_RETURN(std::string type, requiredString(*ref, "type", "ref."));
  if (type == "ref/prompt") {
    BYD_RETURN_IF_ERROR(requiredString(*ref, "name", "ref.").status());
  } else if (type == "ref/resource") {
    BYD_RETURN_IF_ERROR(requiredString(*ref, "uri", "ref.").status());
  } else {
    return invalidArgument("ref.type must be ref/prompt or ref/resource, got '" + type + "'");
  }
  p.ref = *ref;
  auto argument = params.find("argument");
  if (argument == params.end() || !argument->is_object()) {
    return invalidArgument("argument is required and must be an object");
  }
  BYD_ASSIGN_OR_RETURN(p.argument, requiredString(*argument, "name", "argument."));
  BYD_ASSIGN_OR_RETURN(p.value, requiredString(*argument, "value", "argument."));
  if (auto context = params.find("context"); context != params.end() && context->is_object()) {
    p.context = *context;
  }
  return p;
}

}  // namespace byd::mcp
