#include "tools/walk.h"

#include <algorithm>
#include <deque>
#include <vector>

namespace byd {

Status walkTree(const Backend& backend, const std::string& start_key, const WalkOptions& options,
                const CancelToken& cancel,
                const std::function<bool(const std::string& key, const std::string& rel,
                                         const FileInfo& info)>& visit) {
  // Explicit stack rather than recursion: a hostile tree may be thousands of levels deep.
  std::vector<std::pair<std::string, std::string>> stack = {{start_key, ""}};
  while (!stack.empty()) {
    if (cancel.cancelled()) return cancelled("cancelled");
    auto [dir_key, dir_rel] = std::move(stack.back());
    stack.pop_back();
    // A deque grows without copying what it holds: a directory of a million entries costs
    // their size once, not twice while a vector moves them.
    std::deque<FileInfo> entries;
    auto keep = [&entries](const FileInfo& e) {
      entries.push_back(e);
      return true;
    };
    const Status listed =
        options.detail
            ? backend.listTyped(
                  dir_key,
                  [&](std::string_view name, FileType type) {
                    return type != FileType::kDir && options.detail(joinKey(dir_rel, name), type);
                  },
                  keep)
            : backend.listEach(dir_key, keep);
    if (!listed.ok()) continue;
    // Sorted so that results (and which ones a cap keeps) do not depend on readdir order.
    std::sort(entries.begin(), entries.end(),
              [](const FileInfo& a, const FileInfo& b) { return a.name > b.name; });
    for (const FileInfo& entry : entries) {
      const std::string key = joinKey(dir_key, entry.name);
      const std::string rel = joinKey(dir_rel, entry.name);
      if (entry.type == FileType::kDir) {
        if (options.skip_git && entry.name == ".git") continue;
        if (!visit(key, rel, entry)) return okStatus();
        if (!options.descend || options.descend(rel)) stack.emplace_back(key, rel);
        continue;
      }
      if (!visit(key, rel, entry)) return okStatus();
    }
  }
  return okStatus();
}

}  // namespace byd
