// edit_file: exact string replacement with a unified diff, atomic like write_file.

#include <algorithm>

#include "common/text.h"
#include "tools/diff.h"
#include "tools/tool.h"

namespace byd {
namespace {

// Rewrites bare LF as CRLF, for edits to a CRLF file given with LF line endings.
std::string toCrlf(std::string_view s) {
  std::string out;
  out.reserve(s.size() + s.size() / 16);
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\n' && (i == 0 || s[i - 1] != '\r')) out += '\r';
    out += s[i];
  }
  return out;
}

bool hasBareLf(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\n' && (i == 0 || s[i - 1] != '\r')) return true;
  }
  return false;
}

std::vector<size_t> findAll(std::string_view text, std::string_view needle) {
  std::vector<size_t> hits;
  for (size_t pos = text.find(needle); pos != std::string_view::npos;
       pos = text.find(needle, pos + needle.size())) {
    hits.push_back(pos);
  }
  return hits;
}

std::string lineList(std::string_view text, const std::vector<size_t>& hits) {
  std::string out;
  size_t line = 1, pos = 0;
  for (size_t i = 0; i < hits.size() && i < 10; ++i) {
    line += std::count(text.begin() + pos, text.begin() + hits[i], '\n');
    pos = hits[i];
    out += (i ? ", " : "") + std::to_string(line);
  }
  if (hits.size() > 10) out += ", ...";
  return out;
}

Result<std::string> loadText(ToolContext& ctx, const std::string& key, const std::string& path) {
  BYD_ASSIGN_OR_RETURN(FileInfo info, ctx.backend.stat(key));
  if (info.type == FileType::kDir) return invalidArgument("'" + path + "' is a directory");
  if (info.size > ctx.limits.max_read_bytes) {
    return resourceExhausted("'" + path + "' is " + humanSize(info.size) + ", over the " +
                             humanSize(ctx.limits.max_read_bytes) + " edit limit");
  }
  // One byte more than the limit: a file that grew since stat() must not be cut and written back.
  BYD_ASSIGN_OR_RETURN(std::string text, ctx.backend.read(key, 0, ctx.limits.max_read_bytes + 1));
  if (text.size() > ctx.limits.max_read_bytes) {
    return resourceExhausted("'" + path + "' grew past the " +
                             humanSize(ctx.limits.max_read_bytes) + " edit limit");
  }
  if (text.substr(0, 8192).find('\0') != std::string::npos) {
    return invalidArgument("'" + path + "' is a binary file; edit_file edits text only");
  }
  return text;
}

Result<ToolOutput> runEditFile(const json& args, ToolContext& ctx) {
  const std::string path = argString(args, "path");
  std::string old_string = argString(args, "old_string");
  std::string new_string = argString(args, "new_string");
  const bool replace_all = argBool(args, "replace_all");
  const bool dry_run = argBool(args, "dry_run");
  if (old_string.empty()) {
    return invalidArgument("old_string is empty; use write_file to create or replace a file");
  }
  if (old_string == new_string) {
    return invalidArgument("old_string and new_string are identical; nothing would change");
  }
  BYD_ASSIGN_OR_RETURN(std::string key, ctx.backend.normalize(path));
  BYD_ASSIGN_OR_RETURN(std::string text, loadText(ctx, key, path));

  // Keep the file's line endings: in a CRLF file, LF in the edit means CRLF.
  if (text.find("\r\n") != std::string::npos && !hasBareLf(text)) {
    if (hasBareLf(old_string)) old_string = toCrlf(old_string);
    if (hasBareLf(new_string)) new_string = toCrlf(new_string);
  }
  const std::vector<size_t> hits = findAll(text, old_string);
  if (hits.empty()) {
    return notFound("old_string was not found in '" + path +
                    "'; read the file again and copy the text exactly, including whitespace");
  }
  if (hits.size() > 1 && !replace_all) {
    return failedPrecondition("old_string occurs " + std::to_string(hits.size()) + " times in '" +
                              path + "' (lines " + lineList(text, hits) +
                              "); add surrounding lines to make it unique, or set replace_all");
  }
  std::vector<Replacement> reps;
  for (size_t at : hits) reps.push_back({at, old_string.size(), new_string});
  const std::string diff = unifiedDiff(key, text, reps);
  if (!dry_run) {
    BYD_RETURN_IF_ERROR(
        ctx.backend.write(key, applyReplacements(text, reps), WriteMode::kOverwrite));
  }
  ToolOutput out;
  out.text = std::string(dry_run ? "Would replace " : "Replaced ") + std::to_string(hits.size()) +
             (hits.size() == 1 ? " occurrence" : " occurrences") + " in '" + key + "'" +
             (dry_run ? " (dry run, file unchanged)" : "") + ":\n" + repairUtf8(diff);
  out.structured = {{"path", key},
                    {"replacements", hits.size()},
                    {"dry_run", dry_run},
                    {"diff", repairUtf8(diff)}};
  return out;
}

constexpr ArgumentAlias kEditFileAliases[] = {
    {"file_path", "path"},
};

}  // namespace

extern const ToolSpec kEditFileTool = {
    .name = "edit_file",
    .operation = "edit",
    .title = "Edit file",
    .description =
        "Replace an exact string in a file. old_string must occur exactly once unless "
        "replace_all is set; copy it from read_file output without the line-number prefix, "
        "whitespace included. Returns a unified diff; dry_run shows the diff without writing. "
        "Line endings (LF or CRLF) are kept. The write is atomic.",
    .read_only = false,
    .destructive = true,
    .idempotent = false,
    .handler = runEditFile,
    .aliases = kEditFileAliases,
};

}  // namespace byd
