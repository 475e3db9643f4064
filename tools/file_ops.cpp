// mkdir, move and delete: the file operations besides reading and writing a file.

#include "tools/tool.h"

namespace byd {
namespace {

std::string shown(const std::string& key) { return "'" + (key.empty() ? "." : key) + "'"; }

std::string count(uint64_t n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

Result<ToolOutput> runMkdir(const json& args, ToolContext& ctx) {
  BYD_ASSIGN_OR_RETURN(std::string key, ctx.backend.normalize(argString(args, "path")));
  BYD_ASSIGN_OR_RETURN(bool created, ctx.backend.makeDir(key));
  ToolOutput out;
  out.text = created ? "Made the directory " + shown(key) + "."
                     : shown(key) + " is a directory already; nothing changed.";
  out.structured = {{"path", key}, {"created", created}};
  return out;
}

Result<ToolOutput> runMove(const json& args, ToolContext& ctx) {
  BYD_ASSIGN_OR_RETURN(std::string from, ctx.backend.normalize(argString(args, "source")));
  BYD_ASSIGN_OR_RETURN(std::string to, ctx.backend.normalize(argString(args, "destination")));
  BYD_ASSIGN_OR_RETURN(MoveOutcome done,
                       ctx.backend.move(from, to, argBool(args, "overwrite", false)));
  const std::string_view type = fileTypeName(done.type);
  ToolOutput out;
  out.text = "Moved the " + std::string(type == "dir" ? "directory" : type) + " " + shown(from) +
             " to " + shown(to) + (done.replaced ? ", replacing what was there." : ".");
  out.structured = {
      {"source", from}, {"destination", to}, {"type", type}, {"replaced", done.replaced}};
  return out;
}

Result<ToolOutput> runDelete(const json& args, ToolContext& ctx) {
  BYD_ASSIGN_OR_RETURN(std::string key, ctx.backend.normalize(argString(args, "path")));
  if (key.empty()) return invalidArgument("the workspace root cannot be deleted");
  BYD_ASSIGN_OR_RETURN(RemoveOutcome done,
                       ctx.backend.remove(key, argBool(args, "recursive", false)));
  ToolOutput out;
  if (done.type == FileType::kDir) {
    out.text = "Deleted the directory " + shown(key) + " with " +
               count(done.files, "file", "files") + " and " +
               count(done.dirs - 1, "directory", "directories") + " in it.";
  } else {
    out.text = "Deleted the " + std::string(fileTypeName(done.type)) + " " + shown(key) + ".";
  }
  out.structured = {
      {"path", key}, {"type", fileTypeName(done.type)}, {"files", done.files}, {"dirs", done.dirs}};
  return out;
}

constexpr ArgumentAlias kMkdirAliases[] = {
    {"dir_path", "path"},
};

constexpr ArgumentAlias kMoveAliases[] = {
    {"from", "source"},     {"to", "destination"},     {"src", "source"},
    {"dst", "destination"}, {"source_path", "source"}, {"destination_path", "destination"},
    {"force", "overwrite"}, {"replace", "overwrite"},
};

constexpr ArgumentAlias kDeleteAliases[] = {
    {"file_path", "path"},
    {"force", "",
     "delete has no force: a missing path is an error, and a directory with "
     "something in it needs recursive: true"},
};

}  // namespace

extern const ToolSpec kMkdirTool = {
    .name = "mkdir",
    .operation = "mkdir",
    .title = "Make directory",
    .description =
        "Make a directory in the workspace, and any missing parents (as mkdir -p). A "
        "directory that exists already is not an error.",
    .read_only = false,
    .destructive = false,
    .idempotent = true,
    .handler = runMkdir,
    .aliases = kMkdirAliases,
};

extern const ToolSpec kMoveTool = {
    .name = "move",
    .operation = "move",
    .title = "Move or rename",
    .description =
        "Move or rename a file, directory or symlink within the workspace, in one atomic step. "
        "destination is the new path, not a directory to move into; its missing parents are "
        "made. An existing destination is an error unless overwrite is true (a file replaces a "
        "file, a directory an empty directory).",
    .read_only = false,
    .destructive = true,
    .idempotent = false,
    .handler = runMove,
    .aliases = kMoveAliases,
};

extern const ToolSpec kDeleteTool = {
    .name = "delete",
    .operation = "delete",
    .title = "Delete",
    .description =
        "Delete a file or symlink (never what it points at), an empty directory, or with "
        "recursive=true a directory and everything in it.",
    .read_only = false,
    .destructive = true,
    .idempotent = true,
    .handler = runDelete,
    .aliases = kDeleteAliases,
};

}  // namespace byd
