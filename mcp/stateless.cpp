#include "mcp/stateless.h"

#include <sys/random.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "common/text.h"
#include "mcp/crypto.h"
#include "mcp/protocol.h"

namespace byd::mcp::stateless {
namespace {

std::string_view trimSpaces(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string base64Url(std::string_view data) {
  std::string s = base64Encode(data);
  std::replace(s.begin(), s.end(), '+', '-');
  std::replace(s.begin(), s.end(), '/', '_');
  s.erase(std::find(s.begin(), s.end(), '='), s.end());
  return s;
}

Result<std::string> fromBase64Url(std::string_view text) {
  std::string s(text);
  if (s.find_first_of("+/=\r\n") != std::string::npos) return invalidArgument("not base64url");
  std::replace(s.begin(), s.end(), '-', '+');
  std::replace(s.begin(), s.end(), '_', '/');
  while (s.size() % 4 != 0) s += '=';
  return base64Decode(s);
}

int64_t nowSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The string form a header carries for a body value: strings as they are, integers in
// decimal, booleans as true/false. nullopt for other types.
std::optional<std::string> headerForm(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  if (value.is_number_integer()) return std::to_string(value.get<int64_t>());
  if (value.is_number_unsigned()) return std::to_string(value.get<uint64_t>());
  if (value.is_number_float()) {
    const double d = value.get<double>();
    // Only integral values within int64's range have a decimal form to compare with.
    if (d >= -9.2e18 && d <= 9.2e18 && d == std::trunc(d)) {
      return std::to_string(static_cast<int64_t>(d));
    }
  }
  return std::nullopt;
}

}  // namespace

bool hasModernMeta(const json& params) {
  if (!params.is_object()) return false;
  auto meta = params.find("_meta");
  if (meta == params.end() || !meta->is_object()) return false;
  return std::any_of(meta->items().begin(), meta->items().end(), [](const auto& item) {
    return std::string_view(item.key()).starts_with("io.modelcontextprotocol/");
  });
}

std::variant<RequestMeta, MetaError> readMeta(const json& params) {
  auto missing = [](std::string what) {
    return MetaError{-32602, "invalid request: " + what, nullptr};
  };
  if (!params.is_object()) return missing("params with _meta are required");
  auto meta = params.find("_meta");
  if (meta == params.end() || !meta->is_object()) {
    return missing("params._meta is required (with " + std::string(kMetaVersion) + " and " +
                   std::string(kMetaCapabilities) + ")");
  }
  RequestMeta out;
  auto version = meta->find(kMetaVersion);
  if (version == meta->end() || !version->is_string()) {
    return missing("_meta." + std::string(kMetaVersion) + " is required and must be a string");
  }
  auto caps = meta->find(kMetaCapabilities);
  if (caps == meta->end() || !caps->is_object()) {
    return missing("_meta." + std::string(kMetaCapabilities) +
                   " is required and must be an object");
  }
  out.version = version->get<std::string>();
  out.capabilities = *caps;
  if (auto level = meta->find(kMetaLogLevel); level != meta->end()) {
    auto it = level->is_string()
                  ? std::find(kLogLevels.begin(), kLogLevels.end(), level->get<std::string>())
                  : kLogLevels.end();
    if (it == kLogLevels.end()) {
      return missing("_meta." + std::string(kMetaLogLevel) +
                     " must be one of debug, info, notice, warning, error, critical, alert, "
                     "emergency");
    }
    out.log_level = static_cast<int>(it - kLogLevels.begin());
  }
  if (auto info = meta->find(kMetaClientInfo); info != meta->end() && info->is_object()) {
    if (auto name = info->find("name"); name != info->end() && name->is_string()) {
      out.client_name = name->get<std::string>();
    }
  }
  if (out.version != kVersion) {
    const bool legacy = std::find(kProtocolVersions.begin(), kProtocolVersions.end(),
                                  out.version) != kProtocolVersions.end();
    return MetaError{kUnsupportedVersion,
                     legacy ? "protocol version " + out.version +
                                  " is served through initialize and a session, not per request"
                            : "unsupported protocol version: " + out.version,
                     {{"supported", {kVersion}}, {"requested", out.version}}};
  }
  return out;
}

Result<std::string> decodeHeaderValue(std::string_view raw) {
  std::string_view value = trimSpaces(raw);
  for (unsigned char c : value) {
    if (c < 0x20 || c == 0x7f) return invalidArgument("a control character");
  }
  constexpr std::string_view kPrefix = "=?base64?";
  constexpr std::string_view kSuffix = "?=";
  if (!value.starts_with(kPrefix) || !value.ends_with(kSuffix) ||
      value.size() < kPrefix.size() + kSuffix.size()) {
    return std::string(value);
  }
  const std::string_view encoded =
      value.substr(kPrefix.size(), value.size() - kPrefix.size() - kSuffix.size());
  if (encoded.size() % 4 != 0 ||
      encoded.find_first_not_of(
          "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") !=
          std::string_view::npos) {
    return invalidArgument("invalid base64");
  }
  BYD_ASSIGN_OR_RETURN(std::string decoded, base64Decode(encoded));
  if (!isValidUtf8(decoded)) return invalidArgument("base64 of invalid UTF-8");
  return decoded;
}

Status checkHeaders(const json& request, const HeaderLookup& header, const json& header_params) {
  if (!request.is_object() || !request.contains("method") || !request["method"].is_string()) {
    return invalidArgument("the request has no method");
  }
  const std::string method = request["method"].get<std::string>();
  auto sent = header("Mcp-Method");
  if (!sent) return invalidArgument("the Mcp-Method header is required");
  if (trimSpaces(*sent) != method) {
    return invalidArgument("the Mcp-Method header '" + std::string(trimSpaces(*sent)) +
                           "' does not match the method '" + method + "'");
  }
  const json params = request.value("params", json::object());
  const char* name_field =
      method == "tools/call" || method == "prompts/get"                               ? "name"
      : method == "resources/read"                                                    ? "uri"
      : method == "tasks/get" || method == "tasks/update" || method == "tasks/cancel" ? "taskId"
                                                                                      : nullptr;
  if (name_field != nullptr) {
    auto name = header("Mcp-Name");
    if (!name) return invalidArgument("the Mcp-Name header is required for " + method);
    auto decoded = decodeHeaderValue(*name);
    if (!decoded.ok()) {
      return invalidArgument("the Mcp-Name header is malformed: " + decoded.status().message());
    }
    const json* field =
        params.is_object() && params.contains(name_field) ? &params[name_field] : nullptr;
    const std::string body =
        field != nullptr && field->is_string() ? field->get<std::string>() : "";
    if (field == nullptr || !field->is_string() || *decoded != body) {
      return invalidArgument("the Mcp-Name header '" + *decoded + "' does not match params." +
                             name_field + " '" + body + "'");
    }
  }
  if (!header_params.is_object() || header_params.empty()) return okStatus();
  const json args = params.is_object() ? params.value("arguments", json::object()) : json();
  for (const auto& [property, header_name] : header_params.items()) {
    const std::string full = "Mcp-Param-" + header_name.get<std::string>();
    auto raw = header(full);
    const json* value = args.is_object() && args.contains(property) ? &args[property] : nullptr;
    const bool present = value != nullptr && !value->is_null();
    if (!present) {
      if (raw) {
        auto decoded = decodeHeaderValue(*raw);
        if (!decoded.ok()) {
          return invalidArgument("the " + full +
                                 " header is malformed: " + decoded.status().message());
        }
      }
      continue;
    }
    if (!raw)
      return invalidArgument("the " + full + " header is required: arguments." + property +
                             " is set");
    auto decoded = decodeHeaderValue(*raw);
    if (!decoded.ok()) {
      return invalidArgument("the " + full + " header is malformed: " + decoded.status().message());
    }
    auto expected = headerForm(*value);
    bool same = expected && *decoded == *expected;
    if (!same && value->is_number()) {  // numbers compare by value: 42.0 and 42 agree
      try {
        size_t used = 0;
        const double d = std::stod(*decoded, &used);
        same = used == decoded->size() && d == value->get<double>();
      } catch (const std::exception&) {
        same = false;
      }
    }
    if (!same) {
      return invalidArgument("the " + full + " header does not match arguments." + property);
    }
  }
  return okStatus();
}

json headerParams(const json& input_schema) {
  json out = json::object();
  if (!input_schema.is_object()) return out;
  auto props = input_schema.find("properties");
  if (props == input_schema.end() || !props->is_object()) return out;
  for (const auto& [name, schema] : props->items()) {
    if (!schema.is_object()) continue;
    auto header = schema.find("x-mcp-header");
    const std::string type = schema.value("type", "");
    if (header == schema.end() || !header->is_string() || header->get<std::string>().empty()) {
      continue;
    }
    if (type == "string" || type == "integer" || type == "boolean") out[name] = *header;
  }
  return out;
}

StateSigner::StateSigner() {
  if (getrandom(key_, sizeof key_, 0) != static_cast<ssize_t>(sizeof key_)) {
    // getrandom cannot fail for 32 bytes once the pool is initialised; stop rather than sign
    // with a guessable key.
    std::abort();
  }
}

Result<std::string> StateSigner::mac(std::string_view data) const {
  return hmacSha256Hex(std::string_view(reinterpret_cast<const char*>(key_), sizeof key_), data);
}

Result<std::string> StateSigner::sign(const json& payload, std::string_view method,
                                      std::string_view name, int64_t ttl_s) const {
  const json body = {{"p", payload}, {"m", method}, {"n", name}, {"x", nowSeconds() + ttl_s}};
  const std::string encoded = base64Url(body.dump());
  BYD_ASSIGN_OR_RETURN(std::string tag, mac(encoded));
  return encoded + "." + tag;
}

Result<json> StateSigner::verify(std::string_view state, std::string_view method,
                                 std::string_view name) const {
  const auto failed = [] { return invalidArgument("requestState integrity check failed"); };
  const size_t dot = state.rfind('.');
  if (dot == std::string_view::npos) return failed();
  const std::string_view encoded = state.substr(0, dot);
  BYD_ASSIGN_OR_RETURN(const std::string expected, mac(encoded));
  if (!equalConstantTime(state.substr(dot + 1), expected)) return failed();
  auto text = fromBase64Url(encoded);
  if (!text.ok()) return failed();
  json body = json::parse(*text, nullptr, false);
  if (!body.is_object() || body.value("m", "") != method || body.value("n", "") != name) {
    return invalidArgument("requestState belongs to another request");
  }
  if (body.value("x", int64_t{0}) < nowSeconds()) return invalidArgument("requestState expired");
  return body.value("p", json::object());
}

bool validInputResponse(std::string_view method, const json& answer) {
  if (!answer.is_object()) return false;
  if (method == "elicitation/create") {
    auto action = answer.find("action");
    return action != answer.end() && action->is_string() &&
           (*action == "accept" || *action == "decline" || *action == "cancel");
  }
  if (method == "sampling/createMessage") {
    return answer.contains("role") && answer.contains("content");
  }
  if (method == "roots/list") return answer.contains("roots") && answer["roots"].is_array();
  return true;
}

}  // namespace byd::mcp::stateless
