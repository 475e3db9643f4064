#include "backends/local/workspace_index.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <utility>

#include <spdlog/spdlog.h>

#include "backends/backend.h"

namespace byd {
namespace {

// A name no rule means in particular: how the rules judge it is how they judge what a
// directory may hold (what a new entry of it would be).
constexpr std::string_view kProbe = "\x01";

constexpr uint32_t kWatched = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ONLYDIR |
                              IN_DONT_FOLLOW | IN_EXCL_UNLINK;

// A polled directory whose modification time is this recent may change again within the same
// clock tick without its time moving: it is read again next time.
constexpr int64_t kCoarseNs = 50'000'000;

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t mtimeNs(const std::string& dir) {
  struct stat st;
  if (lstat(dir.c_str(), &st) != 0) return -1;
  return int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
}

}  // namespace

struct WorkspaceIndex::Node {
  std::string key, dir;
  int depth = 0;
  int wd = -1;
  bool polled = false;
  int64_t mtime_ns = 0;  // when polled: what it was when last read
  bool recent = false;   // when polled: read within a clock tick of its last change
  bool dirty = true;
  bool scanned = false;  // its entries are known (a hidden directory's are not read)
  PathActions self, content;
  struct Entry {
    std::string name;
    PathActions actions;
  };
  std::vector<Entry> specials;  // entries other than directories that the rules single out
  std::map<std::string, std::unique_ptr<Node>> subdirs;

  // Whether two readings of a directory singled out the same entries, in any order.
  static bool sameEntries(std::vector<Entry> a, std::vector<Entry> b) {
    if (a.size() != b.size()) return false;
    const auto by_name = [](const Entry& x, const Entry& y) { return x.name < y.name; };
    std::sort(a.begin(), a.end(), by_name);
    std::sort(b.begin(), b.end(), by_name);
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i].name != b[i].name || a[i].actions != b[i].actions) return false;
    }
    return true;
  }

  // Its entries need not be known: whatever the call, it is hidden whole.
  bool hiddenAlways() const {
    return self.read == ViewAction::kDeny || content.read == ViewAction::kDeny;
  }
};

WorkspaceIndex::WorkspaceIndex(std::vector<Root> roots, bool follow)
    : roots_(std::move(roots)), follow_(follow) {}

void WorkspaceIndex::startInotify() {
  // On the first directory watched, not before: a workspace nothing has looked into yet (a
  // session made ahead) holds no instance of the few the system allows each user.
  if (std::exchange(inotify_tried_, true) || !follow_) return;
  inotify_.reset(inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  if (!inotify_.valid()) {
    spdlog::warn("sandbox: no inotify instance ({}); the workspace is polled for changes",
                 strerror(errno));
  }
}

WorkspaceIndex::~WorkspaceIndex() = default;

WorkspaceIndex::Stats WorkspaceIndex::stats() const {
  std::lock_guard lock(mu_);
  Stats s = stats_;
  s.polling = !polled_.empty() || (inotify_tried_ && !inotify_.valid());
  return s;
}

void WorkspaceIndex::watch(Node& node) {
  if (node.wd >= 0 || node.polled) return;
  startInotify();
  if (inotify_.valid()) {
    node.wd = inotify_add_watch(inotify_.get(), node.dir.c_str(), kWatched);
    if (node.wd >= 0) {
      by_wd_[node.wd] = &node;  // a moved directory keeps its watch: it is this node's now
      return;
    }
    if (errno != ENOSPC && errno != ENOMEM) return;  // gone, or not a directory: read again
    static std::atomic<bool> said{false};            // once per process, whichever index runs out
    if (!said.exchange(true)) {
      spdlog::warn(
          "sandbox: no inotify watch left for {} (fs.inotify.max_user_watches); "
          "directories past it are polled for changes",
          node.dir);
    }
  }
  node.polled = true;
  polled_.push_back(&node);
}

void WorkspaceIndex::forget(Node& node) {
  for (auto& [name, child] : node.subdirs) forget(*child);
  for (const Node::Entry& e : node.specials) denied_.erase(node.dir + "/" + e.name);
  if (node.wd >= 0) {
    const auto it = by_wd_.find(node.wd);
    if (it != by_wd_.end() && it->second == &node) {
      by_wd_.erase(it);
      inotify_rm_watch(inotify_.get(), node.wd);
    }
  }
  if (node.polled) std::erase(polled_, &node);
  std::erase(dirty_, &node);
  --stats_.dirs;
}

void WorkspaceIndex::judgeDir(Node& node) {
  node.self = rules_->judge(node.key);
  node.content = rules_->judge(joinKey(node.key, kProbe));
  stats_.judged += 2;
}

void WorkspaceIndex::rescan(Node& top) {
  std::vector<Node*> todo = {&top};
  bool changed = false;  // in what the masks are made of
  while (!todo.empty()) {
    Node& node = *todo.back();
    todo.pop_back();
    node.dirty = false;
    std::vector<Node::Entry> old_specials = std::move(node.specials);
    node.specials.clear();
    for (const Node::Entry& e : old_specials) denied_.erase(node.dir + "/" + e.name);
    if (node.hiddenAlways()) {
      changed |= !node.subdirs.empty() || !old_specials.empty();
      for (auto& [name, child] : node.subdirs) forget(*child);
      node.subdirs.clear();
      node.scanned = false;
      continue;
    }
    watch(node);  // before reading: what changes meanwhile is seen next time
    if (node.polled) {
      node.mtime_ns = mtimeNs(node.dir);
      node.recent = nowNs() - node.mtime_ns < kCoarseNs;
    }
    ++stats_.dir_reads;
    node.scanned = true;
    const int fd = open(node.dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR* d = fd >= 0 ? fdopendir(fd) : nullptr;
    if (d == nullptr) {
      if (fd >= 0) close(fd);
      changed |= !node.subdirs.empty() || !old_specials.empty();
      for (auto& [name, child] : node.subdirs) forget(*child);
      node.subdirs.clear();
      continue;
    }
    std::map<std::string, std::unique_ptr<Node>> kept;
    while (const dirent* e = readdir(d)) {
      const std::string_view name = e->d_name;
      if (name == "." || name == "..") continue;
      unsigned char type = e->d_type;
      if (type == DT_UNKNOWN) {
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISLNK(st.st_mode) ? DT_LNK : DT_REG;
      }
      if (type == DT_LNK) continue;  // what it reaches is judged where it lies
      if (type != DT_DIR) {
        PathActions actions = rules_->judge(joinKey(node.key, name));
        ++stats_.judged;
        if (type == DT_REG) noteLinks(node, dirfd(d), name, actions);
        if (actions != node.content) node.specials.push_back({std::string(name), actions});
        continue;
      }
      auto old = node.subdirs.extract(std::string(name));
      std::unique_ptr<Node> child;
      if (old) {
        child = std::move(old.mapped());
        const bool was_scanned = child->scanned;
        const PathActions self = child->self, content = child->content;
        judgeDir(*child);
        changed |= child->self != self || child->content != content;
        if (!was_scanned && !child->hiddenAlways()) child->dirty = true;
      } else {
        changed = true;
        child = std::make_unique<Node>();
        child->key = joinKey(node.key, name);
        child->depth = node.depth + 1;
        child->dir = node.dir + "/" + std::string(name);
        judgeDir(*child);
        ++stats_.dirs;
      }
      if (child->dirty) todo.push_back(child.get());
      kept.emplace(std::string(name), std::move(child));
    }
    closedir(d);
    changed |= !node.subdirs.empty();  // what is left there has gone
    for (auto& [name, child] : node.subdirs) forget(*child);
    node.subdirs = std::move(kept);
    changed |= !Node::sameEntries(std::move(old_specials), node.specials);
  }
  if (changed) ++generation_;
}

void WorkspaceIndex::noteLinks(const Node& node, int dir_fd, std::string_view name,
                               PathActions& actions) {
  const bool denied = actions.read == ViewAction::kDeny;
  if (!denied && linked_.empty()) return;  // the common case: no stat at all
  struct stat st;
  if (fstatat(dir_fd, std::string(name).c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
      !S_ISREG(st.st_mode)) {
    return;
  }
  const std::pair<uint64_t, uint64_t> id{st.st_dev, st.st_ino};
  if (denied) {
    denied_[node.dir + "/" + std::string(name)] = {id.first, id.second, st.st_nlink};
    if (st.st_nlink > 1 && linked_.insert(id).second) links_grew_ = true;
  } else if (st.st_nlink > 1 && linked_.count(id)) {
    // Another name of a file the rules keep from reading: hidden as that file is.
    actions.read = actions.write = ViewAction::kDeny;
  }
}

void WorkspaceIndex::checkDeniedLinks() {
  for (const auto& [path, stamp] : denied_) {
    struct stat st;
    if (lstat(path.c_str(), &st) != 0) continue;  // its directory's change says so
    if (st.st_ino == stamp.ino && st.st_dev == stamp.dev && st.st_nlink <= stamp.nlink) continue;
    // A new name for a secret, made outside (a command cannot: the mask is another mount).
    if (st.st_nlink > 1) linked_.insert({st.st_dev, st.st_ino});
    markAllDirty();
    return;
  }
}

void WorkspaceIndex::markDirty(Node& node) {
  if (node.dirty) return;
  node.dirty = true;
  dirty_.push_back(&node);
}

void WorkspaceIndex::markAllDirty() {
  std::vector<Node*> todo;
  for (auto& top : tops_) todo.push_back(top.get());
  while (!todo.empty()) {
    Node* node = todo.back();
    todo.pop_back();
    node->dirty = false;  // so that markDirty lists it
    markDirty(*node);
    for (auto& [name, child] : node->subdirs) todo.push_back(child.get());
  }
}

void WorkspaceIndex::drainEvents() {
  if (inotify_.valid()) {
    alignas(inotify_event) char buf[16384];
    while (true) {
      const ssize_t n = read(inotify_.get(), buf, sizeof buf);
      if (n <= 0) break;
      for (ssize_t at = 0; at < n;) {
        const auto* ev = reinterpret_cast<const inotify_event*>(buf + at);
        at += sizeof(inotify_event) + ev->len;
        if (ev->mask & IN_Q_OVERFLOW) {
          markAllDirty();
          continue;
        }
        const auto it = by_wd_.find(ev->wd);
        if (it == by_wd_.end()) continue;
        if (ev->mask & IN_IGNORED) {
          Node* node = it->second;
          node->wd = -1;  // removed: its parent's change says so, else it is read again
          by_wd_.erase(it);
          markDirty(*node);
          continue;
        }
        markDirty(*it->second);
      }
    }
  }
  for (Node* node : polled_) {
    if (node->recent || mtimeNs(node->dir) != node->mtime_ns) markDirty(*node);
  }
}

void WorkspaceIndex::build(const Node& node, bool write_ok, const FileView& view,
                           FileMasks& out) const {
  // `write_ok`: whether the directory's entries are writable as the masks above leave them.
  for (const Node::Entry& e : node.specials) {
    const std::string path = node.dir + "/" + e.name;
    if (!view.mayRead(e.actions.read)) {
      out.push_back({FileMask::kHideFile, path});
    } else if (view.mayWrite(e.actions.write) != write_ok) {
      out.push_back({write_ok ? FileMask::kReadOnly : FileMask::kWritable, path});
    }
  }
  for (const auto& [name, child] : node.subdirs) {
    if (!view.mayRead(child->self.read) || !view.mayRead(child->content.read)) {
      out.push_back({FileMask::kHideDir, child->dir});
      continue;
    }
    const bool contents = view.mayWrite(child->content.write);
    const bool itself = view.mayWrite(child->self.write);
    if (contents != write_ok || (!itself && write_ok)) {
      out.push_back({contents ? FileMask::kWritable : FileMask::kReadOnly, child->dir});
    }
    build(*child, contents, view, out);
  }
}

std::shared_ptr<const FileMasks> WorkspaceIndex::masks(const FileView& view) {
  static const auto kNone = std::make_shared<const FileMasks>();
  if (!view.rules) return kNone;
  std::lock_guard lock(mu_);
  if (view.rules.get() != rules_) {
    rules_ = view.rules.get();
    rules_hold_ = view.rules;
    if (tops_.empty()) {
      for (const Root& root : roots_) {
        auto node = std::make_unique<Node>();
        node->key = root.key;
        node->dir = root.dir;
        ++stats_.dirs;
        tops_.push_back(std::move(node));
      }
    }
    for (auto& top : tops_) {
      judgeDir(*top);
      top->self = top->content;  // a root is not renamed or removed from inside
    }
    markAllDirty();
  }
  drainEvents();
  // Shallowest first: reading a parent again may forget a child that changed too.
  while (!dirty_.empty()) {
    const auto it =
        std::min_element(dirty_.begin(), dirty_.end(),
                         [](const Node* a, const Node* b) { return a->depth < b->depth; });
    Node* node = *it;
    dirty_.erase(it);
    if (node->dirty) rescan(*node);
  }
  const int i = view.approved ? 1 : 0;
  if (cached_[i] && cached_generation_[i] == generation_) return cached_[i];
  auto out = std::make_shared<FileMasks>();
  for (const auto& top : tops_) {
    if (!view.mayRead(top->content.read)) {
      out->push_back({FileMask::kHideDir, top->dir});
      continue;
    }
    const bool writable = view.mayWrite(top->content.write);
    if (!writable) out->push_back({FileMask::kReadOnly, top->dir});
    build(*top, writable, view, *out);
  }
  cached_[i] = out;
  cached_generation_[i] = generation_;
  return out;
}

}  // namespace byd
