#pragma once
// The masks of a command's mount namespace (see workspace_index.h), applied by its namespace
// init before the command exists and changed between a kernel's cells. A hidden path gets an
// empty, mode-000, read-only file or directory mounted over it, from a small tmpfs the init
// keeps at kMaskSource (itself mode 000); a read-only or read-write path is bound onto itself.
// Every target is opened without following a symlink in any component, and the mount is made
// onto that descriptor, so a path swapped meanwhile cannot redirect it. Inside the helper only.

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/unique_fd.h"

namespace byd {

// (kind, absolute path): the kinds of FileMask.
using MaskList = std::vector<std::pair<char, std::string>>;

// Parses a "masks" array ([["f", "/ws/.env"], ...]); false when malformed.
bool parseMasks(const nlohmann::json& array, MaskList& out);

class NamespaceMasks {
 public:
  // `roots`: the directories bound writable into the sandbox, each a mount of its own. Their
  // own masks (read-only or not) change that mount's flags instead of covering it: what
  // already refers to it (a kernel's working directory, a descriptor it holds) sees the change
  // too, and masks below stay attached to the one mount every path to them crosses.
  explicit NamespaceMasks(std::vector<std::string> roots) : roots_(std::move(roots)) {}
  // Mounts the placeholders' tmpfs over kMaskSource; "" or what failed.
  std::string prepare();
  // Makes the namespace's masks `wanted`: what it shares with those in force at their head
  // stays, the rest is unmounted (innermost first) and `wanted`'s tail mounted. A target that
  // no longer exists, or is reached only through a symlink, needs no mask. "" or what failed;
  // after a failure the namespace must not run anything.
  std::string apply(const MaskList& wanted);
  bool empty() const { return applied_.empty(); }

 private:
  // What one mask did, to undo it: a mount made (its root), or a root's flags changed.
  struct Applied {
    UniqueFd mount;
    UniqueFd flagged;  // the root whose read-only flag was set or cleared
    bool made_read_only = false;
  };
  std::string mountOne(char kind, const std::string& path, Applied& done);
  std::string undo(Applied& done, const std::string& path);
  const std::vector<std::string> roots_;
  bool prepared_ = false;
  UniqueFd placeholder_[2];  // the empty file and the empty directory
  MaskList current_;
  std::vector<Applied> applied_;  // in order
};

}  // namespace byd
