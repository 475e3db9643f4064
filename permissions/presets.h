#pragma once
// The named rulesets: default, permissive, readonly and strict (README lists every rule). Each
// is built as a ruleset JSON document, so --print-ruleset shows exactly what is enforced.
// Pure functions; safe from any thread.

#include <span>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace byd::permissions {

std::span<const std::string_view> presetNames();
// The preset's ruleset document, or NotFound naming the presets that exist.
Result<nlohmann::json> presetJson(std::string_view name);

}  // namespace byd::permissions
