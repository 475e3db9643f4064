#include "backends/backend.h"

#include <algorithm>
#include <climits>

namespace byd {

std::string_view fileTypeName(FileType type) {
  switch (type) {
    case FileType::kFile:
      return "file";
    case FileType::kDir:
      return "dir";
    case FileType::kSymlink:
      return "symlink";
    case FileType::kOther:
      return "other";
  }
  return "other";
}

Status FileSystem::listEach(const std::string& key,
                            const std::function<bool(const FileInfo&)>& visit) const {
  BYD_ASSIGN_OR_RETURN(std::vector<FileInfo> entries, list(key));
  for (const FileInfo& e : entries) {
    if (!visit(e)) break;
  }
  return okStatus();
}

Status FileSystem::readStream(const std::string& key, size_t chunk_bytes,
                              const std::function<bool(std::string_view)>& sink) const {
  chunk_bytes = std::max<size_t>(chunk_bytes, 1);
  for (uint64_t offset = 0;; offset += chunk_bytes) {
    BYD_ASSIGN_OR_RETURN(std::string chunk, read(key, offset, chunk_bytes));
    if (chunk.empty() || !sink(chunk) || chunk.size() < chunk_bytes) return okStatus();
  }
}

ExecResult execResultFrom(Captured captured, int exit_code, double duration_ms) {
  ExecResult r;
  r.stdout_data = std::move(captured.out);
  r.stderr_data = std::move(captured.err);
  r.stdout_end = std::move(captured.out_end);
  r.stderr_end = std::move(captured.err_end);
  r.stdout_bytes = captured.out_bytes;
  r.stderr_bytes = captured.err_bytes;
  r.stdout_truncated = captured.out_truncated;
  r.stderr_truncated = captured.err_truncated;
  r.timed_out = captured.timed_out;
  r.cancelled = captured.cancelled;
  r.exit_code = exit_code;
  r.duration_ms = duration_ms;
  return r;
}

std::string joinKey(std::string_view dir, std::string_view name) {
  if (dir.empty()) return std::string(name);
  std::string out(dir);
  if (out.back() != '/') out += '/';
  out += name;
  return out;
}

Result<std::string> lexicalNormalize(std::string_view path) {
  if (path.find('\0') != std::string_view::npos) {
    return invalidArgument("path contains a NUL byte");
  }
  if (path.size() >= PATH_MAX) {
    return invalidArgument("path is " + std::to_string(path.size()) +
                           " characters long; the limit is " + std::to_string(PATH_MAX - 1));
  }
  const bool absolute = !path.empty() && path.front() == '/';
  std::vector<std::string_view> parts;
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t end = path.find('/', pos);
    if (end == std::string_view::npos) end = path.size();
    std::string_view part = path.substr(pos, end - pos);
    pos = end + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (parts.empty()) {
        return permissionDenied("'" + std::string(path) + "' is outside the workspace");
      }
      parts.pop_back();
      continue;
    }
    parts.push_back(part);
  }
  std::string out = absolute ? "/" : "";
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += '/';
    out += parts[i];
  }
  return out;
}

bool stripDirPrefix(std::string_view path, std::string_view dir, std::string* rest) {
  if (dir == "/") {
    *rest = std::string(path.substr(1));
    return true;
  }
  if (path.substr(0, dir.size()) != dir) return false;
  if (path.size() == dir.size()) {
    rest->clear();
    return true;
  }
  if (path[dir.size()] != '/') return false;
  *rest = std::string(path.substr(dir.size() + 1));
  return true;
}

}  // namespace byd
