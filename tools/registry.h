#pragma once
// The one table of tools (registry.cpp). tools/list is derived from it in table order, and
// tools/call finds handlers in it. Immutable after first use; safe from any thread.

#include <span>
#include <string_view>

#include <nlohmann/json.hpp>

#include "tools/tool.h"

namespace byd {

struct Tool {
  const ToolSpec* spec;
  const nlohmann::json* input_schema;
  const nlohmann::json* output_schema;
};

// Every tool, in a stable order.
std::span<const Tool> allTools();
// The tool named `name`, or nullptr.
const Tool* findTool(std::string_view name);

// Validates `arguments` against the tool's inputSchema, runs its handler and shapes the MCP
// CallToolResult. Tool faults become `isError: true` results; structuredContent is included
// when `structured` is set (protocol 2025-06-18 and later).
nlohmann::json callTool(const Tool& tool, const nlohmann::json& arguments, ToolContext& ctx,
                        bool structured);

}  // namespace byd
