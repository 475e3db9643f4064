#pragma once
// mkdir, move and delete for the Local backend, beneath the path resolvers: every parent is
// opened by the resolver (the kernel keeps it beneath the base), and the last component is
// acted on by name in that parent with the *at() calls, so it is never followed. A move is one
// rename(2) (RENAME_NOREPLACE unless replacing is asked for); a recursive delete walks the tree
// by descriptors, never following a symlink and never crossing into another file system.

#include <string>

#include "backends/backend.h"
#include "backends/local/path_resolver.h"
#include "common/result.h"

namespace byd {

// A path beneath one resolver: where it lies and how messages name it.
struct Beneath {
  const PathResolver* resolver;
  std::string rel;  // relative to the resolver's base; "" is the base itself
  std::string key;  // the user's key
};

Result<bool> makeDirBeneath(const Beneath& dir);
Result<MoveOutcome> moveBeneath(const Beneath& from, const Beneath& to, bool replace);
Result<RemoveOutcome> removeBeneath(const Beneath& target, bool recursive);

}  // namespace byd
