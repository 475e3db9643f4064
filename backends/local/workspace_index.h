#pragma once
// What the sandbox must mask in the workspace for one call: the paths the rules keep from
// reading (hidden: an unreadable empty file or directory mounted over them) and those whose
// writability differs from their directory's (bound read-only, or read-write inside a
// read-only directory). The index walks the workspace (and each extra allowed directory) once,
// keeping of each directory only what the rules single out, then follows changes with inotify:
// the next call rescans only the directories whose entries changed, so its cost grows with
// what changed, not with the tree. Where inotify is unavailable (no instance or watch left),
// directories are polled by modification time. Thread-safe.

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "backends/file_view.h"
#include "backends/local/file_masks.h"
#include "common/unique_fd.h"

namespace byd {

class WorkspaceIndex {
 public:
  struct Root {
    std::string key;  // its key prefix: "" for the workspace, the absolute path for --allow
    std::string dir;  // its absolute path on the host
  };
  // `follow` false polls instead of using inotify (for tests of the fallback).
  explicit WorkspaceIndex(std::vector<Root> roots, bool follow = true);
  ~WorkspaceIndex();
  WorkspaceIndex(const WorkspaceIndex&) = delete;
  WorkspaceIndex& operator=(const WorkspaceIndex&) = delete;

  // The masks for `view` (none without rules), the index brought up to date first.
  std::shared_ptr<const FileMasks> masks(const FileView& view);

  struct Stats {
    uint64_t dirs = 0;       // directories indexed
    uint64_t dir_reads = 0;  // directories read since the index was made
    uint64_t judged = 0;     // paths judged by the rules since then
    bool polling = false;    // some directory is followed by polling, not inotify
  };
  Stats stats() const;

 private:
  struct Node;
  void drainEvents();
  // Reads `node`'s directory again; new subdirectories are read whole.
  void rescan(Node& node);
  void judgeDir(Node& node);
  void watch(Node& node);
  void forget(Node& node);
  // Hard links: notes the identity of a file the read rules deny, and hides another name of
  // one that has several (`ln .env notes.txt`).
  void noteLinks(const Node& node, int dir_fd, std::string_view name, PathActions& actions);
  // A denied file that gained a name since it was read: everything is read again.
  void checkDeniedLinks();
  void markDirty(Node& node);
  void markAllDirty();
  // Appends the masks below `node`, whose entries are writable as its mounts leave them when
  // `write_ok`.
  void build(const Node& node, bool write_ok, const FileView& view, FileMasks& out) const;

  const std::vector<Root> roots_;
  // Starts following changes through inotify, once (see watch()).
  void startInotify();

  mutable std::mutex mu_;
  const bool follow_;
  bool inotify_tried_ = false;
  UniqueFd inotify_;
  std::vector<std::unique_ptr<Node>> tops_;
  std::unordered_map<int, Node*> by_wd_;
  std::vector<Node*> polled_;  // directories inotify could not watch
  std::vector<Node*> dirty_;   // directories to read again
  struct Stamp {
    uint64_t dev, ino, nlink;
  };
  std::map<std::string, Stamp> denied_;             // each file hidden by its name
  std::set<std::pair<uint64_t, uint64_t>> linked_;  // those of them with other names
  bool links_grew_ = false;
  const FileRules* rules_ = nullptr;  // what the index was judged by
  std::shared_ptr<const FileRules> rules_hold_;
  uint64_t generation_ = 0;  // moves whenever the index changes
  // The last answer for each approval, and the generation it was built at.
  std::shared_ptr<const FileMasks> cached_[2];
  uint64_t cached_generation_[2] = {~uint64_t{0}, ~uint64_t{0}};
  Stats stats_;
};

}  // namespace byd
