#pragma once
// JSON-RPC 2.0 framing-independent pieces: error codes, classifying a parsed message, building
// responses, and the one mapping from a Status to a JSON-RPC error. Pure functions; safe from
// any thread.

#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace byd::mcp {

using nlohmann::json;

namespace rpc {
constexpr int kParseError = -32700;
constexpr int kInvalidRequest = -32600;
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidParams = -32602;
constexpr int kInternalError = -32603;
constexpr int kResourceNotFound = -32002;  // MCP: resources/read of an unknown URI
}  // namespace rpc

enum class Kind { kRequest, kNotification, kResponse, kInvalid };

struct Message {
  Kind kind = Kind::kInvalid;
  json id;              // requests and responses (null when absent)
  std::string method;   // requests and notifications
  json params;          // object, array or null
  std::string problem;  // why it is kInvalid
};

// Parses one JSON text. Refuses nesting deeper than `max_depth` before parsing, since the
// parser recurses once per level. On failure returns InvalidArgument with the reason. A text
// of kSimdFrom bytes or more is read by simdjson (what it refuses, by nlohmann's parser); the
// value is the same either way.
inline constexpr size_t kSimdFrom = 512;
Result<json> parseJson(std::string_view text, int max_depth = 256);

// Classifies a parsed JSON value as a JSON-RPC request, notification, response or invalid.
// Moves "params" out of requests and notifications; a response is left whole.
Message classify(json&& value);

json makeResult(const json& id, json result);
json makeError(const json& id, int code, std::string_view message, const json& data = nullptr);
json makeNotification(std::string_view method, json params);

// The single mapping from a protocol-level Status to a JSON-RPC error code and message.
// Internal errors never pass their text on.
json errorFromStatus(const json& id, const Status& status);

// Serializes for the wire: compact, invalid UTF-8 replaced rather than thrown on. The text is
// exactly that of nlohmann's dump(-1, ' ', false, replace), written faster.
std::string serialize(const json& value);
// The same, appended to `out`.
void serializeTo(const json& value, std::string& out);
// About the bytes `value` serializes to, a little over for text that needs no escapes.
size_t serializedSizeHint(const json& value);
// serializeTo without reserving room first (the caller has, by serializedSizeHint).
void serializeReserved(const json& value, std::string& out);
// The same text, handed to `flush` in pieces as it is written: whenever `out` holds `piece`
// bytes or more at a point where the text may be cut, flush(out) is called and `out` cleared.
// What is left at the end stays in `out`. A large answer thus needs no buffer of its size.
// False when a flush returned false (the text after it was dropped).
bool serializeInPieces(const json& value, std::string& out, size_t piece,
                       const std::function<bool(std::string_view)>& flush);

}  // namespace byd::mcp
