#include "tools/registry.h"

#include <array>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "common/text.h"
#include "schemas/embedded.h"
#include "schemas/validator.h"

namespace byd {

extern const ToolSpec kLsTool;
extern const ToolSpec kReadFileTool;
extern const ToolSpec kWriteFileTool;
extern const ToolSpec kEditFileTool;
extern const ToolSpec kMkdirTool;
extern const ToolSpec kMoveTool;
extern const ToolSpec kDeleteTool;
extern const ToolSpec kGlobTool;
extern const ToolSpec kGrepTool;
extern const ToolSpec kExecuteTool;
extern const ToolSpec kRunPythonTool;

namespace {

// The table. Order is the order of tools/list.
constexpr std::array<const ToolSpec*, 11> kSpecs = {
    &kLsTool,     &kReadFileTool, &kWriteFileTool, &kEditFileTool, &kMkdirTool,     &kMoveTool,
    &kDeleteTool, &kGlobTool,     &kGrepTool,      &kExecuteTool,  &kRunPythonTool,
};

const nlohmann::json* schemaFor(std::string_view name, std::string_view which) {
  auto r = schemas::embedded("tools/" + std::string(name) + "." + std::string(which) + ".json");
  if (!r.ok()) {
    // Every tool ships both schemas; a missing one is a build mistake caught by the unit tests.
    spdlog::critical("{}", r.status().message());
    static const nlohmann::json kEmpty = nlohmann::json::object();
    return &kEmpty;
  }
  return *r;
}

std::string truncationNote(size_t shown, size_t total) {
  return "\n\n[output cut at " + humanSize(shown) + " of " + humanSize(total) +
         "; narrow the request (offset/limit, a more specific path or pattern) to see the rest]";
}

}  // namespace

std::span<const Tool> allTools() {
  static const std::vector<Tool> tools = [] {
    std::vector<Tool> out;
    for (const ToolSpec* spec : kSpecs) {
      out.push_back({spec, schemaFor(spec->name, "input"), schemaFor(spec->name, "output")});
    }
    return out;
  }();
  return tools;
}

const Tool* findTool(std::string_view name) {
  for (const Tool& tool : allTools()) {
    if (tool.spec->name == name) return &tool;
  }
  return nullptr;
}

namespace {

// `arguments` with the spellings of other tools taken as ours (copied into `renamed` when any
// is), or why one is refused.
Result<const nlohmann::json*> takeAliases(const Tool& tool, const nlohmann::json& arguments,
                                          nlohmann::json& renamed) {
  const nlohmann::json* args = &arguments;
  if (!arguments.is_object()) return args;  // the schema says what is wrong with it
  const std::string name(tool.spec->name);
  for (const ArgumentAlias& alias : tool.spec->aliases) {
    const std::string spelling(alias.spelling), ours(alias.ours);
    if (!args->contains(spelling)) continue;
    if (ours.empty()) {
      return invalidArgument(name + ": there is no argument '" + spelling +
                             "': " + std::string(alias.advice));
    }
    if (args != &renamed) {
      renamed = arguments;
      args = &renamed;
    }
    if (alias.ours != kIgnored) {
      if (renamed.contains(ours)) {
        return invalidArgument(name + ": '" + spelling + "' and '" + ours +
                               "' are the same argument (" + spelling +
                               " is how other tools name " + ours + "); give '" + ours + "' alone");
      }
      renamed[ours] = std::move(renamed[spelling]);
    }
    renamed.erase(spelling);
  }
  return args;
}

}  // namespace

nlohmann::json callTool(const Tool& tool, const nlohmann::json& arguments, ToolContext& ctx,
                        bool structured) {
  auto error = [](const std::string& message) {
    return nlohmann::json{{"content", {{{"type", "text"}, {"text", message}}}}, {"isError", true}};
  };
  nlohmann::json renamed;
  const Result<const nlohmann::json*> taken = takeAliases(tool, arguments, renamed);
  if (!taken.ok()) return error(taken.status().message());
  const nlohmann::json& args = **taken;
  if (Status s = schemas::validate(*tool.input_schema, args, "arguments"); !s.ok()) {
    return error("invalid arguments for " + std::string(tool.spec->name) + ": " + s.message());
  }
  ctx.structured = structured;
  Result<ToolOutput> out = tool.spec->handler(args, ctx);
  if (!out.ok()) return error(out.status().message());

  std::string text = std::move(out->text);
  if (text.size() > ctx.limits.max_text_bytes) {
    const size_t total = text.size();
    text = std::string(utf8Truncate(text, ctx.limits.max_text_bytes));
    text += truncationNote(text.size(), total);
  }
  // Built member by member: a braced list would copy the text and make temporary arrays.
  nlohmann::json block = nlohmann::json::object();
  block.emplace("type", "text");
  block.emplace("text", std::move(text));
  nlohmann::json content = nlohmann::json::array();
  content.push_back(std::move(block));
  for (auto& extra : out->extra_content) content.push_back(std::move(extra));
  nlohmann::json result = nlohmann::json::object();
  result.emplace("content", std::move(content));
  result.emplace("isError", out->is_error);
  if (structured) result.emplace("structuredContent", std::move(out->structured));
  return result;
}

}  // namespace byd
