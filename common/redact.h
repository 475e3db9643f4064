#pragma once
// What the audit log shows of a call's arguments: secrets redacted, long values cut.
// A value is redacted where it looks like a credential: cloud and forge tokens (AKIA…, ghp_…,
// sk-…, xox?-…), JSON web tokens, private-key blocks, an Authorization header's credentials,
// "Bearer …", a URL's password, curl's -u user:password and mysql's -p…, and the value after a
// secret-sounding name (password=…, "api_key": …, TOKEN: …, env["TOKEN"] = …, --password …).
// An argument or object key with such a name has its whole value redacted.

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace byd {

inline constexpr std::string_view kRedacted = "[redacted]";

// `text` with each secret-looking value replaced by kRedacted.
std::string redactSecrets(std::string_view text);
// Whether a key (an argument's, a variable's) names a secret: password, token, api_key, ...
bool secretName(std::string_view key);
// `args` for the audit log: secrets redacted, strings cut to `max_chars` (saying how long they
// were), arrays to 20 items, nesting to 3 levels.
nlohmann::json summarizeArguments(const nlohmann::json& args, size_t max_chars = 200);

}  // namespace byd
