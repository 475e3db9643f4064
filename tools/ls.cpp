// ls: the entries of one directory, sorted by name.

#include <algorithm>

#include "common/text.h"
#include "tools/tool.h"
#include "tools/top_n.h"

namespace byd {
namespace {

// One line of the listing: type, size (right-aligned in 10), modification time, name; appended
// in place, as a listing has up to max_results of them.
void appendEntryLine(std::string& text, const FileInfo& e, std::string_view mtime) {
  const std::string_view type = fileTypeName(e.type);
  text += type;
  text.append(8 - std::min<size_t>(type.size(), 8), ' ');
  const std::string size = e.type == FileType::kDir ? "-" : humanSize(e.size);
  text.append(10 - std::min<size_t>(size.size(), 10), ' ');
  text += size;
  text += "  ";
  text += mtime;
  text += "  ";
  text += e.name;
  if (e.type == FileType::kDir) text += '/';
  if (e.type == FileType::kSymlink) text += '@';
  text += '\n';
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
    char time_buf[kIsoTimeChars];
    isoTimeTo(e.mtime_ns, time_buf);
    const std::string_view mtime(time_buf, kIsoTimeChars);
    appendEntryLine(out.text, e, mtime);
    if (!ctx.structured) continue;
    json item = json::object();
    item.emplace("name", e.name);
    item.emplace("type", fileTypeName(e.type));
    item.emplace("size", e.size);
    item.emplace("mtime", mtime);
    list.push_back(std::move(item));
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
