#include "common/redact.h"

#include <re2/re2.h>

#include "common/text.h"

namespace byd {
namespace {

// Each pattern with what replaces it: the groups around the secret are kept.
struct Pattern {
  std::unique_ptr<RE2> re;
  const char* rewrite;
};

const std::vector<Pattern>& patterns() {
  static const auto* all = [] {
    auto* v = new std::vector<Pattern>;
    const std::pair<const char*, const char*> table[] = {
        {R"(-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?s:.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$))",
         "[redacted]"},
        {R"(\bAKIA[0-9A-Z]{16}\b)", "[redacted]"},
        {R"(\b(?:ghp|gho|ghu|ghs|ghr|github_pat|glpat)[-_][A-Za-z0-9_]{16,})", "[redacted]"},
        {R"(\bsk-[A-Za-z0-9_-]{16,})", "[redacted]"},
        {R"(\bxox[abprs]-[A-Za-z0-9-]{10,})", "[redacted]"},
        {R"(\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})", "[redacted]"},
        // An Authorization header's credentials, whatever the scheme; "Bearer x" anywhere.
        {R"(((?i)\bauthorization\s*:\s*[A-Za-z-]+\s+)[^\s"']+)", "\\1[redacted]"},
        {R"(((?i)\bbearer\s+)[A-Za-z0-9._~+/=-]{8,})", "\\1[redacted]"},
        // A URL's password: scheme://user:PASSWORD@host.
        {R"(([a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]+:)[^@\s/]+(@))", "\\1[redacted]\\2"},
        // curl -u user:PASSWORD, --user user:PASSWORD; mysql -pPASSWORD.
        {R"(((?:^|\s)(?:-u|--user)\s+[^\s:]+:)\S+)", "\\1[redacted]"},
        {R"(((?:^|\s)mysql(?:dump)?\s(?:.*\s)?-p)[^\s-]\S*)", "\\1[redacted]"},
        // A secret-sounding name, then its value: NAME=v, NAME: v, "name": "v",
        // env["NAME"] = "v"; and a flag: --password v.
        {R"(((?i)\b[a-z0-9_.-]*(?:password|passwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credentials?)[a-z0-9_.-]*["']?\]?\s*[:=]\s*)(?:"[^"\n]*"|'[^'\n]*'|[^\s,;&|]+))",
         "\\1[redacted]"},
        {R"(((?i)(?:^|\s)--?[a-z0-9_.-]*(?:password|passwd|secret|token|api[_-]?key|access[_-]?key)[a-z0-9_.-]*\s+)(?:"[^"\n]*"|'[^'\n]*'|[^\s-]\S*))",
         "\\1[redacted]"},
    };
    for (const auto& [pattern, rewrite] : table) {
      v->push_back({std::make_unique<RE2>(pattern), rewrite});
    }
    return v;
  }();
  return *all;
}

std::string cut(const std::string& text, size_t max_chars) {
  if (text.size() <= max_chars) return text;
  return std::string(utf8Truncate(text, max_chars)) + "… (" + std::to_string(text.size()) +
         " bytes)";
}

nlohmann::json summarize(const nlohmann::json& v, size_t max_chars, int depth) {
  if (v.is_string()) return cut(redactSecrets(v.get<std::string>()), max_chars);
  if (depth >= 3 && (v.is_object() || v.is_array())) {
    return "(" + std::to_string(v.size()) + (v.is_object() ? " keys)" : " items)");
  }
  if (v.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [key, value] : v.items()) {
      out[key] = secretName(key) && !value.is_null() ? nlohmann::json(kRedacted)
                                                     : summarize(value, max_chars, depth + 1);
    }
    return out;
  }
  if (v.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (size_t i = 0; i < v.size() && i < 20; ++i)
      out.push_back(summarize(v[i], max_chars, depth + 1));
    if (v.size() > 20) out.push_back("… (" + std::to_string(v.size()) + " items)");
    return out;
  }
  return v;
}

}  // namespace

std::string redactSecrets(std::string_view text) {
  std::string out(text);
  for (const Pattern& p : patterns()) RE2::GlobalReplace(&out, *p.re, p.rewrite);
  return out;
}

bool secretName(std::string_view key) {
  static const RE2 re(
      R"((?i)password|passwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credential|authorization)");
  return RE2::PartialMatch(key, re);
}

nlohmann::json summarizeArguments(const nlohmann::json& args, size_t max_chars) {
  return summarize(args, max_chars, 0);
}

}  // namespace byd
