#include "mcp/json_rpc.h"

namespace byd::mcp {

Result<json> parseJson(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) {
        return invalidArgument("JSON nested deeper than " + std::to_string(max_depth) + " levels");
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  json value = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return invalidArgument("not valid JSON");
  return value;
}

Message classify(const json& v) {
  Message m;
  if (!v.is_object()) {
    m.problem = "a JSON-RPC message must be an object";
    return m;
  }
  auto id = v.find("id");
  if (id != v.end()) {
    // Ids are strings or integers (MCP forbids null); a valid one is kept for the error reply.
    if (!id->is_string() && !id->is_number_integer()) {
      m.problem = "\"id\" must be a string or an integer";
      return m;
    }
    m.id = *id;
  }
  auto version = v.find("jsonrpc");
  if (version == v.end() || *version != "2.0") {
    m.problem = "missing \"jsonrpc\": \"2.0\"";
    return m;
  }
  auto method = v.find("method");
  if (method == v.end()) {
    if (id != v.end() && (v.contains("result") || v.contains("error"))) {
      m.kind = Kind::kResponse;
      return m;
    }
    m.problem = "missing \"method\"";
    return m;
  }
  if (!method->is_string()) {
    m.problem = "\"method\" must be a string";
    return m;
  }
  m.method = method->get<std::string>();
  auto params = v.find("params");
  if (params != v.end()) {
    if (!params->is_object() && !params->is_array()) {
      m.problem = "\"params\" must be an object or an array";
      return m;
    }
    m.params = *params;
  }
  m.kind = id == v.end() ? Kind::kNotification : Kind::kRequest;
  return m;
}

json makeResult(const json& id, json result) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

json makeError(const json& id, int code, std::string_view message, const json& data) {
  json error = {{"code", code}, {"message", message}};
  if (!data.is_null()) error["data"] = data;
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", std::move(error)}};
}

json makeNotification(std::string_view method, json params) {
  json n = {{"jsonrpc", "2.0"}, {"method", method}};
  if (!params.is_null()) n["params"] = std::move(params);
  return n;
}

json errorFromStatus(const json& id, const Status& status) {
  switch (status.code()) {
    case Code::kNotFound:  // only resources/read reports this at the protocol level
      return makeError(id, rpc::kResourceNotFound, status.message());
    case Code::kInvalidArgument:
    case Code::kOutOfRange:
      return makeError(id, rpc::kInvalidParams, status.message());
    case Code::kUnimplemented:
      return makeError(id, rpc::kMethodNotFound, status.message());
    case Code::kFailedPrecondition:
    case Code::kAlreadyExists:
    case Code::kResourceExhausted:
    case Code::kPermissionDenied:
      return makeError(id, rpc::kInvalidRequest, status.message());
    default:
      return makeError(id, rpc::kInternalError, "internal error");
  }
}

std::string serialize(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace byd::mcp
