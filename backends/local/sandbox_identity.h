#pragma once
// Who sandboxed processes are on the host. A server that is not root can lend its commands
// only its own uid. A root server never lends them its own: they run as an unprivileged host
// uid, the sandbox user (the workspace's owner when that is not root, else a dedicated uid
// that owns nothing), and each writable directory whose owner is someone else is mounted for
// them through an idmapped mount that shows the owner's files as the sandbox user's. What a
// command creates there is owned on disk by the directory's owner; the process that created
// it never held the owner's rights anywhere else. Built once per Sandbox; read-only after.

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"

namespace byd {

// The uid a root server's commands run as when the workspace belongs to root and no
// --sandbox-user is given: no account of a Debian system has it.
inline constexpr uid_t kDedicatedSandboxUid = 65533;
// The ids a command has inside its sandbox, whoever it is outside.
inline constexpr uid_t kSandboxInnerUid = 1000;

// --sandbox-user as host ids: a user name or a numeric uid (a uid without an account is its
// own gid). Root is refused.
Result<std::pair<uid_t, gid_t>> resolveSandboxUser(const std::string& user);

class SandboxIdentity {
 public:
  // `user` is --sandbox-user: "" for the default, a user name or a numeric uid. `writable`
  // are the workspace directories, the first the root.
  static Result<SandboxIdentity> create(const std::string& user,
                                        const std::vector<std::string>& writable);
  SandboxIdentity() = default;

  // True when the server is root: commands change to the sandbox user's uid.
  bool changesUid() const { return userns_fd_.valid(); }
  uid_t uid() const { return uid_; }
  gid_t gid() const { return gid_; }
  // Root only: a user namespace that maps 0 to 0 (the sandbox helper) and kSandboxInnerUid to
  // the sandbox user, for the helper to enter.
  int userNamespace() const { return userns_fd_.get(); }
  // "uid 65533 (dedicated)", for the start-up line.
  const std::string& describe() const { return description_; }

  // A writable directory to mount through an idmapped mount, and the detached mount to move
  // there (a fresh one per call: a detached mount is attached once).
  struct Mount {
    std::string dir;
    UniqueFd fd;
  };
  // Root only: detached idmapped mounts of every writable directory owned by someone else.
  Result<std::vector<Mount>> makeMounts() const;

 private:
  struct Idmap {
    std::string dir;
    UniqueFd userns_fd;
  };

  uid_t uid_ = 0;
  gid_t gid_ = 0;
  UniqueFd userns_fd_;
  std::vector<Idmap> idmaps_;
  std::string description_;
};

}  // namespace byd
