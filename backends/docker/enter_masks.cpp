#include "backends/docker/enter_masks.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace byd::enter {
namespace {

std::string failed(const std::string& what, const std::string& path) {
  return "cannot " + what + " " + path + ": " + strerror(errno);
}

// The flags a remount of `path`'s mount must keep (a bind remount sets them all).
unsigned long keptFlags(const std::string& path) {
  struct statvfs vfs;
  if (statvfs(path.c_str(), &vfs) != 0) return 0;
  unsigned long flags = 0;
  if (vfs.f_flag & ST_NOSUID) flags |= MS_NOSUID;
  if (vfs.f_flag & ST_NODEV) flags |= MS_NODEV;
  if (vfs.f_flag & ST_NOEXEC) flags |= MS_NOEXEC;
  if (vfs.f_flag & ST_NOATIME) flags |= MS_NOATIME;
  if (vfs.f_flag & ST_NODIRATIME) flags |= MS_NODIRATIME;
  if (vfs.f_flag & ST_RELATIME) flags |= MS_RELATIME;
  return flags;
}

bool writeAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

bool parseMask(std::string_view text, Mask* out) {
  if (text.size() < 2 || std::string_view("fdrw").find(text[0]) == std::string_view::npos ||
      text[1] != '/') {
    return false;
  }
  out->kind = text[0];
  out->path = std::string(text.substr(1));
  return out->path.find('\0') == std::string::npos;
}

Masks::Masks(std::string root, std::string source)
    : root_(std::move(root)), source_(std::move(source)) {}

std::string Masks::prepare() {
  if (prepared_) return "";
  const std::string file = source_ + "/f", dir = source_ + "/d", empty = source_ + "/e",
                    view = source_ + "/view", aux = source_ + "/o";
  const int fd = open(file.c_str(), O_CREAT | O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0);
  if (fd < 0) return failed("create", file);
  close(fd);
  for (const std::string* d : {&dir, &empty, &view, &aux}) {
    if (mkdir(d->c_str(), d == &dir ? 0 : 0700) != 0 && errno != EEXIST)
      return failed("create", *d);
  }
  // Mode 000 whatever umask and earlier runs did: the code sees nothing of them.
  if (chmod(file.c_str(), 0) != 0 || chmod(dir.c_str(), 0) != 0) return failed("close", dir);
  // The workspace as it is before any mask: where read-only and writable binds come from.
  if (mount(root_.c_str(), view.c_str(), nullptr, MS_BIND, nullptr) != 0) {
    return failed("bind the workspace's view at", view);
  }
  prepared_ = true;
  return "";
}

std::string Masks::overlay(const std::string& dir, const std::string& at) {
  // The options are a list the runtime splits: a name that holds a separator could add
  // options of its own (gVisor does not take the escapes), so it is refused, not masked.
  if (dir.find_first_of(",:\\") != std::string::npos) {
    errno = EINVAL;
    return failed("make read-only (its path holds ',', ':' or '\\')", at);
  }
  const std::string options = "lowerdir=" + dir + ":" + source_ + "/e";
  if (mount("overlay", at.c_str(), "overlay", MS_RDONLY, options.c_str()) != 0) {
    return failed("mount a read-only view over", at);
  }
  return "";
}

std::string Masks::make(const Mask& mask, Made& made) {
  made = {mask, kNothing, ""};
  const std::string& path = mask.path;
  if (path != root_ && !(path.starts_with(root_) && path[root_.size()] == '/')) {
    errno = EINVAL;
    return failed("mask a path outside the workspace:", path);
  }
  // Each component as it is, no symlink followed: a path reached only through one has a mask
  // of its own where it lies, if it needs one.
  struct stat st;
  for (size_t at = root_.size();; at = path.find('/', at + 1)) {
    const std::string prefix = at == std::string::npos ? path : path.substr(0, at);
    if (lstat(prefix.c_str(), &st) != 0) {
      if (errno == ENOENT || errno == ENOTDIR) return "";
      return failed("inspect", prefix);
    }
    if (S_ISLNK(st.st_mode)) return "";
    if (at == std::string::npos) break;
    if (!S_ISDIR(st.st_mode)) return "";
  }
  const std::string view = source_ + "/view" + path.substr(root_.size());
  const char* target = path.c_str();
  switch (mask.kind) {
    case 'f':
    case 'd': {
      const std::string placeholder = source_ + (S_ISDIR(st.st_mode) ? "/d" : "/f");
      if (mount(placeholder.c_str(), target, nullptr, MS_BIND, nullptr) != 0) {
        return failed("hide", path);
      }
      made.how = kUnmount;
      return "";
    }
    case 'w':
      // The root is writable unless a mask made it read-only, which was undone first.
      if (path == root_) return "";
      if (mount(view.c_str(), target, nullptr, MS_BIND, nullptr) != 0) {
        return failed("make writable", path);
      }
      made.how = kUnmount;
      return "";
    default:
      break;
  }
  const bool root = path == root_;
  if (remount_ != 0) {
    if (!root && mount(view.c_str(), target, nullptr, MS_BIND, nullptr) != 0) {
      return failed("bind", path);
    }
    if (mount(nullptr, target, nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | keptFlags(path),
              nullptr) == 0) {
      remount_ = 1;
      made.how = root ? kRootFlag : kUnmount;
      return "";
    }
    const int err = errno;
    if (!root) umount2(target, MNT_DETACH);
    errno = err;
    if (err != EINVAL || remount_ == 1) return failed("make read-only", path);
    remount_ = 0;  // gVisor: no bind's flags change
  }
  if (S_ISDIR(st.st_mode)) {
    if (std::string error = overlay(view, path); !error.empty()) return error;
    made.how = kUnmount;
    return "";
  }
  // A file: bound from a read-only view of its directory.
  const std::string aux = source_ + "/o/" + std::to_string(next_aux_++);
  if (mkdir(aux.c_str(), 0700) != 0 && errno != EEXIST) return failed("create", aux);
  if (std::string error = overlay(view.substr(0, view.rfind('/')), aux); !error.empty()) {
    return error;
  }
  made.aux = aux;
  made.how = kOverlay;
  const std::string from = aux + path.substr(path.rfind('/'));
  if (mount(from.c_str(), target, nullptr, MS_BIND, nullptr) != 0) {
    return failed("make read-only", path);
  }
  return "";
}

std::string Masks::undo(const Made& made) {
  const char* path = made.mask.path.c_str();
  switch (made.how) {
    case kNothing:
      return "";
    case kRootFlag:
      if (mount(nullptr, path, nullptr, MS_REMOUNT | MS_BIND | keptFlags(made.mask.path),
                nullptr) != 0) {
        return failed("make writable again", made.mask.path);
      }
      return "";
    case kUnmount:
    case kOverlay:
      // EINVAL, ENOENT: the mount went with its directory, renamed meanwhile; it stays there,
      // where the next masks judge that path again.
      if (umount2(path, MNT_DETACH) != 0 && errno != EINVAL && errno != ENOENT) {
        return failed("unmount the mask of", made.mask.path);
      }
      if (made.how == kOverlay) {
        if (umount2(made.aux.c_str(), MNT_DETACH) != 0 && errno != EINVAL) {
          return failed("unmount", made.aux);
        }
        rmdir(made.aux.c_str());
      }
      return "";
  }
  return "";
}

std::string Masks::apply(const std::vector<Mask>& wanted) {
  auto wants = [&](const Mask& m) {
    return std::find(wanted.begin(), wanted.end(), m) != wanted.end();
  };
  auto made = [&](const Mask& m) {
    return std::any_of(made_.begin(), made_.end(), [&](const Made& x) { return x.mask == m; });
  };
  // The paths whose mask goes or comes. A mask at or below one of them is made again: the
  // mount under it is going, or a new one is covering it.
  std::vector<std::string> changed;
  // What found no target is tried again: it may be there now.
  std::erase_if(made_, [](const Made& m) { return m.how == kNothing; });
  for (const Made& m : made_) {
    if (!wants(m.mask)) changed.push_back(m.mask.path);
  }
  for (const Mask& w : wanted) {
    if (!made(w)) changed.push_back(w.path);
  }
  if (changed.empty()) return "";
  auto affected = [&](const std::string& path) {
    return std::any_of(changed.begin(), changed.end(), [&](const std::string& c) {
      return path == c || (path.starts_with(c) && path[c.size()] == '/');
    });
  };
  changed_ = true;
  if (std::string error = prepare(); !error.empty()) return error;
  for (size_t i = made_.size(); i-- > 0;) {  // innermost first
    if (!affected(made_[i].mask.path)) continue;
    if (std::string error = undo(made_[i]); !error.empty()) return error;
    made_.erase(made_.begin() + static_cast<std::ptrdiff_t>(i));
  }
  for (const Mask& w : wanted) {
    if (made(w)) continue;  // kept: nothing above it changed
    Made m;
    std::string error = make(w, m);
    if (m.how != kNothing) made_.push_back(std::move(m));
    if (!error.empty()) return error;
  }
  return "";
}

// The record: "R" and the remount state, the next aux number, then per mask its kind, how,
// path and aux, each ended by a NUL.
std::string Masks::save() const {
  if (!changed_) return "";
  std::string text = "R" + std::to_string(remount_) + '\0' + std::to_string(next_aux_) + '\0';
  for (const Made& m : made_) {
    text += std::string(1, m.mask.kind) + '\0' + std::string(1, m.how) + '\0' + m.mask.path + '\0' +
            m.aux + '\0';
  }
  const std::string path = source_ + "/state", tmp = path + ".new";
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return failed("write", tmp);
  const bool ok = writeAll(fd, text);
  close(fd);
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) return failed("write", path);
  return "";
}

std::string Masks::load() {
  const std::string path = source_ + "/state";
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return errno == ENOENT ? "" : failed("read", path);
  std::string text;
  char buf[1 << 14];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      close(fd);
      return failed("read", path);
    }
    text.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  std::vector<std::string> fields;
  for (size_t at = 0; at < text.size();) {
    const size_t end = text.find('\0', at);
    if (end == std::string::npos) break;
    fields.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  if (fields.size() < 2 || fields[0].size() < 2 || fields[0][0] != 'R' ||
      (fields.size() - 2) % 4 != 0) {
    errno = EINVAL;
    return failed("read a malformed", path);
  }
  remount_ = atoi(fields[0].c_str() + 1);
  next_aux_ = static_cast<unsigned>(strtoul(fields[1].c_str(), nullptr, 10));
  made_.clear();
  for (size_t i = 2; i + 3 < fields.size(); i += 4) {
    if (fields[i].size() != 1 || fields[i + 1].size() != 1) {
      errno = EINVAL;
      return failed("read a malformed", path);
    }
    made_.push_back(
        {{fields[i][0], fields[i + 2]}, static_cast<How>(fields[i + 1][0]), fields[i + 3]});
  }
  prepared_ = true;
  return "";
}

}  // namespace byd::enter
