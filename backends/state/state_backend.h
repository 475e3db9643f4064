#pragma once
// The State backend: a workspace held in memory, for tests, demos and agents that should not
// touch the disk. It can load a JSON snapshot at start and save one (atomically) on request or
// after every write. All operations take an internal reader/writer lock; safe from any thread.

#include <map>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "backends/backend.h"

namespace byd {

class StateBackend : public Backend {
 public:
  // The user-visible root: absolute paths must lie below it.
  static constexpr std::string_view kRoot = "/workspace";

  StateBackend() = default;

  // Loads `snapshot_file` if it exists; remembers it for save(). With `sync`, every write
  // saves the snapshot before it returns.
  static Result<std::unique_ptr<StateBackend>> open(const std::string& snapshot_file, bool sync);

  std::string_view kind() const override { return "state"; }
  std::string root() const override { return std::string(kRoot); }
  Result<std::string> normalize(std::string_view user_path) const override;
  Result<FileInfo> stat(const std::string& key) const override;
  Result<std::vector<FileInfo>> list(const std::string& key) const override;
  Result<std::string> read(const std::string& key, uint64_t offset,
                           uint64_t max_bytes) const override;
  Result<WriteOutcome> write(const std::string& key, std::string_view data,
                             WriteMode mode) override;
  Result<bool> makeDir(const std::string& key) override;
  Result<MoveOutcome> move(const std::string& from, const std::string& to, bool replace) override;
  Result<RemoveOutcome> remove(const std::string& key, bool recursive) override;

  // The snapshot document: {"version": 1, "files": {path: {content, encoding, mode, mtime}},
  // "dirs": [path...]}. Text that is valid UTF-8 is stored as is, anything else as base64.
  nlohmann::json toJson() const;
  Status loadJson(const nlohmann::json& doc);
  // Writes the snapshot to the file given to open() (temp file, fsync, rename).
  Status save() const;

 private:
  struct Node {
    bool dir = false;
    std::string content;
    int64_t mtime_ns = 0;
    uint32_t mode = 0644;
  };
  FileInfo infoOf(const std::string& name, const Node& node) const;
  Status makeParents(const std::string& key, int64_t now);
  // Whether `key` is a directory with something in it.
  bool hasChildren(const std::string& key) const;
  Status saveLocked() const;

  mutable std::shared_mutex mu_;
  std::map<std::string, Node, std::less<>> nodes_;  // key -> node; the root "" is implicit
  std::string snapshot_file_;
  bool sync_ = false;
};

// Writes `data` to `path` atomically: a temp file in the same directory, fsync, rename,
// directory fsync. Used for snapshots and config-side files outside any workspace.
Status atomicWriteFile(const std::string& path, std::string_view data);

}  // namespace byd
