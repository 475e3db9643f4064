#pragma once
// What the schema validator (validator.cpp) knows of JSON values: how to show one in a message
// (quoted, cut, with its type), compare and hash them as JSON Schema does (1 equals 1.0), count
// a string's code points, and compile a `pattern` once. Stateless apart from the regex cache,
// which a mutex guards.

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace re2 {
class RE2;
}

namespace byd::schemas::detail {

using nlohmann::json;

// Tool arguments are shallow; anything deeper is hostile or a mistake, and recursing on it could
// exhaust the stack.
inline constexpr size_t kMaxInstanceDepth = 64;
inline constexpr size_t kMaxQuoted = 60;  // characters of a value shown in a message
inline constexpr size_t kMaxListed = 20;  // names listed in a message
inline constexpr size_t kMaxCachedRegexes = 256;

// Cuts `s` to at most `n` bytes on a UTF-8 character boundary.
std::string_view cutUtf8(std::string_view s, size_t n);
// `s` in single quotes, cut at kMaxQuoted.
std::string quote(std::string_view s);
// A short rendering of `v` for a message.
std::string preview(const json& v);
// "the string 'x'", "the number 3", ...
std::string describeTyped(const json& v);
long double numberOf(const json& v);
// A string's length in code points, an array's or object's size; nothing for other values.
std::optional<size_t> countOf(const json& v);
std::string plural(size_t n, std::string_view noun);
// Equality and hashing as JSON Schema sees values (1 == 1.0), bounded in depth.
bool jsonEqual(const json& a, const json& b, int depth = 0);
size_t hashJson(const json& v, int depth = 0);
bool nestedDeeperThan(const json& v, size_t limit);
// `pattern` compiled once (up to kMaxCachedRegexes kept); null when it does not compile.
std::shared_ptr<const re2::RE2> cachedRegex(const std::string& pattern);
std::string_view typeArticle(const std::string& t);
bool hasType(const json& v, const std::string& t);
bool isPlainKey(std::string_view key);
// The names of `properties`, for "unknown property" messages.
std::string propertyList(const json* properties);
// `object[key]` when `object` is an object holding it, else null.
const json* member(const json& object, const char* key);

}  // namespace byd::schemas::detail
