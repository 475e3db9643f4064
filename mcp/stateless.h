#pragma once
// The stateless revision of MCP (2026-07-28): no initialize and no sessions; every request
// carries its protocol version, client capabilities and log level in params._meta, and over
// HTTP its method and name in headers (Mcp-Method, Mcp-Name, Mcp-Param-*). Questions to the
// client travel as multi round-trip results (InputRequiredResult): the server answers
// "input_required" with the questions and a signed requestState, and the client retries the
// request with the answers.
//
// This file holds what the dispatcher and the HTTP transport share: reading the per-request
// _meta, the header checks, and the signing of requestState. Pure functions and one immutable
// signer; safe from any thread.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace byd::mcp::stateless {

using nlohmann::json;

inline constexpr std::string_view kVersion = "2026-07-28";
inline constexpr std::string_view kMetaVersion = "io.modelcontextprotocol/protocolVersion";
inline constexpr std::string_view kMetaCapabilities = "io.modelcontextprotocol/clientCapabilities";
inline constexpr std::string_view kMetaClientInfo = "io.modelcontextprotocol/clientInfo";
inline constexpr std::string_view kMetaLogLevel = "io.modelcontextprotocol/logLevel";
inline constexpr std::string_view kMetaServerInfo = "io.modelcontextprotocol/serverInfo";
inline constexpr std::string_view kMetaSubscriptionId = "io.modelcontextprotocol/subscriptionId";

// The error codes of the revision.
inline constexpr int kHeaderMismatch = -32020;
inline constexpr int kMissingCapability = -32021;
inline constexpr int kUnsupportedVersion = -32022;

// True when a request's params carry any io.modelcontextprotocol/ key in _meta: the client
// speaks the stateless revision.
bool hasModernMeta(const json& params);

// What one stateless request says about its client.
struct RequestMeta {
  std::string version;
  json capabilities = json::object();
  std::optional<int> log_level;  // index into kLogLevels; none: no log messages at all
  std::string client_name;
};

// The error a malformed or unsupported request gets, as JSON-RPC code, message and data.
struct MetaError {
  int code;
  std::string message;
  json data;
};

// Reads params._meta. Missing required fields are -32602; a version other than 2026-07-28 is
// -32022 with the versions this path serves.
std::variant<RequestMeta, MetaError> readMeta(const json& params);

// The value a Mcp-Name or Mcp-Param-* header stands for: the text itself, or the UTF-8 text
// of "=?base64?...?=" (padded, standard alphabet). Leading and trailing spaces and tabs are
// dropped first. Error when the value has control characters or bad base64.
Result<std::string> decodeHeaderValue(std::string_view raw);

// Checks the Mcp-Method and Mcp-Name headers (and Mcp-Param-* for the `header_params` a tool's
// inputSchema marks with x-mcp-header: {property: header name}) against a request body.
// `header` returns a header's value, or nullopt when absent. The message of a failure says
// which header is wrong; the caller answers it with kHeaderMismatch.
using HeaderLookup = std::function<std::optional<std::string>(std::string_view name)>;
Status checkHeaders(const json& request, const HeaderLookup& header,
                    const json& header_params = json::object());

// {property: header name} for the properties of `input_schema` marked "x-mcp-header" (only
// direct properties of string, integer or boolean type count).
json headerParams(const json& input_schema);

// Signs and checks requestState: base64url(payload) "." hex(HMAC-SHA256(key, payload)), with a
// key drawn at random for each process, so a state outlives neither the process nor its expiry.
class StateSigner {
 public:
  StateSigner();
  // `payload` is bound to the method and name it was issued for, and expires after `ttl_s`.
  // An error only when libcrypto cannot be loaded.
  Result<std::string> sign(const json& payload, std::string_view method, std::string_view name,
                           int64_t ttl_s = 600) const;
  // The payload, or InvalidArgument when the state was altered, is for another request, or
  // has expired.
  Result<json> verify(std::string_view state, std::string_view method, std::string_view name) const;
  // A keyed digest of `data` (hex), to bind a state to the request's arguments.
  Result<std::string> digest(std::string_view data) const { return mac(data); }

 private:
  Result<std::string> mac(std::string_view data) const;
  unsigned char key_[32];
};

// Whether `answer` has the shape of a reply to `method` (elicitation/create,
// sampling/createMessage, roots/list): a malformed answer counts as no answer.
bool validInputResponse(std::string_view method, const json& answer);

}  // namespace byd::mcp::stateless
