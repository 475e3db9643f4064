#include "backends/state/state_backend.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>

#include "common/text.h"
#include "common/unique_fd.h"

namespace byd {
namespace {

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string parentOf(std::string_view key) {
  const size_t slash = key.rfind('/');
  return slash == std::string_view::npos ? "" : std::string(key.substr(0, slash));
}

std::string inQuotes(std::string_view key) { return "'" + std::string(key) + "'"; }

}  // namespace

Result<std::unique_ptr<StateBackend>> StateBackend::open(const std::string& snapshot_file,
                                                         bool sync) {
  auto backend = std::make_unique<StateBackend>();
  backend->snapshot_file_ = snapshot_file;
  backend->sync_ = sync;
  if (snapshot_file.empty()) return backend;
  std::ifstream in(snapshot_file, std::ios::binary);
  if (!in) {
    if (std::filesystem::exists(snapshot_file)) {
      return permissionDenied("cannot read state file '" + snapshot_file + "'");
    }
    return backend;  // a new snapshot: created on first save
  }
  std::stringstream ss;
  ss << in.rdbuf();
  auto doc = nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    return invalidArgument("state file '" + snapshot_file + "' is not valid JSON");
  }
  if (Status s = backend->loadJson(doc); !s.ok()) {
    return invalidArgument("state file '" + snapshot_file + "': " + s.message());
  }
  return backend;
}

Result<std::string> StateBackend::normalize(std::string_view user_path) const {
  auto normal = lexicalNormalize(user_path);
  if (!normal.ok()) return normal.status();
  const std::string& path = *normal;
  if (path.empty() || path.front() != '/') return path;
  std::string rest;
  if (!stripDirPrefix(path, kRoot, &rest)) {
    return permissionDenied(inQuotes(user_path) + " is outside the workspace");
  }
  return rest;
}

FileInfo StateBackend::infoOf(const std::string& name, const Node& node) const {
  return {name, node.dir ? FileType::kDir : FileType::kFile, node.dir ? 0 : node.content.size(),
          node.mtime_ns, node.mode};
}

Result<FileInfo> StateBackend::stat(const std::string& key) const {
  std::shared_lock lock(mu_);
  if (key.empty()) return FileInfo{"", FileType::kDir, 0, 0, 0755};
  auto it = nodes_.find(key);
  if (it == nodes_.end()) return notFound(inQuotes(key) + " does not exist");
  return infoOf(key, it->second);
}

Result<std::vector<FileInfo>> StateBackend::list(const std::string& key) const {
  std::shared_lock lock(mu_);
  if (!key.empty()) {
    auto it = nodes_.find(key);
    if (it == nodes_.end()) return notFound(inQuotes(key) + " does not exist");
    if (!it->second.dir) return invalidArgument(inQuotes(key) + " is not a directory");
  }
  const std::string prefix = key.empty() ? "" : key + "/";
  std::vector<FileInfo> out;
  for (auto it = nodes_.lower_bound(prefix); it != nodes_.end(); ++it) {
    if (it->first.compare(0, prefix.size(), prefix) != 0) break;
    const std::string_view name = std::string_view(it->first).substr(prefix.size());
    if (name.find('/') == std::string_view::npos)
      out.push_back(infoOf(std::string(name), it->second));
  }
  return out;
}

Result<std::string> StateBackend::read(const std::string& key, uint64_t offset,
                                       uint64_t max_bytes) const {
  std::shared_lock lock(mu_);
  auto it = nodes_.find(key);
  if (key.empty() || (it != nodes_.end() && it->second.dir)) {
    return invalidArgument(inQuotes(key) + " is a directory");
  }
  if (it == nodes_.end()) return notFound(inQuotes(key) + " does not exist");
  const std::string& content = it->second.content;
  if (offset >= content.size()) return std::string();
  return content.substr(offset, max_bytes);
}

Status StateBackend::makeParents(const std::string& key, int64_t now) {
  std::string parent = parentOf(key);
  std::vector<std::string> missing;
  while (!parent.empty()) {
    auto it = nodes_.find(parent);
    if (it != nodes_.end()) {
      if (!it->second.dir) {
        return failedPrecondition(inQuotes(key) + ": " + inQuotes(parent) + " is not a directory");
      }
      break;
    }
    missing.push_back(parent);
    parent = parentOf(parent);
  }
  for (const std::string& dir : missing) nodes_[dir] = Node{true, "", now, 0755};
  return okStatus();
}

Result<WriteOutcome> StateBackend::write(const std::string& key, std::string_view data,
                                         WriteMode mode) {
  if (key.empty()) return invalidArgument("the workspace root is a directory");
  std::unique_lock lock(mu_);
  auto it = nodes_.find(key);
  const bool exists = it != nodes_.end();
  if (exists && it->second.dir) return invalidArgument(inQuotes(key) + " is a directory");
  if (exists && mode == WriteMode::kCreate) return alreadyExists(inQuotes(key) + " already exists");
  const int64_t now = nowNs();
  BYD_RETURN_IF_ERROR(makeParents(key, now));
  Node& node = nodes_[key];
  if (mode == WriteMode::kAppend) {
    node.content.append(data);
  } else {
    node.content.assign(data);
  }
  node.mtime_ns = now;
  const WriteOutcome outcome{!exists, node.content.size()};
  if (sync_) BYD_RETURN_IF_ERROR(saveLocked());
  return outcome;
}

bool StateBackend::hasChildren(const std::string& key) const {
  const std::string prefix = key + "/";
  auto it = nodes_.lower_bound(prefix);
  return it != nodes_.end() && it->first.starts_with(prefix);
}

Result<bool> StateBackend::makeDir(const std::string& key) {
  if (key.empty()) return false;
  std::unique_lock lock(mu_);
  if (auto it = nodes_.find(key); it != nodes_.end()) {
    if (it->second.dir) return false;
    return alreadyExists(inQuotes(key) + " already exists and is not a directory");
  }
  const int64_t now = nowNs();
  BYD_RETURN_IF_ERROR(makeParents(key, now));
  nodes_[key] = Node{true, "", now, 0755};
  if (sync_) BYD_RETURN_IF_ERROR(saveLocked());
  return true;
}

Result<MoveOutcome> StateBackend::move(const std::string& from, const std::string& to,
                                       bool replace) {
  if (from.empty()) return invalidArgument("the workspace root cannot be moved");
  if (to.empty()) return invalidArgument("the workspace root cannot be replaced");
  if (from == to)
    return invalidArgument(inQuotes(from) + " is both the source and the destination");
  std::unique_lock lock(mu_);
  auto source = nodes_.find(from);
  if (source == nodes_.end()) return notFound(inQuotes(from) + " does not exist");
  const bool is_dir = source->second.dir;
  MoveOutcome out{is_dir ? FileType::kDir : FileType::kFile, false};
  if (is_dir && to.starts_with(from + "/")) {
    return invalidArgument(inQuotes(from) + " cannot be moved into itself (" + inQuotes(to) + ")");
  }
  if (auto dest = nodes_.find(to); dest != nodes_.end()) {
    out.replaced = true;
    if (!replace) {
      return alreadyExists(inQuotes(to) + " already exists; pass overwrite: true to replace it");
    }
    if (dest->second.dir && !is_dir) {
      return failedPrecondition(inQuotes(to) + " is a directory; a file does not replace it");
    }
    if (!dest->second.dir && is_dir) {
      return failedPrecondition(inQuotes(to) +
                                " is not a directory; a directory does not replace it");
    }
    if (dest->second.dir && hasChildren(to)) {
      return failedPrecondition(inQuotes(to) +
                                " is a directory that is not empty; only an empty one is replaced");
    }
  }
  BYD_RETURN_IF_ERROR(makeParents(to, nowNs()));
  // The node and everything below it change their prefix; nothing else changes.
  std::vector<std::pair<std::string, Node>> moved;
  moved.emplace_back(to, std::move(source->second));
  nodes_.erase(source);
  const std::string prefix = from + "/";
  for (auto it = nodes_.lower_bound(prefix); it != nodes_.end() && it->first.starts_with(prefix);) {
    moved.emplace_back(to + it->first.substr(from.size()), std::move(it->second));
    it = nodes_.erase(it);
  }
  for (auto& [key, node] : moved) nodes_[key] = std::move(node);
  if (sync_) BYD_RETURN_IF_ERROR(saveLocked());
  return out;
}

Result<RemoveOutcome> StateBackend::remove(const std::string& key, bool recursive) {
  if (key.empty()) return invalidArgument("the workspace root cannot be deleted");
  std::unique_lock lock(mu_);
  auto it = nodes_.find(key);
  if (it == nodes_.end()) return notFound(inQuotes(key) + " does not exist");
  RemoveOutcome out{it->second.dir ? FileType::kDir : FileType::kFile, 0, 0};
  if (!it->second.dir) {
    nodes_.erase(it);
    out.files = 1;
  } else {
    if (!recursive && hasChildren(key)) {
      return failedPrecondition(inQuotes(key) +
                                " is a directory that is not empty; pass recursive: true to "
                                "delete it and everything in it");
    }
    nodes_.erase(it);
    out.dirs = 1;
    const std::string prefix = key + "/";
    for (auto child = nodes_.lower_bound(prefix);
         child != nodes_.end() && child->first.starts_with(prefix);) {
      ++(child->second.dir ? out.dirs : out.files);
      child = nodes_.erase(child);
    }
  }
  if (sync_) BYD_RETURN_IF_ERROR(saveLocked());
  return out;
}

nlohmann::json StateBackend::toJson() const {
  nlohmann::json files = nlohmann::json::object();
  nlohmann::json dirs = nlohmann::json::array();
  for (const auto& [key, node] : nodes_) {
    if (node.dir) {
      dirs.push_back(key);
      continue;
    }
    const bool text = isValidUtf8(node.content);
    files[key] = {{"content", text ? node.content : base64Encode(node.content)},
                  {"encoding", text ? "utf-8" : "base64"},
                  {"mode", node.mode},
                  {"mtime_ns", node.mtime_ns}};
  }
  return {{"version", 1}, {"files", std::move(files)}, {"dirs", std::move(dirs)}};
}

Status StateBackend::loadJson(const nlohmann::json& doc) {
  if (!doc.is_object()) return invalidArgument("the snapshot must be a JSON object");
  auto version = doc.find("version");
  if (version != doc.end() && *version != 1) return invalidArgument("unsupported version");
  std::map<std::string, Node, std::less<>> nodes;
  const int64_t now = nowNs();
  auto keyOf = [](const std::string& raw) -> Result<std::string> {
    BYD_ASSIGN_OR_RETURN(std::string key, lexicalNormalize(raw));
    if (key.empty() || key.front() == '/') return invalidArgument("bad path '" + raw + "'");
    return key;
  };
  auto dirs = doc.find("dirs");
  if (dirs != doc.end()) {
    if (!dirs->is_array()) return invalidArgument("'dirs' must be an array of paths");
    for (const auto& d : *dirs) {
      if (!d.is_string()) return invalidArgument("'dirs' must be an array of paths");
      BYD_ASSIGN_OR_RETURN(std::string key, keyOf(d.get<std::string>()));
      nodes[key] = Node{true, "", now, 0755};
    }
  }
  auto files = doc.find("files");
  if (files != doc.end() && !files->is_object())
    return invalidArgument("'files' must be an object");
  for (auto it = files == doc.end() ? doc.end() : files->begin();
       files != doc.end() && it != files->end(); ++it) {
    BYD_ASSIGN_OR_RETURN(std::string key, keyOf(it.key()));
    Node node{false, "", now, 0644};
    const nlohmann::json& v = it.value();
    if (v.is_string()) {
      node.content = v.get<std::string>();
    } else if (v.is_object() && v.contains("content") && v.find("content")->is_string()) {
      node.content = v.find("content")->get<std::string>();
      auto encoding = v.find("encoding");
      if (encoding != v.end() && *encoding == "base64") {
        BYD_ASSIGN_OR_RETURN(node.content, base64Decode(node.content));
      } else if (encoding != v.end() && *encoding != "utf-8") {
        return invalidArgument("file '" + it.key() + "': encoding must be utf-8 or base64");
      }
      auto mode = v.find("mode");
      if (mode != v.end() && mode->is_number_unsigned()) node.mode = mode->get<uint32_t>() & 07777;
      auto mtime = v.find("mtime_ns");
      if (mtime != v.end() && mtime->is_number_integer()) node.mtime_ns = mtime->get<int64_t>();
    } else {
      return invalidArgument("file '" + it.key() + "' needs a string or {\"content\": ...}");
    }
    nodes[key] = std::move(node);
  }
  std::unique_lock lock(mu_);
  nodes_ = std::move(nodes);
  // Parent directories of every file exist implicitly.
  std::vector<std::string> keys;
  for (const auto& [key, node] : nodes_) keys.push_back(key);
  for (const std::string& key : keys) {
    BYD_RETURN_IF_ERROR(makeParents(key, now));
  }
  return okStatus();
}

Status StateBackend::save() const {
  std::shared_lock lock(mu_);
  return saveLocked();
}

Status StateBackend::saveLocked() const {
  if (snapshot_file_.empty()) return okStatus();
  return atomicWriteFile(snapshot_file_,
                         toJson().dump(1, ' ', false, nlohmann::json::error_handler_t::replace));
}

Status atomicWriteFile(const std::string& path, std::string_view data) {
  const std::filesystem::path target(path);
  const std::filesystem::path dir =
      target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  std::string tmp = (dir / ("." + target.filename().string() + ".XXXXXX")).string();
  UniqueFd fd(mkostemp(tmp.data(), O_CLOEXEC));
  if (!fd.valid()) return permissionDenied("cannot create a temporary file beside '" + path + "'");
  size_t done = 0;
  bool ok = true;
  while (ok && done < data.size()) {
    const ssize_t n = ::write(fd.get(), data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += n;
  }
  ok = ok && fsync(fd.get()) == 0;
  ok = (close(fd.release()) == 0) && ok;  // a failed close may be a failed write
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
    unlink(tmp.c_str());
    return internalError("cannot write '" + path + "'");
  }
  if (const UniqueFd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)); dfd.valid()) {
    fsync(dfd.get());
  }
  return okStatus();
}

}  // namespace byd
