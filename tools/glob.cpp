// glob: files whose workspace path matches a glob pattern, newest first.

#include <algorithm>

#include "common/glob.h"
#include "tools/tool.h"
#include "tools/top_n.h"
#include "tools/walk.h"

namespace byd {
namespace {

struct Match {
  std::string path;
  int64_t mtime_ns;
};

Result<ToolOutput> runGlob(const json& args, ToolContext& ctx) {
  const std::string pattern = argString(args, "pattern");
  const std::string path = argString(args, "path", ".");
  BYD_ASSIGN_OR_RETURN(GlobMatcher matcher, GlobMatcher::compile(pattern));
  BYD_ASSIGN_OR_RETURN(std::string base, ctx.backend.normalize(path));
  BYD_ASSIGN_OR_RETURN(FileInfo base_info, ctx.backend.stat(base));
  if (base_info.type != FileType::kDir) return invalidArgument("'" + path + "' is not a directory");

  WalkOptions options;
  options.skip_git = pattern.find(".git") == std::string::npos;
  options.descend = [&](const std::string& rel) { return matcher.couldMatchBelow(rel); };
  // Only matches are shown, dated: the rest need no stat.
  options.detail = [&](const std::string& rel, FileType) { return matcher.matches(rel); };
  // The newest max_results matches only: memory stays bounded however many paths match.
  auto newest = makeTopN<Match>(ctx.limits.max_results, [](const Match& a, const Match& b) {
    return a.mtime_ns != b.mtime_ns ? a.mtime_ns > b.mtime_ns : a.path < b.path;
  });
  Status walked =
      walkTree(ctx.backend, base, options, ctx.cancel,
               [&](const std::string& key, const std::string& rel, const FileInfo& info) {
                 if (info.type == FileType::kDir || !matcher.matches(rel)) return true;
                 int64_t mtime = info.mtime_ns;
                 if (info.type == FileType::kSymlink) {
                   // Only links that resolve to a file inside the workspace count, dated by
                   // the file they point to.
                   auto target = ctx.backend.stat(key);
                   if (!target.ok() || target->type != FileType::kFile) return true;
                   mtime = target->mtime_ns;
                 }
                 newest.offer({key, mtime});
                 return true;
               });
  BYD_RETURN_IF_ERROR(walked);

  const size_t total = newest.seen();
  const std::vector<Match> matches = newest.take();
  const size_t keep = matches.size();

  ToolOutput out;
  json paths = json::array();
  for (const Match& m : matches) {
    out.text += m.path;
    out.text += '\n';
    if (ctx.structured) paths.push_back(m.path);
  }
  if (total == 0) out.text = "No files match '" + pattern + "'.\n";
  if (keep < total) {
    out.text += "[showing the " + std::to_string(keep) + " newest of " + std::to_string(total) +
                " matches; use a more specific pattern or path]\n";
  }
  out.structured = {{"pattern", pattern},
                    {"paths", std::move(paths)},
                    {"total", total},
                    {"truncated", keep < total}};
  out.text += hiddenNote(ctx, out.structured);
  return out;
}

}  // namespace

extern const ToolSpec kGlobTool = {
    .name = "glob",
    .operation = "glob",
    .title = "Find files by pattern",
    .description =
        "Find files whose path (relative to `path`, default the workspace root) matches a glob "
        "pattern, newest first. `*` and `?` stay within one path component, `**` spans "
        "directories (`**/*.py` finds Python files at any depth), `[abc]` and `{a,b}` work as in "
        "a shell. `.git` is skipped unless the pattern names it. Returns workspace-relative "
        "paths, at most 1000.",
    .read_only = true,
    .destructive = false,
    .idempotent = true,
    .handler = runGlob,
};

}  // namespace byd
