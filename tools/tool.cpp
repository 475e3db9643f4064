#include "tools/tool.h"

namespace byd {

std::string argString(const json& args, std::string_view key, std::string_view fallback) {
  auto it = args.find(key);
  if (it == args.end() || !it->is_string()) return std::string(fallback);
  return it->get<std::string>();
}

int64_t argInt(const json& args, std::string_view key, int64_t fallback) {
  auto it = args.find(key);
  if (it == args.end() || !it->is_number()) return fallback;
  return it->get<int64_t>();
}

bool argBool(const json& args, std::string_view key, bool fallback) {
  auto it = args.find(key);
  if (it == args.end() || !it->is_boolean()) return fallback;
  return it->get<bool>();
}

}  // namespace byd
