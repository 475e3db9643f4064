#include "backends/local/sandbox_identity.h"

#include <fcntl.h>
#include <linux/mount.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <tuple>
#include <utility>

#include "backends/local/sandbox_zygote.h"

namespace byd {
namespace {

std::string errnoText() { return strerror(errno); }

// The child of makeUserNamespace: lives in the new namespace until its parent kills it. Not
// until a pipe closes: a child that another thread forks meanwhile would hold the pipe open.
int holdNamespace(void*) {
  while (true) pause();
}

// A user namespace with the given maps, held by a descriptor. Only a process with CAP_SETUID
// and CAP_SETGID outside may write maps of more than its own ids, so the namespace is made
// by a child and mapped from here.
Result<UniqueFd> makeUserNamespace(const std::string& uid_map, const std::string& gid_map) {
  std::vector<char> stack(16 * 1024);
  const pid_t pid =
      clone(holdNamespace, stack.data() + stack.size(), CLONE_NEWUSER | SIGCHLD, nullptr);
  if (pid < 0) return failedPrecondition("cannot create a user namespace: " + errnoText());
  const std::string proc = "/proc/" + std::to_string(pid);
  UniqueFd fd;
  std::string error;
  if (!zygote::writeSmallFile((proc + "/uid_map").c_str(), uid_map) ||
      !zygote::writeSmallFile((proc + "/gid_map").c_str(), gid_map)) {
    error = "cannot map a user namespace: " + errnoText();
  } else if (fd.reset(open((proc + "/ns/user").c_str(), O_RDONLY | O_CLOEXEC)); !fd.valid()) {
    error = "cannot hold a user namespace: " + errnoText();
  }
  kill(pid, SIGKILL);
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  if (!fd.valid()) return failedPrecondition(error);
  return fd;
}

// `user` as host ids: a numeric uid or a user name; a uid without an account is its own gid.
Result<std::pair<uid_t, gid_t>> resolveUser(const std::string& user) {
  uint64_t number = 0;
  const auto [end, ec] = std::from_chars(user.data(), user.data() + user.size(), number);
  if (ec == std::errc() && end == user.data() + user.size()) {
    if (number > 0xFFFFFFFEu) return invalidArgument("--sandbox-user " + user + ": not a uid");
    const passwd* pw = getpwuid(static_cast<uid_t>(number));
    return std::pair<uid_t, gid_t>(number, pw ? pw->pw_gid : number);
  }
  const passwd* pw = getpwnam(user.c_str());
  if (pw == nullptr) return invalidArgument("--sandbox-user " + user + ": no such user");
  return std::pair<uid_t, gid_t>(pw->pw_uid, pw->pw_gid);
}

}  // namespace

Result<std::pair<uid_t, gid_t>> resolveSandboxUser(const std::string& user) {
  BYD_ASSIGN_OR_RETURN(auto ids, resolveUser(user));
  if (ids.first == 0) {
    return invalidArgument("--sandbox-user " + user +
                           ": sandboxed commands never run as root; name an unprivileged user");
  }
  return ids;
}

Result<SandboxIdentity> SandboxIdentity::create(const std::string& user,
                                                const std::vector<std::string>& writable) {
  SandboxIdentity id;
  if (geteuid() != 0) {
    // Not root: the kernel lets this server lend its commands its own uid only.
    id.uid_ = geteuid();
    id.gid_ = getegid();
    if (!user.empty()) {
      BYD_ASSIGN_OR_RETURN(auto ids, resolveUser(user));
      if (ids.first != id.uid_) {
        return invalidArgument("--sandbox-user " + user +
                               ": only a server running as root can run commands as another "
                               "user (this one runs as uid " +
                               std::to_string(id.uid_) + ")");
      }
    }
    id.description_ = "uid " + std::to_string(id.uid_) + " (the server's own)";
    return id;
  }
  struct stat root_st {};
  if (!writable.empty() && stat(writable.front().c_str(), &root_st) != 0) {
    return failedPrecondition("cannot inspect " + writable.front() + ": " + errnoText());
  }
  if (!user.empty()) {
    BYD_ASSIGN_OR_RETURN(auto ids, resolveSandboxUser(user));
    std::tie(id.uid_, id.gid_) = ids;
    id.description_ = "uid " + std::to_string(id.uid_) + " (--sandbox-user)";
  } else if (root_st.st_uid != 0) {
    const passwd* pw = getpwuid(root_st.st_uid);
    id.uid_ = root_st.st_uid;
    id.gid_ = pw ? pw->pw_gid : root_st.st_gid;
    id.description_ = "uid " + std::to_string(id.uid_) + " (the workspace's owner)";
  } else {
    id.uid_ = id.gid_ = kDedicatedSandboxUid;
    id.description_ = "uid " + std::to_string(id.uid_) + " (dedicated)";
  }
  const std::string inner = std::to_string(kSandboxInnerUid);
  BYD_ASSIGN_OR_RETURN(id.userns_fd_,
                       makeUserNamespace("0 0 1\n" + inner + " " + std::to_string(id.uid_) + " 1",
                                         "0 0 1\n" + inner + " " + std::to_string(id.gid_) + " 1"));
  for (const std::string& dir : writable) {
    struct stat st {};
    if (stat(dir.c_str(), &st) != 0) {
      return failedPrecondition("cannot inspect " + dir + ": " + errnoText());
    }
    if (st.st_uid == id.uid_) continue;
    // Seen through this mount, the owner's files are the sandbox user's, and what the
    // sandbox user creates is the owner's on disk.
    auto idmap =
        makeUserNamespace(std::to_string(st.st_uid) + " " + std::to_string(id.uid_) + " 1",
                          std::to_string(st.st_gid) + " " + std::to_string(id.gid_) + " 1");
    if (!idmap.ok()) return idmap.status();
    id.idmaps_.push_back({dir, std::move(*idmap)});
    id.description_ += ", " + dir + " idmapped from uid " + std::to_string(st.st_uid);
  }
  // A filesystem without idmapped mounts is found now, not at the first command.
  BYD_RETURN_IF_ERROR(id.makeMounts().status());
  return id;
}

Result<std::vector<SandboxIdentity::Mount>> SandboxIdentity::makeMounts() const {
  std::vector<Mount> mounts;
  for (const Idmap& m : idmaps_) {
    UniqueFd fd(static_cast<int>(
        syscall(SYS_open_tree, AT_FDCWD, m.dir.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC)));
    mount_attr attr{};
    attr.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
    attr.userns_fd = static_cast<uint64_t>(m.userns_fd.get());
    if (!fd.valid() ||
        syscall(SYS_mount_setattr, fd.get(), "", AT_EMPTY_PATH, &attr, sizeof attr) != 0) {
      const std::string why = errnoText();
      return failedPrecondition("cannot give the sandbox user (uid " + std::to_string(uid_) + ") " +
                                m.dir + " through an idmapped mount: " + why +
                                "; start with --sandbox-user naming the directory's owner");
    }
    mounts.push_back({m.dir, std::move(fd)});
  }
  return mounts;
}

}  // namespace byd
