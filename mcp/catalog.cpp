#include "mcp/catalog.h"

namespace byd::mcp {

Result<json> Peer::ask(std::string_view method, json params, std::string key) {
  if (key.empty()) key = "input-" + std::to_string(++asked_);
  BYD_ASSIGN_OR_RETURN(json answers,
                       askAll({{key, {{"method", method}, {"params", std::move(params)}}}}));
  return answers[key];
}

std::optional<std::map<std::string, std::string>> matchUriTemplate(std::string_view uri_template,
                                                                   std::string_view uri) {
  std::map<std::string, std::string> vars;
  size_t t = 0;  // position in the template
  size_t u = 0;  // position in the uri
  while (t < uri_template.size()) {
    if (uri_template[t] != '{') {
      if (u >= uri.size() || uri[u] != uri_template[t]) return std::nullopt;
      ++t;
      ++u;
      continue;
    }
    const size_t close = uri_template.find('}', t);
    if (close == std::string_view::npos || close == t + 1) return std::nullopt;
    const std::string name(uri_template.substr(t + 1, close - t - 1));
    t = close + 1;
    // The value runs to the next literal character of the template (or the end), and
    // never across a '/'.
    const char stop = t < uri_template.size() ? uri_template[t] : '\0';
    size_t end = u;
    while (end < uri.size() && uri[end] != '/' && (stop == '\0' || uri[end] != stop)) ++end;
    if (end == u) return std::nullopt;
    vars[name] = std::string(uri.substr(u, end - u));
    u = end;
  }
  if (u != uri.size()) return std::nullopt;
  return vars;
}

}  // namespace byd::mcp
