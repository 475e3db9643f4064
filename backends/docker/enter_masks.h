#pragma once
// byd-enter's masks of a container's workspace: what the file rules keep the code from reading
// or changing there (computed on the host by backends/local/workspace_index.h), mounted by the
// container's root before the code runs. The same kinds as the Local sandbox's masks
// (backends/local/file_masks.h), made with the mount calls every runtime has: a hidden path
// gets an empty mode-000 file or directory bound over it; a read-only one is bound from an
// untouched view of the workspace and remounted read-only, or, where the runtime cannot change
// a bind's flags (gVisor), covered by an overlay with no upper layer (a file: bound from such an
// overlay of its directory); a writable one inside a read-only directory is bound from the
// untouched view. Targets are walked without following a symlink in any component; the code
// that could swap one meanwhile is stopped or not yet started.
//
// The masks live in the container's own mount namespace (gVisor gives a process no namespace
// apart from its container's), changed before each command or cell from what the last one left
// (load, apply, save): a container runs one command, or one kernel, at a time, and the
// server ends a command's processes before the next one starts.

#include <string>
#include <string_view>
#include <vector>

namespace byd::enter {

// Where the placeholders are made: a tmpfs of the container's, only root may enter it.
inline constexpr const char* kMaskSource = "/run/backyard";

struct Mask {
  char kind;  // f, d (hide), r (read-only), w (writable)
  std::string path;
  bool operator==(const Mask&) const = default;
};

// "KPATH" as the server passes it (--mask rPATH); false when malformed.
bool parseMask(std::string_view text, Mask* out);

class Masks {
 public:
  // `root`: the workspace's mount in the container; every mask is at or below it.
  // `source`: a directory only root may enter, where the placeholders are made.
  Masks(std::string root, std::string source);

  // What an earlier call left in this namespace (its record at the source); "" or what failed.
  std::string load();
  // Makes the masks `wanted` (a directory's before those below it): a mask in force that is
  // still wanted stays, unless a mask at or above its path goes or comes; the rest is undone
  // (innermost first) and what is missing made, in `wanted`'s order. "" or what failed.
  std::string apply(const std::vector<Mask>& wanted);
  // Records what is in force for the next load, when apply changed it; "" or what failed.
  std::string save() const;

 private:
  // How a mask was made, to undo it.
  enum How : char {
    kNothing = 'n',   // its target was gone, or reached through a symlink
    kUnmount = 'u',   // a mount at the path
    kOverlay = 'o',   // a mount at the path bound from an overlay at `aux`
    kRootFlag = 'r',  // the root's own mount made read-only
  };
  struct Made {
    Mask mask;
    How how;
    std::string aux;
  };
  std::string prepare();
  std::string make(const Mask& mask, Made& made);
  std::string undo(const Made& made);
  // A read-only view of `dir` (the untouched view's path) mounted at `at`.
  std::string overlay(const std::string& dir, const std::string& at);

  const std::string root_, source_;
  bool prepared_ = false;
  int remount_ = -1;  // whether a bind's flags can be changed: unknown, no, yes
  unsigned next_aux_ = 0;
  bool changed_ = false;
  std::vector<Made> made_;
};

}  // namespace byd::enter
