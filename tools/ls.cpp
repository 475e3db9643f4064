// ls: the entries of one directory, sorted by name.

#include <algorithm>

#include "common/text.h"
#include "tools/tool.h"
#include "tools/top_n.h"

namespace byd {
namespace {

std::string entryLine(const FileInfo& e, const std::string& mtime) {
  char size[24];
  snprintf(size, sizeof size, "%10s", e.type == FileType::kDir ? "-" : humanSize(e.size).c_str());
  std::string name = e.name;
  if (e.type == FileType::kDir) name += '/';
  if (e.type == FileType::kSymlink) name += '@';
  return std::string(fileTypeName(e.type)) + std::string(8 - fileTypeName(e.type).size(), ' ') +
         size + "  " + mtime + "  " + name + "\n";
}

Result<ToolOutput> runLs(const json& args, ToolContext& ctx) {
  const std::string path = argString(args, "path", ".");
  BYD_ASSIGN_OR_RETURN(std::string key, ctx.backend.normalize(path));
  BYD_ASSIGN_OR_RETURN(FileInfo info, ctx.backend.stat(key));
  if (info.type != FileType::kDir) {
    return invalidArgument("'" + path + "' is not a directory; use read_file to read a file");
  }
  auto first = makeTopN<FileInfo>(
      ctx.limits.max_results, [](const FileInfo& a, const FileInfo& b) { return a.name < b.name; });
  BYD_RETURN_IF_ERROR(ctx.backend.listEach(key, [&first](const FileInfo& e) {
    first.offer(e);
    return true;
  }));
  const size_t total = first.seen();
  const std::vector<FileInfo> entries = first.take();
  const bool truncated = total > entries.size();

  ToolOutput out;
  json list = json::array();
  const std::string shown = key.empty() ? "." : key;
  out.text = shown + ": " + std::to_string(total) + (total == 1 ? " entry\n" : " entries\n");
  out.text.reserve(out.text.size() + entries.size() * 64);
  for (const FileInfo& e : entries) {
    std::string mtime = isoTime(e.mtime_ns);
    out.text += entryLine(e, mtime);
    list.push_back({{"name", e.name},
                    {"type", fileTypeName(e.type)},
                    {"size", e.size},
                    {"mtime", std::move(mtime)}});
  }
  if (truncated) {
    out.text += "[showing the first " + std::to_string(entries.size()) + " of " +
                std::to_string(total) + " entries; use glob with a pattern to narrow]\n";
  }
  out.structured = {
      {"path", shown}, {"entries", std::move(list)}, {"total", total}, {"truncated", truncated}};
  out.text += hiddenNote(ctx, out.structured);
  return out;
}

}  // namespace

extern const ToolSpec kLsTool = {
    .name = "ls",
    .operation = "ls",
    .title = "List directory",
    .description =
        "List the entries of a directory in the workspace: name, type (file, dir, symlink, "
        "other), size and modification time, sorted by name. Paths are relative to the "
        "workspace root (an absolute path inside the workspace also works).",
    .read_only = true,
    .destructive = false,
    .idempotent = true,
    .handler = runLs,
};

}  // namespace byd
