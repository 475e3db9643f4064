// The workspaces sessions leave behind (see session_factory.h): kept per tenant under its
// workspace root, deleted after --workspace-ttl unopened, read through /api/ without starting
// anything, and purged for good with the container a named session kept.

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "backends/docker/docker_backend.h"
#include "backends/local/local_backend.h"
#include "common/text.h"
#include "mcp/crypto.h"
#include "permissions/guarded_backend.h"
#include "session_factory.h"

namespace byd {

void SessionFactory::keepStore(const std::string& tenant, const std::string& root) {
  std::lock_guard lock(mu_);
  stores_.emplace_back(tenant, root);
  if (config_.workspace_ttl_s > 0) startReaper();
}

std::string SessionFactory::keptContainerName(const std::string& tenant, const std::string& name,
                                              const std::string& root) {
  // The tenant's length first: "a-b" and "c" cannot meet "a" and "b-c"; the root's digest
  // last: another server's session of the same tenant and name has another container.
  auto digest = mcp::sha256Hex(root);
  return "byd-" + std::to_string(tenant.size()) + "-" + tenant + "-" + name + "-" +
         (digest.ok() ? digest->substr(0, 12) : "0");
}

void SessionFactory::expireStored() {
  struct Expired {
    std::string dir, tenant, name, root;  // name: a named session's
  };
  std::vector<Expired> expired;
  const auto now = std::chrono::system_clock::now();
  const auto ttl = std::chrono::duration<double>(config_.workspace_ttl_s);
  {
    std::lock_guard lock(mu_);
    for (const auto& [tenant, root] : stores_) {
      std::error_code ec;
      for (std::filesystem::directory_iterator it(root, ec), end; !ec && it != end;
           it.increment(ec)) {
        const std::string file = it->path().filename().string();
        const bool named = file.rfind("named-", 0) == 0;
        if (!named && file.rfind("session-", 0) != 0) continue;
        const std::string dir = root + "/" + file;
        if (failed_expiry_.contains(dir)) continue;  // said once; left to the operator
        const auto key = std::make_pair(tenant, file.substr(6));
        if (named ? named_.contains(key) || busy_.contains(key) : open_dirs_.contains(dir)) {
          continue;  // open, being opened, or its backend still lingers
        }
        struct stat st {};
        if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
        const auto closed = std::chrono::system_clock::time_point(
            std::chrono::duration_cast<std::chrono::system_clock::duration>(
                std::chrono::seconds(st.st_mtim.tv_sec) +
                std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
        if (now - closed < ttl) continue;
        if (named) busy_.insert(key);
        expired.push_back({dir, tenant, named ? key.second : "", root});
      }
    }
  }
  for (const Expired& e : expired) {
    std::error_code ec;
    std::filesystem::remove_all(e.dir, ec);  // never follows a link out
    if (ec) {
      spdlog::warn("cannot delete the expired workspace {}: {}", e.dir, ec.message());
    } else if (!e.name.empty()) {
      std::filesystem::remove_all(e.root + "/home-" + e.name, ec);
      if (ec) spdlog::warn("cannot delete {}/home-{}: {}", e.root, e.name, ec.message());
      if (config_.persist_containers) {
        if (Status s = DockerBackend::removeKept(config_.docker.host,
                                                 keptContainerName(e.tenant, e.name, e.root));
            !s.ok()) {
          spdlog::warn("cannot remove the container of session '{}': {}", e.name, s.message());
        }
      }
    }
    if (!ec) spdlog::info("deleted {}, unopened for --workspace-ttl", e.dir);
    std::lock_guard lock(mu_);
    if (ec) failed_expiry_.insert(e.dir);
    if (!e.name.empty()) busy_.erase({e.tenant, e.name});
  }
}

void SessionFactory::expirePlaced() {
  auto kept = placement_->keptWorkspaces();
  if (!kept.ok()) {
    spdlog::warn("the kept workspaces of named sessions: {}", kept.status().message());
    return;
  }
  const auto ttl = std::chrono::duration<double>(config_.workspace_ttl_s);
  const auto now = std::chrono::system_clock::now();
  for (const placement::KeptWorkspace& w : *kept) {
    const auto key = std::make_pair(w.tenant, w.name);
    if (now - w.closed < ttl) continue;
    {
      std::lock_guard lock(mu_);
      if (named_.contains(key) || busy_.contains(key)) continue;  // open, or being opened
      busy_.insert(key);
    }
    if (Status s = placement_->forget(w.tenant, w.name); !s.ok()) {
      spdlog::warn("cannot delete the workspace of session '{}' of tenant '{}': {}", w.name,
                   w.tenant, s.message());
    } else {
      spdlog::info(
          "deleted the workspace of session '{}' of tenant '{}', unopened for "
          "--workspace-ttl",
          w.name, w.tenant);
    }
    std::lock_guard lock(mu_);
    busy_.erase(key);
  }
}

Result<std::string> SessionFactory::storeOf(const Request& request) const {
  const std::string& under =
      request.workspace_root.empty() ? config_.workspace_root : request.workspace_root;
  if (under.empty()) {
    return notFound("no workspace is stored: the server has no --workspace-root");
  }
  return under;
}

struct SessionFactory::Stored {
  std::unique_ptr<LocalBackend> local;
  std::unique_ptr<permissions::GuardedBackend> guarded;
};

Result<std::unique_ptr<SessionFactory::Stored>> SessionFactory::openStored(
    const Request& request, permissions::Operation op) const {
  BYD_ASSIGN_OR_RETURN(const std::string under, storeOf(request));
  const std::string dir = under + "/named-" + request.name;
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return notFound("no stored session '" + request.name + "'");
  }
  auto stored = std::make_unique<Stored>();
  BYD_ASSIGN_OR_RETURN(stored->local, LocalBackend::open(dir, {}));
  stored->guarded = std::make_unique<permissions::GuardedBackend>(
      *stored->local, request.guard != nullptr ? *request.guard : guard_, op, nullptr);
  return stored;
}

Result<nlohmann::json> SessionFactory::storedSessions(const Request& request) const {
  BYD_ASSIGN_OR_RETURN(const std::string under, storeOf(request));
  nlohmann::json sessions = nlohmann::json::array();
  std::error_code ec;
  std::vector<std::filesystem::directory_entry> dirs;
  for (const auto& entry : std::filesystem::directory_iterator(under, ec)) {
    const std::string file = entry.path().filename().string();
    if (file.rfind("named-", 0) == 0 && entry.is_directory(ec) && !entry.is_symlink(ec)) {
      dirs.push_back(entry);
    }
  }
  if (ec) return internalError("cannot list " + under + ": " + ec.message());
  std::sort(dirs.begin(), dirs.end());
  std::lock_guard lock(mu_);
  for (const auto& entry : dirs) {
    const std::string name = entry.path().filename().string().substr(6);
    const auto it = named_.find({request.tenant, name});
    struct stat st {};
    lstat(entry.path().c_str(), &st);
    sessions.push_back(
        {{"name", name},
         {"connected", it == named_.end() ? 0 : it->second.attached},
         {"running", it != named_.end()},
         {"modified", isoTime(st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec)}});
  }
  return nlohmann::json{{"sessions", std::move(sessions)}};
}

Result<nlohmann::json> SessionFactory::storedList(const Request& request, const std::string& path,
                                                  size_t max_entries) const {
  BYD_ASSIGN_OR_RETURN(auto stored, openStored(request, permissions::Operation::kLs));
  Backend& fs = *stored->guarded;
  BYD_ASSIGN_OR_RETURN(const std::string key, fs.normalize(path));
  BYD_ASSIGN_OR_RETURN(std::vector<FileInfo> entries, fs.list(key));
  std::sort(entries.begin(), entries.end(),
            [](const FileInfo& a, const FileInfo& b) { return a.name < b.name; });
  const size_t total = entries.size();
  if (entries.size() > max_entries) entries.resize(max_entries);
  nlohmann::json list = nlohmann::json::array();
  for (const FileInfo& e : entries) {
    list.push_back({{"name", e.name},
                    {"type", fileTypeName(e.type)},
                    {"size", e.size},
                    {"mtime", isoTime(e.mtime_ns)}});
  }
  return nlohmann::json{{"session", request.name},
                        {"path", key.empty() ? "." : key},
                        {"entries", std::move(list)},
                        {"total", total},
                        {"truncated", total > entries.size()}};
}

Result<std::string> SessionFactory::storedRead(const Request& request, const std::string& path,
                                               uint64_t max_bytes) const {
  BYD_ASSIGN_OR_RETURN(auto stored, openStored(request, permissions::Operation::kRead));
  Backend& fs = *stored->guarded;
  BYD_ASSIGN_OR_RETURN(const std::string key, fs.normalize(path));
  BYD_ASSIGN_OR_RETURN(const FileInfo info, fs.stat(key));
  if (info.type != FileType::kFile) {
    return invalidArgument("'" + path + "' is not a file");
  }
  if (info.size > max_bytes) {
    return outOfRange("'" + path + "' is " + humanSize(info.size) + ", over the " +
                      humanSize(max_bytes) + " a read may take (max_read_bytes)");
  }
  return fs.read(key, 0, max_bytes);
}

Status SessionFactory::purge(const Request& request) {
  const auto key = std::make_pair(request.tenant, request.name);
  // --placement: the workspace is the placement's to keep (a Swarm volume on its node).
  Result<std::string> store = placement_ ? Result<std::string>("") : storeOf(request);
  if (!store.ok()) return store.status();
  const std::string under = *store;
  const std::string dir = under + "/named-" + request.name;
  std::shared_ptr<SessionStack> dropped;
  bool known = false;
  {
    std::lock_guard lock(mu_);
    if (busy_.contains(key)) {
      return failedPrecondition("session '" + request.name +
                                "' is being opened or deleted; try again");
    }
    if (auto it = named_.find(key); it != named_.end()) {
      dropped = std::move(it->second.stack);
      named_.erase(it);
      known = true;
    }
    busy_.insert(key);  // until it is gone: no session of that name is made meanwhile
  }
  dropped.reset();  // stops now unless a connection still ending holds it
  const Status done = [&]() -> Status {
    if (placement_) {
      const Status forgot = placement_->forget(request.tenant, request.name);
      return forgot.code() == Code::kNotFound && known ? okStatus() : forgot;
    }
    struct stat st {};
    if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return known ? okStatus() : notFound("no stored session '" + request.name + "'");
    }
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);  // never follows a link out
    if (ec) return internalError("cannot remove session '" + request.name + "': " + ec.message());
    std::filesystem::remove_all(under + "/home-" + request.name, ec);
    if (ec)
      return internalError("cannot remove the HOME of '" + request.name + "': " + ec.message());
    if (config_.persist_containers) {
      return DockerBackend::removeKept(config_.docker.host,
                                       keptContainerName(request.tenant, request.name, under));
    }
    return okStatus();
  }();
  std::lock_guard lock(mu_);
  busy_.erase(key);
  return done;
}

}  // namespace byd
