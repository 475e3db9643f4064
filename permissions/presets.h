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

// A ruleset document that says "extends": PRESET, made whole: for each operation the preset's
// rules come first, so that its always-on denials (secrets, system paths, dangerous commands)
// hold whatever the document adds, then the document's own; the document's defaults, name and
// description win over the preset's, and what it leaves out is the preset's. A document
// without "extends" is returned as it is.
Result<nlohmann::json> extendPreset(const nlohmann::json& doc);

}  // namespace byd::permissions
