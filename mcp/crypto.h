#pragma once
// SHA-256 and HMAC-SHA256 from libcrypto, which is loaded when first needed (see
// common/lazy_library.h): a server that never hashes a token or signs a request state does not
// pay for OpenSSL's start. Digests are lowercase hex.

#include <string>
#include <string_view>

#include "common/result.h"

namespace byd::mcp {

Result<std::string> sha256Hex(std::string_view data);
Result<std::string> hmacSha256Hex(std::string_view key, std::string_view data);

// Whether `a` and `b` are equal, in a time that depends on their lengths alone.
bool equalConstantTime(std::string_view a, std::string_view b);

}  // namespace byd::mcp
