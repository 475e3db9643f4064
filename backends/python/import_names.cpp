#include "backends/python/import_names.h"

#include <cctype>
#include <string>
#include <unordered_map>

namespace byd {

extern const char kImportNames[];

namespace {

// MODULE<TAB>DISTRIBUTION lines; '#' starts a comment line.
const std::unordered_map<std::string, std::string>& table() {
  static const auto* map = [] {
    auto* m = new std::unordered_map<std::string, std::string>();
    std::string_view text = kImportNames;
    while (!text.empty()) {
      const size_t end = text.find('\n');
      std::string_view line = text.substr(0, end);
      text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
      const size_t tab = line.find('\t');
      if (line.empty() || line[0] == '#' || tab == std::string_view::npos) continue;
      m->emplace(std::string(line.substr(0, tab)), std::string(line.substr(tab + 1)));
    }
    return m;
  }();
  return *map;
}

bool identifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

}  // namespace

std::string normalizeDistribution(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c == '-' || c == '_' || c == '.') {
      if (out.empty() || out.back() != '-') out += '-';
    } else {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return out;
}

std::optional<std::string> distributionForModule(std::string_view module) {
  const std::string_view top = module.substr(0, module.find('.'));
  if (!identifier(top)) return std::nullopt;
  if (const auto it = table().find(std::string(top)); it != table().end()) return it->second;
  // A private module (`_cffi_backend`) belongs to some distribution the name does not tell.
  if (top[0] == '_') return std::nullopt;
  return normalizeDistribution(top);
}

size_t importNameCount() { return table().size(); }

}  // namespace byd
