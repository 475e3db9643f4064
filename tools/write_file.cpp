// write_file: create, overwrite or append to a file, atomically.

#include <algorithm>

#include "common/text.h"
#include "tools/tool.h"

namespace byd {
namespace {

Result<WriteMode> parseMode(std::string_view mode) {
  if (mode == "overwrite") return WriteMode::kOverwrite;
  if (mode == "create") return WriteMode::kCreate;
  if (mode == "append") return WriteMode::kAppend;
  return invalidArgument("unknown mode '" + std::string(mode) + "'");
}

size_t countLines(std::string_view s) {
  if (s.empty()) return 0;
  return std::count(s.begin(), s.end(), '\n') + (s.back() == '\n' ? 0 : 1);
}

Result<ToolOutput> runWriteFile(const json& args, ToolContext& ctx) {
  const std::string path = argString(args, "path");
  const std::string content = argString(args, "content");
  const std::string mode_name = argString(args, "mode", "overwrite");
  BYD_ASSIGN_OR_RETURN(WriteMode mode, parseMode(mode_name));
  BYD_ASSIGN_OR_RETURN(std::string key, ctx.backend.normalize(path));
  if (key.empty()) return invalidArgument("'" + path + "' is the workspace root, not a file");
  BYD_ASSIGN_OR_RETURN(WriteOutcome done, ctx.backend.write(key, content, mode));

  ToolOutput out;
  const std::string verb = mode == WriteMode::kAppend && !done.created ? "Appended"
                           : done.created                              ? "Created"
                                                                       : "Overwrote";
  const size_t lines = countLines(content);
  out.text = verb + " '" + key + "': wrote " + std::to_string(content.size()) + " bytes (" +
             std::to_string(lines) + (lines == 1 ? " line" : " lines") + "); the file is now " +
             humanSize(done.size) + ".";
  out.structured = {{"path", key},
                    {"mode", mode_name},
                    {"created", done.created},
                    {"bytes_written", content.size()},
                    {"lines_written", countLines(content)},
                    {"size", done.size}};
  return out;
}

constexpr ArgumentAlias kWriteFileAliases[] = {
    {"file_path", "path"},
};

}  // namespace

extern const ToolSpec kWriteFileTool = {
    .name = "write_file",
    .operation = "write",
    .title = "Write file",
    .description =
        "Write a file in the workspace. mode=overwrite (default) replaces the file or creates it; "
        "mode=create fails if the file exists; mode=append adds to the end. Parent directories "
        "are created. The write is atomic (a reader never sees half a file) and keeps the "
        "file's permission bits. Prefer edit_file for changing part of an existing file.",
    .read_only = false,
    .destructive = true,
    .idempotent = false,
    .handler = runWriteFile,
    .aliases = kWriteFileAliases,
};

}  // namespace byd
