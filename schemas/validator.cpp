#include "schemas/validator.h"

#include <re2/re2.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "schemas/json_values.h"

namespace byd::schemas {
namespace {

using nlohmann::json;
using namespace detail;  // NOLINT: the value helpers are this file's vocabulary

// Nested subschemas (including $ref hops) on one call chain; stops $ref cycles.
constexpr int kMaxSchemaDepth = 256;
// Combinators over $refs can take exponential time; this caps the subschema checks made under
// anyOf/oneOf/allOf/not per validate() call. Plain properties/items walks are linear in the
// instance and not counted, so large arguments never hit it.
constexpr size_t kMaxCombinatorSteps = 100'000;
constexpr size_t kMaxReasons = 400;  // anyOf/oneOf explanations, which nest

}  // namespace

// Walks schema and instance together, tracking the instance path for messages.
class Validator {
 public:
  Validator(const json& root, std::string_view root_name) : root_(root), root_name_(root_name) {}

  Status check(const json& schema, const json& v);

 private:
  struct Segment {
    std::string_view key;
    size_t index = 0;
    bool is_index = false;
  };

  std::string pathText() const;
  Status fail(const std::string& what) const { return invalidArgument(pathText() + ": " + what); }
  // Errors about the schema or our limits, which no anyOf/oneOf/not branch may swallow.
  Status fatal(const std::string& what) {
    fatal_ = true;
    return fail(what);
  }
  Status descend(Segment segment, const json& schema, const json& v);

  Status checkRef(const json& schema, const json& v);
  Status checkType(const json& schema, const json& v);
  Status checkEnumConst(const json& schema, const json& v);
  Status checkNumber(const json& schema, const json& v);
  Status checkString(const json& schema, const json& v);
  Status checkArray(const json& schema, const json& v);
  Status checkUnique(const json& v);
  Status checkObject(const json& schema, const json& v);
  Status checkProperties(const json& schema, const json& v);
  Status checkCombinators(const json& schema, const json& v);
  Status checkSubschemas(const json& schema, const json& v);
  Status checkAlternatives(const json& alternatives, const json& v, bool exactly_one);
  const json* resolve(std::string_view ref) const;

  const json& root_;
  std::string root_name_;
  std::vector<Segment> path_;
  int depth_ = 0;
  int combinators_ = 0;  // combinator nesting on the current call chain
  size_t steps_ = 0;
  bool fatal_ = false;
};

std::string Validator::pathText() const {
  std::string out = root_name_;
  for (const Segment& s : path_) {
    if (s.is_index) {
      out += "[" + std::to_string(s.index) + "]";
    } else if (isPlainKey(s.key)) {
      out += (out.empty() ? "" : ".") + std::string(s.key);
    } else {
      out += "[" + quote(s.key) + "]";
    }
  }
  // Without a root name a property stands alone ("limit"), but "[2]" alone would be cryptic.
  if (out.empty() || out[0] == '[') out = "arguments" + out;
  return out;
}

Status Validator::descend(Segment segment, const json& schema, const json& v) {
  path_.push_back(segment);
  Status s = path_.size() > kMaxInstanceDepth
                 ? fatal("nested more than " + std::to_string(kMaxInstanceDepth) + " levels deep")
                 : check(schema, v);
  path_.pop_back();
  return s;
}

Status Validator::check(const json& schema, const json& v) {
  if (schema.is_boolean()) {
    return schema.get_ref<const bool&>() ? okStatus() : fail("no value is allowed here");
  }
  if (!schema.is_object()) return okStatus();
  if (depth_ >= kMaxSchemaDepth) {
    return fatal("schema too deep (more than " + std::to_string(kMaxSchemaDepth) +
                 " nested subschemas; is there a $ref cycle?)");
  }
  if (combinators_ > 0 && ++steps_ > kMaxCombinatorSteps) {
    return fatal("schema too complex (anyOf/oneOf/allOf/not took more than " +
                 std::to_string(kMaxCombinatorSteps) + " steps)");
  }
  ++depth_;
  Status s = checkRef(schema, v);
  if (s.ok()) s = checkType(schema, v);
  if (s.ok()) s = checkEnumConst(schema, v);
  if (s.ok() && v.is_number()) s = checkNumber(schema, v);
  if (s.ok() && v.is_string()) s = checkString(schema, v);
  if (s.ok() && v.is_array()) s = checkArray(schema, v);
  if (s.ok() && v.is_object()) s = checkObject(schema, v);
  if (s.ok()) s = checkCombinators(schema, v);
  --depth_;
  return s;
}

const json* Validator::resolve(std::string_view ref) const {
  if (ref == "#") return &root_;
  if (!ref.starts_with("#/")) return nullptr;
  const json* node = &root_;
  ref.remove_prefix(2);
  for (;;) {
    const size_t slash = ref.find('/');
    std::string token(ref.substr(0, slash));
    for (size_t p; (p = token.find("~1")) != std::string::npos;) token.replace(p, 2, "/");
    for (size_t p; (p = token.find("~0")) != std::string::npos;) token.replace(p, 2, "~");
    if (node->is_object()) {
      const auto it = node->find(token);
      if (it == node->end()) return nullptr;
      node = &*it;
    } else if (node->is_array() && !token.empty() && token.size() < 10 &&
               token.find_first_not_of("0123456789") == std::string::npos &&
               std::stoul(token) < node->size()) {
      node = &(*node)[std::stoul(token)];
    } else {
      return nullptr;
    }
    if (slash == std::string_view::npos) return node;
    ref.remove_prefix(slash + 1);
  }
}

Status Validator::checkRef(const json& schema, const json& v) {
  const json* ref = member(schema, "$ref");
  if (!ref || !ref->is_string()) return okStatus();
  const std::string& text = ref->get_ref<const std::string&>();
  const json* target = resolve(text);
  if (!target) return fatal("schema error: cannot resolve $ref " + quote(text));
  return check(*target, v);
}

Status Validator::checkType(const json& schema, const json& v) {
  const json* type = member(schema, "type");
  if (!type) return okStatus();
  std::vector<std::string> names;
  if (type->is_string()) names.push_back(type->get_ref<const std::string&>());
  if (type->is_array()) {
    for (const auto& t : *type) {
      if (t.is_string()) names.push_back(t.get_ref<const std::string&>());
    }
  }
  if (names.empty()) return okStatus();
  for (const auto& t : names) {
    if (hasType(v, t)) return okStatus();
  }
  std::string wanted;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i) wanted += i + 1 == names.size() ? " or " : ", ";
    wanted += std::string(typeArticle(names[i])) + names[i];
  }
  return fail("must be " + wanted + ", got " + describeTyped(v));
}

Status Validator::checkEnumConst(const json& schema, const json& v) {
  if (const json* c = member(schema, "const"); c && !jsonEqual(*c, v)) {
    return fail("must be " + preview(*c) + ", got " + preview(v));
  }
  const json* values = member(schema, "enum");
  if (!values || !values->is_array()) return okStatus();
  for (const auto& candidate : *values) {
    if (jsonEqual(candidate, v)) return okStatus();
  }
  std::string listed;
  for (size_t i = 0; i < values->size() && i < kMaxListed; ++i) {
    listed += (i ? ", " : "") + preview((*values)[i]);
  }
  if (values->size() > kMaxListed) listed += ", ...";
  return fail("must be one of " + listed + ", got " + preview(v));
}

Status Validator::checkNumber(const json& schema, const json& v) {
  const long double x = numberOf(v);
  const json* exclusive_min = member(schema, "exclusiveMinimum");
  const json* exclusive_max = member(schema, "exclusiveMaximum");
  // Draft 4 spelled exclusivity as a boolean beside minimum/maximum.
  const bool draft4_min =
      exclusive_min && exclusive_min->is_boolean() && exclusive_min->get_ref<const bool&>();
  const bool draft4_max =
      exclusive_max && exclusive_max->is_boolean() && exclusive_max->get_ref<const bool&>();
  auto bound = [&](const char* key, const char* op, auto violated) -> Status {
    const json* b = member(schema, key);
    if (!b || !b->is_number() || !violated(x, numberOf(*b))) return okStatus();
    return fail(std::string("must be ") + op + " " + preview(*b) + ", got " + preview(v));
  };
  if (draft4_min) {
    BYD_RETURN_IF_ERROR(bound("minimum", ">", [](auto a, auto b) { return a <= b; }));
  } else {
    BYD_RETURN_IF_ERROR(bound("minimum", ">=", [](auto a, auto b) { return a < b; }));
  }
  if (draft4_max) {
    BYD_RETURN_IF_ERROR(bound("maximum", "<", [](auto a, auto b) { return a >= b; }));
  } else {
    BYD_RETURN_IF_ERROR(bound("maximum", "<=", [](auto a, auto b) { return a > b; }));
  }
  BYD_RETURN_IF_ERROR(bound("exclusiveMinimum", ">", [](auto a, auto b) { return a <= b; }));
  return bound("exclusiveMaximum", "<", [](auto a, auto b) { return a >= b; });
}

Status Validator::checkString(const json& schema, const json& v) {
  const std::string& s = v.get_ref<const std::string&>();
  const size_t length = std::count_if(s.begin(), s.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xc0) != 0x80;  // count code points, not bytes
  });
  if (const json* min = member(schema, "minLength")) {
    if (auto n = countOf(*min); n && length < *n) {
      return fail("must have at least " + plural(*n, "character") + ", got " +
                  std::to_string(length));
    }
  }
  if (const json* max = member(schema, "maxLength")) {
    if (auto n = countOf(*max); n && length > *n) {
      return fail("must have at most " + plural(*n, "character") + ", got " +
                  std::to_string(length));
    }
  }
  const json* pattern = member(schema, "pattern");
  if (!pattern || !pattern->is_string()) return okStatus();
  const std::string& text = pattern->get_ref<const std::string&>();
  const auto re = cachedRegex(text);
  if (!re->ok()) return fatal("schema error: invalid pattern " + quote(text) + ": " + re->error());
  if (RE2::PartialMatch(s, *re)) return okStatus();
  return fail("must match pattern " + quote(text) + ", got " + preview(v));
}

Status Validator::checkArray(const json& schema, const json& v) {
  if (const json* min = member(schema, "minItems")) {
    if (auto n = countOf(*min); n && v.size() < *n) {
      return fail("must have at least " + plural(*n, "item") + ", got " + std::to_string(v.size()));
    }
  }
  if (const json* max = member(schema, "maxItems")) {
    if (auto n = countOf(*max); n && v.size() > *n) {
      return fail("must have at most " + plural(*n, "item") + ", got " + std::to_string(v.size()));
    }
  }
  if (const json* unique = member(schema, "uniqueItems");
      unique && unique->is_boolean() && unique->get_ref<const bool&>()) {
    BYD_RETURN_IF_ERROR(checkUnique(v));
  }
  const json* items = member(schema, "items");
  if (!items) return okStatus();
  for (size_t i = 0; i < v.size(); ++i) {
    const json* item_schema = items;
    if (items->is_array()) {  // draft 4-7 positional form
      if (i >= items->size()) break;
      item_schema = &(*items)[i];
    }
    BYD_RETURN_IF_ERROR(descend({.index = i, .is_index = true}, *item_schema, v[i]));
  }
  return okStatus();
}

Status Validator::checkUnique(const json& v) {
  // Hashing and comparing recurse into the items; refuse what would recurse too far.
  if (nestedDeeperThan(v, kMaxInstanceDepth - path_.size())) {
    return fatal("nested more than " + std::to_string(kMaxInstanceDepth) + " levels deep");
  }
  std::vector<std::pair<size_t, size_t>> order;  // (hash, index)
  for (size_t i = 0; i < v.size(); ++i) order.emplace_back(hashJson(v[i]), i);
  std::sort(order.begin(), order.end());
  // Of all equal pairs, report the one a reader finds first: smallest later index.
  std::optional<std::pair<size_t, size_t>> best;
  for (size_t run = 0; run < order.size();) {
    size_t end = run;
    while (end < order.size() && order[end].first == order[run].first) ++end;
    for (size_t j = run + 1; j < end; ++j) {
      for (size_t i = run; i < j; ++i) {
        const auto pair = std::make_pair(order[j].second, order[i].second);
        if ((!best || pair < *best) && jsonEqual(v[pair.second], v[pair.first])) best = pair;
      }
    }
    run = end;
  }
  if (!best) return okStatus();
  return fail("items must be unique, but [" + std::to_string(best->second) + "] and [" +
              std::to_string(best->first) + "] are equal");
}

Status Validator::checkObject(const json& schema, const json& v) {
  if (const json* required = member(schema, "required"); required && required->is_array()) {
    for (const auto& name : *required) {
      const auto* key = name.get_ptr<const std::string*>();
      if (!key || v.contains(*key)) continue;
      path_.push_back({.key = *key});
      Status s = fail("required property is missing");
      path_.pop_back();
      return s;
    }
  }
  return checkProperties(schema, v);
}

Status Validator::checkProperties(const json& schema, const json& v) {
  const json* properties = member(schema, "properties");
  if (properties && !properties->is_object()) properties = nullptr;
  const json* additional = member(schema, "additionalProperties");
  auto declared = [&](const std::string& key) { return properties && properties->contains(key); };
  if (additional && additional->is_boolean() && !additional->get_ref<const bool&>()) {
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (declared(it.key())) continue;
      const std::string allowed = propertyList(properties);
      path_.push_back({.key = it.key()});
      Status s = fail(allowed.empty() ? "unknown property (no properties are allowed)"
                                      : "unknown property (allowed: " + allowed + ")");
      path_.pop_back();
      return s;
    }
  }
  if (properties) {
    for (auto p = properties->begin(); p != properties->end(); ++p) {
      const auto it = v.find(p.key());
      if (it != v.end()) BYD_RETURN_IF_ERROR(descend({.key = p.key()}, p.value(), *it));
    }
  }
  if (additional && additional->is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!declared(it.key())) BYD_RETURN_IF_ERROR(descend({.key = it.key()}, *additional, *it));
    }
  }
  return okStatus();
}

Status Validator::checkCombinators(const json& schema, const json& v) {
  ++combinators_;
  Status s = checkSubschemas(schema, v);
  --combinators_;
  return s;
}

Status Validator::checkSubschemas(const json& schema, const json& v) {
  if (const json* all = member(schema, "allOf"); all && all->is_array()) {
    for (const auto& sub : *all) BYD_RETURN_IF_ERROR(check(sub, v));
  }
  if (const json* any = member(schema, "anyOf"); any && any->is_array()) {
    BYD_RETURN_IF_ERROR(checkAlternatives(*any, v, /*exactly_one=*/false));
  }
  if (const json* one = member(schema, "oneOf"); one && one->is_array()) {
    BYD_RETURN_IF_ERROR(checkAlternatives(*one, v, /*exactly_one=*/true));
  }
  if (const json* negated = member(schema, "not")) {
    Status s = check(*negated, v);
    if (fatal_) return s;
    if (s.ok()) return fail("must not match the \"not\" schema, got " + preview(v));
  }
  return okStatus();
}

Status Validator::checkAlternatives(const json& alternatives, const json& v, bool exactly_one) {
  const std::string keyword = exactly_one ? "oneOf" : "anyOf";
  const std::string prefix = pathText() + ": ";
  std::vector<size_t> matched;
  std::string reasons;
  for (size_t i = 0; i < alternatives.size(); ++i) {
    Status s = check(alternatives[i], v);
    if (fatal_) return s;
    if (s.ok()) {
      if (!exactly_one) return okStatus();
      matched.push_back(i + 1);
      continue;
    }
    // Only the outermost combinator explains its branches: nested explanations would be cut
    // anyway, and building them made exponential schemas many times slower to give up on.
    if (combinators_ > 1) continue;
    // Branch messages about this same value drop the repeated path.
    std::string why = s.message();
    if (why.starts_with(prefix)) why.erase(0, prefix.size());
    reasons += (reasons.empty() ? "#" : "; #") + std::to_string(i + 1) + ": " + why;
  }
  if (reasons.size() > kMaxReasons) reasons = std::string(cutUtf8(reasons, kMaxReasons)) + "...";
  if (matched.size() == 1) return okStatus();
  if (matched.size() > 1) {
    return fail("must match exactly one of the oneOf schemas, but matches #" +
                std::to_string(matched[0]) + " and #" + std::to_string(matched[1]));
  }
  const std::string what = "must match " + std::string(exactly_one ? "exactly" : "at least") +
                           " one of the " + keyword + " schemas";
  return fail(reasons.empty() ? what : what + " (" + reasons + ")");
}

Status validate(const json& schema, const json& instance, std::string_view root_name) {
  Validator validator(schema, root_name);
  return validator.check(schema, instance);
}

}  // namespace byd::schemas
