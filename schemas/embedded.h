#pragma once
// The JSON files under schemas/, compiled into the binary (see schemas/embed.cmake). Parsed
// once on first use; the returned references live for the whole process. Thread-safe.

#include <string_view>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace byd::schemas {

// The parsed schema at `relative_path` (e.g. "tools/ls.input.json"), or NotFound.
Result<const nlohmann::json*> embedded(std::string_view relative_path);

}  // namespace byd::schemas
