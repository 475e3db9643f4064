#pragma once
// What code running in a sandbox may do to the workspace's files: the view a backend sets up,
// in the kernel, before each command or Python cell starts. The rules themselves live in
// permissions/; a backend sees them only through FileRules, which says how a path is judged
// for reading and for writing, and FileView, which adds what the call was granted.

#include <memory>
#include <string_view>

namespace byd {

enum class ViewAction : unsigned char { kAllow, kAsk, kDeny };

struct PathActions {
  ViewAction read = ViewAction::kAllow;
  ViewAction write = ViewAction::kAllow;
  bool operator==(const PathActions&) const = default;
};

// How the rules judge a path (a key as FileSystem::normalize() gives it) for reading and for
// writing. Immutable and thread-safe; one object stands for one set of rules, so a backend
// may cache what it learned of a tree per object.
class FileRules {
 public:
  virtual ~FileRules() = default;
  virtual PathActions judge(std::string_view key) const = 0;
};

// The view one call runs with. `approved`: the call went through an "ask" that was answered
// yes (by the user, by an answer given for the session, or by --ask-fallback allow); it may
// then also read and write what the rules ask for. A path denied by a rule stays closed.
struct FileView {
  std::shared_ptr<const FileRules> rules;  // null: no view (every file as the sandbox has it)
  bool approved = false;

  bool mayRead(ViewAction a) const {
    return a == ViewAction::kAllow || (approved && a == ViewAction::kAsk);
  }
  bool mayWrite(ViewAction a) const { return mayRead(a); }
};

}  // namespace byd
