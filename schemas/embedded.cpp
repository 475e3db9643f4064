#include "schemas/embedded.h"

#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace byd::schemas {

extern const std::pair<std::string_view, std::string_view> kEmbedded[];
extern const int kEmbeddedCount;

Result<const nlohmann::json*> embedded(std::string_view relative_path) {
  static const auto* parsed = [] {
    auto* table = new std::map<std::string, nlohmann::json, std::less<>>();
    for (int i = 0; i < kEmbeddedCount; ++i) {
      // A schema that does not parse is a build mistake; the unit tests parse every one.
      (*table)[std::string(kEmbedded[i].first)] =
          nlohmann::json::parse(kEmbedded[i].second, nullptr, /*allow_exceptions=*/false);
    }
    return table;
  }();
  auto it = parsed->find(relative_path);
  if (it == parsed->end() || it->second.is_discarded()) {
    return notFound("no embedded schema '" + std::string(relative_path) + "'");
  }
  return &it->second;
}

}  // namespace byd::schemas
