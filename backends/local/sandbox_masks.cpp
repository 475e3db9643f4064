#include "backends/local/sandbox_masks.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>

#include "backends/local/sandbox_zygote.h"

namespace byd {
namespace {

std::string placeholder(bool dir) { return std::string(zygote::kMaskSource) + (dir ? "/d" : "/f"); }

std::string failed(const std::string& what, const std::string& path) {
  return "cannot " + what + " " + path + ": " + strerror(errno);
}

}  // namespace

bool parseMasks(const nlohmann::json& array, MaskList& out) {
  if (!array.is_array()) return false;
  out.clear();
  for (const auto& item : array) {
    if (!item.is_array() || item.size() != 2 || !item[0].is_string() || !item[1].is_string()) {
      return false;
    }
    const std::string kind = item[0].get<std::string>();
    const std::string path = item[1].get<std::string>();
    if (kind.size() != 1 || std::string_view("fdrw").find(kind[0]) == std::string_view::npos ||
        path.empty() || path[0] != '/') {
      return false;
    }
    out.emplace_back(kind[0], path);
  }
  return true;
}

std::string NamespaceMasks::prepare() {
  if (prepared_) return "";
  const char* dir = zygote::kMaskSource;
  if (mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0700,size=4k") != 0) {
    return failed("mount the masks' source at", dir);
  }
  const std::string file = placeholder(false), subdir = placeholder(true);
  const int fd = open(file.c_str(), O_CREAT | O_EXCL | O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return failed("create", file);
  close(fd);
  if (mkdir(subdir.c_str(), 0) != 0) return failed("create", subdir);
  // Held open: once their directory is closed to everyone, this process cannot pass it either.
  placeholder_[0].reset(open(file.c_str(), O_PATH | O_CLOEXEC));
  placeholder_[1].reset(open(subdir.c_str(), O_PATH | O_CLOEXEC));
  if (!placeholder_[0].valid() || !placeholder_[1].valid()) return failed("open", dir);
  if (chmod(dir, 0) != 0) return failed("close", dir);
  if (mount(nullptr, dir, nullptr, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
            nullptr) != 0) {
    return failed("make read-only", dir);
  }
  prepared_ = true;
  return "";
}

std::string NamespaceMasks::mountOne(char kind, const std::string& path, Applied& done) {
  open_how how{};
  how.flags = O_PATH | O_CLOEXEC | O_NOFOLLOW;
  how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  UniqueFd target(static_cast<int>(syscall(SYS_openat2, AT_FDCWD, path.c_str(), &how, sizeof how)));
  if (!target.valid()) {
    // Gone since the index saw it, or reached through a symlink (what it reaches has a mask
    // of its own where it lies): nothing to mask here.
    if (errno == ENOENT || errno == ELOOP || errno == ENOTDIR || errno == EXDEV) return "";
    return failed("open", path);
  }
  struct stat st;
  if (fstat(target.get(), &st) != 0) return failed("inspect", path);
  const bool dir = S_ISDIR(st.st_mode);
  if ((kind == 'r' || kind == 'w') &&
      std::find(roots_.begin(), roots_.end(), path) != roots_.end()) {
    mount_attr attr{};
    (kind == 'r' ? attr.attr_set : attr.attr_clr) = MOUNT_ATTR_RDONLY;
    if (mount_setattr(target.get(), "", AT_EMPTY_PATH, &attr, sizeof attr) != 0) {
      // EBUSY: something holds a file of it open for writing (a kernel's thread).
      return failed(kind == 'r' ? "make read-only" : "make writable", path);
    }
    done.made_read_only = kind == 'r';
    done.flagged = std::move(target);
    return "";
  }
  UniqueFd tree;
  mount_attr attr{};
  attr.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
  unsigned int flags = AT_EMPTY_PATH;
  if (kind == 'f' || kind == 'd') {
    // Whatever the path is now: a file became a directory, or the other way round.
    tree.reset(open_tree(placeholder_[dir ? 1 : 0].get(), "",
                         OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH));
    attr.attr_set |= MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOEXEC;
  } else {
    tree.reset(open_tree(target.get(), "",
                         OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE));
    flags |= AT_RECURSIVE;
    if (kind == 'r') {
      attr.attr_set |= MOUNT_ATTR_RDONLY;
    } else {
      attr.attr_clr = MOUNT_ATTR_RDONLY;
    }
  }
  if (!tree.valid()) return failed("clone a mount for", path);
  if (mount_setattr(tree.get(), "", flags, &attr, sizeof attr) != 0) {
    return failed("set the mount flags of", path);
  }
  if (move_mount(tree.get(), "", target.get(), "",
                 MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0) {
    return failed("mount over", path);
  }
  done.mount = std::move(tree);
  return "";
}

std::string NamespaceMasks::undo(Applied& done, const std::string& path) {
  if (done.mount.valid()) {
    const std::string at = "/proc/self/fd/" + std::to_string(done.mount.get());
    if (umount2(at.c_str(), MNT_DETACH) != 0 && errno != EINVAL) {
      return failed("unmount the mask of", path);
    }
  }
  if (done.flagged.valid()) {
    mount_attr attr{};
    (done.made_read_only ? attr.attr_clr : attr.attr_set) = MOUNT_ATTR_RDONLY;
    if (mount_setattr(done.flagged.get(), "", AT_EMPTY_PATH, &attr, sizeof attr) != 0) {
      return failed("restore the flags of", path);
    }
  }
  return "";
}

std::string NamespaceMasks::apply(const MaskList& wanted) {
  size_t same = 0;
  while (same < current_.size() && same < wanted.size() && current_[same] == wanted[same]) ++same;
  if (same == current_.size() && same == wanted.size()) return "";
  if (std::string error = prepare(); !error.empty()) return error;
  while (applied_.size() > same) {
    if (std::string error = undo(applied_.back(), current_[applied_.size() - 1].second);
        !error.empty()) {
      return error;
    }
    applied_.pop_back();
  }
  current_.resize(same);
  for (size_t i = same; i < wanted.size(); ++i) {
    Applied done;
    if (std::string error = mountOne(wanted[i].first, wanted[i].second, done); !error.empty()) {
      return error;
    }
    // A mask that found no target is not in force: the next change tries it again.
    if (!done.mount.valid() && !done.flagged.valid()) continue;
    current_.push_back(wanted[i]);
    applied_.push_back(std::move(done));
  }
  return "";
}

}  // namespace byd
