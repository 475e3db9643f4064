#pragma once
// One mask of a sandboxed command's view of the workspace (see workspace_index.h, which
// computes them, and sandbox_masks.h, which mounts them).

#include <string>
#include <vector>

namespace byd {

struct FileMask {
  enum Kind : char {
    kHideFile = 'f',  // an unreadable empty file over it
    kHideDir = 'd',   // an unreadable empty directory over it
    kReadOnly = 'r',  // bound onto itself read-only
    kWritable = 'w',  // bound onto itself read-write (inside a read-only directory)
  };
  Kind kind;
  std::string path;  // absolute, on the host (the sandbox binds directories at their paths)
  bool operator==(const FileMask&) const = default;
};
// In the order to apply them: a directory before what lies below it.
using FileMasks = std::vector<FileMask>;

}  // namespace byd
