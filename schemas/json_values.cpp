#include "schemas/json_values.h"

#include <re2/re2.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <mutex>
#include <unordered_map>

namespace byd::schemas::detail {

// Cuts `s` to at most `n` bytes on a UTF-8 character boundary.
std::string_view cutUtf8(std::string_view s, size_t n) {
  if (s.size() <= n) return s;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xc0) == 0x80) --n;
  return s.substr(0, n);
}

// JSON-quotes a string, shortened; replaces invalid UTF-8 rather than throwing as dump() would.
std::string quote(std::string_view s) {
  const std::string_view cut = cutUtf8(s, kMaxQuoted);
  std::string out = json(std::string(cut)).dump(-1, ' ', false, json::error_handler_t::replace);
  if (cut.size() < s.size()) out.insert(out.size() - 1, "...");
  return out;
}

// Compact JSON for messages, stopping once `out` passes `limit` (which also bounds recursion).
static void render(const json& v, std::string& out, size_t limit) {
  if (out.size() > limit) return;
  if (const auto* s = v.get_ptr<const std::string*>()) {
    out += quote(*s);
  } else if (v.is_array()) {
    out += '[';
    for (size_t i = 0; i < v.size() && out.size() <= limit; ++i) {
      if (i) out += ',';
      render(v[i], out, limit);
    }
    out += ']';
  } else if (v.is_object()) {
    out += '{';
    for (auto it = v.begin(); it != v.end() && out.size() <= limit; ++it) {
      if (it != v.begin()) out += ',';
      out += quote(it.key()) + ':';
      render(it.value(), out, limit);
    }
    out += '}';
  } else {
    out += v.dump();  // numbers, booleans, null: short and never throwing
  }
}

std::string preview(const json& v) {
  if (const auto* s = v.get_ptr<const std::string*>()) return quote(*s);  // already shortened
  std::string out;
  render(v, out, kMaxQuoted);
  if (out.size() > kMaxQuoted + 2) out = std::string(cutUtf8(out, kMaxQuoted)) + "...";
  return out;
}

// "string \"3\"", "number 5", "array": what a type error says it got.
std::string describeTyped(const json& v) {
  switch (v.type()) {
    case json::value_t::string:
      return "string " + preview(v);
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float:
      return "number " + preview(v);
    case json::value_t::boolean:
      return "boolean " + preview(v);
    case json::value_t::array:
      return "array";
    case json::value_t::object:
      return "object";
    default:
      return "null";
  }
}

static bool isInteger(const json& v) {
  if (v.is_number_integer()) return true;
  const auto* d = v.get_ptr<const json::number_float_t*>();
  return d && std::isfinite(*d) && std::floor(*d) == *d;
}

// long double holds every int64/uint64 exactly on our targets, so comparisons are exact.
long double numberOf(const json& v) {
  if (const auto* i = v.get_ptr<const json::number_integer_t*>()) return *i;
  if (const auto* u = v.get_ptr<const json::number_unsigned_t*>()) return *u;
  if (const auto* d = v.get_ptr<const json::number_float_t*>()) return *d;
  return 0;
}

// A non-negative integer keyword value (minLength...), or nullopt when malformed.
std::optional<size_t> countOf(const json& v) {
  if (!isInteger(v) || numberOf(v) < 0) return std::nullopt;
  const long double n = numberOf(v);
  return n > 1e18L ? size_t{1} << 62 : static_cast<size_t>(n);
}

std::string plural(size_t n, std::string_view noun) {
  return std::to_string(n) + " " + std::string(noun) + (n == 1 ? "" : "s");
}

// JSON Schema equality: 1 == 1.0, objects unordered. The depth cap only matters when both
// sides are deeper than it, i.e. for a hostile schema; it then answers "not equal".
bool jsonEqual(const json& a, const json& b, int depth) {
  if (a.is_number() && b.is_number()) return numberOf(a) == numberOf(b);
  if (a.type() != b.type() || depth > 2 * static_cast<int>(kMaxInstanceDepth)) return false;
  if (a.is_array()) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!jsonEqual(a[i], b[i], depth + 1)) return false;
    }
    return true;
  }
  if (a.is_object()) {
    if (a.size() != b.size()) return false;
    for (auto it = a.begin(); it != a.end(); ++it) {
      const auto other = b.find(it.key());
      if (other == b.end() || !jsonEqual(it.value(), *other, depth + 1)) return false;
    }
    return true;
  }
  return a == b;  // string, boolean, null
}

// Consistent with jsonEqual (numbers hash by value), so equal items always share a bucket.
size_t hashJson(const json& v, int depth) {
  if (v.is_number()) {
    const long double n = numberOf(v);
    return std::hash<long double>()(n == 0 ? 0.0L : n);
  }
  size_t h = static_cast<size_t>(v.type()) * 0x9e3779b97f4a7c15ULL;
  auto mix = [&h](size_t x) { h ^= x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  if (depth > 2 * static_cast<int>(kMaxInstanceDepth)) return h;
  if (const auto* s = v.get_ptr<const std::string*>()) mix(std::hash<std::string>()(*s));
  if (const auto* b = v.get_ptr<const bool*>()) mix(*b);
  if (v.is_array()) {
    for (const auto& item : v) mix(hashJson(item, depth + 1));
  }
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) {
      mix(std::hash<std::string>()(it.key()));
      mix(hashJson(it.value(), depth + 1));
    }
  }
  return h;
}

// True when `v` nests containers more than `limit` levels deep; iterative, so it is safe on any
// depth.
bool nestedDeeperThan(const json& v, size_t limit) {
  std::vector<std::pair<const json*, size_t>> stack{{&v, 1}};
  while (!stack.empty()) {
    const auto [node, depth] = stack.back();
    stack.pop_back();
    if (!node->is_structured()) continue;
    if (depth > limit) return true;
    for (const auto& child : *node) stack.emplace_back(&child, depth + 1);
  }
  return false;
}

// Compiled patterns, shared across calls; bounded so hostile schemas cannot grow it forever.
std::shared_ptr<const RE2> cachedRegex(const std::string& pattern) {
  static std::mutex mu;
  static auto* cache = new std::unordered_map<std::string, std::shared_ptr<const RE2>>();
  {
    std::lock_guard lock(mu);
    if (auto it = cache->find(pattern); it != cache->end()) return it->second;
  }
  RE2::Options options;
  options.set_log_errors(false);
  auto re = std::make_shared<const RE2>(pattern, options);
  std::lock_guard lock(mu);
  if (cache->size() >= kMaxCachedRegexes) cache->clear();
  cache->emplace(pattern, re);
  return re;
}

std::string_view typeArticle(const std::string& t) {
  if (t == "object" || t == "array" || t == "integer") return "an ";
  if (t == "string" || t == "number" || t == "boolean") return "a ";
  return t == "null" ? "" : "of type ";
}

bool hasType(const json& v, const std::string& t) {
  if (t == "object") return v.is_object();
  if (t == "array") return v.is_array();
  if (t == "string") return v.is_string();
  if (t == "integer") return isInteger(v);
  if (t == "number") return v.is_number();
  if (t == "boolean") return v.is_boolean();
  if (t == "null") return v.is_null();
  return false;
}

bool isPlainKey(std::string_view key) {
  return !key.empty() && key.size() <= kMaxQuoted &&
         std::all_of(key.begin(), key.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '$';
         });
}

std::string propertyList(const json* properties) {
  std::string out;
  if (!properties) return out;
  size_t n = 0;
  for (auto p = properties->begin(); p != properties->end(); ++p, ++n) {
    if (n == kMaxListed) {
      out += ", ...";
      break;
    }
    out += (n ? ", " : "") + p.key();
  }
  return out;
}

const json* member(const json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

}  // namespace byd::schemas::detail
