#include "permissions/guarded_backend.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "backends/python/import_names.h"
#include "common/metrics.h"
#include "permissions/decision_trail.h"

namespace byd::permissions {

Result<std::string> GuardedBackend::normalize(std::string_view user_path) const {
  BYD_ASSIGN_OR_RETURN(std::string key, inner_.normalize(user_path));
  // For execute and python the target is the command or code, checked where it runs; a path
  // they name (the working directory) must only not be hidden.
  if (op_ == Operation::kExecute || op_ == Operation::kPython) {
    BYD_RETURN_IF_ERROR(checkRead(key));
    return key;
  }
  if (key.empty() && (op_ == Operation::kMove || op_ == Operation::kDelete)) {
    return invalidArgument("the workspace root cannot be " +
                           std::string(op_ == Operation::kMove ? "moved or replaced" : "deleted"));
  }
  if (op_ == Operation::kMove) {
    // Both paths are asked about together, in move().
    BYD_RETURN_IF_ERROR(checkNotDenied(key));
  } else {
    BYD_RETURN_IF_ERROR(guard_.check(op_, key, approver_));
  }
  // Through a symlink, the file reached must not be one the rules deny for this operation.
  BYD_ASSIGN_OR_RETURN(std::string real, inner_.realKey(key));
  if (real != key) {
    if (const Decision d = guard_.decide(op_, real); d.action == Action::kDeny) {
      DecisionTrail::note(op_, key, Action::kDeny, d.source + " (through a link to " + real + ")");
      return permissionDenied(std::string(operationName(op_)) + " denied for " +
                              displayTarget(key) + ": it leads to " + displayTarget(real) +
                              ", which the rules deny");
    }
  }
  if (op_ != Operation::kLs && op_ != Operation::kGlob) {
    BYD_RETURN_IF_ERROR(checkLinks(key, real));
  }
  std::lock_guard lock(look_mu_);
  // For read, the read rules have just passed `key` and what it leads to.
  look_ = Look{key, std::move(real), op_ == Operation::kRead};
  return key;
}

std::optional<GuardedBackend::Look> GuardedBackend::takeLook(const std::string& key) const {
  std::lock_guard lock(look_mu_);
  if (!look_ || look_->key != key) return std::nullopt;
  std::optional<Look> look = std::move(look_);
  look_.reset();
  return look;
}

Status GuardedBackend::checkLinks(const std::string& key, const std::string& real) const {
  if (denied_files_ == nullptr) return okStatus();
  auto info = inner_.stat(real);
  if (!info.ok()) return okStatus();  // nothing there yet: the operation says so itself
  Status s = denied_files_->check(inner_, guard_, key, *info);
  if (s.code() == Code::kPermissionDenied) {
    DecisionTrail::note(op_, key, Action::kDeny, "another name (hard link) of a denied file");
  }
  return s;
}

Status GuardedBackend::checkRead(const std::string& key) const {
  const std::optional<Look> look = takeLook(key);
  if (look && look->read_passed) return okStatus();
  if (guard_.hidesFromListings(key)) {
    // Say why in the words of the read rule that denies it.
    return guard_.check(Operation::kRead, key, nullptr);
  }
  // A symlink must not reach what its own name would not ("notes.txt" -> ".env").
  std::string real;
  if (look) {
    real = look->real;
  } else {
    BYD_ASSIGN_OR_RETURN(real, inner_.realKey(key));
  }
  if (real != key && guard_.hidesFromListings(real)) {
    return permissionDenied("read denied for " + displayTarget(key) + ": it leads to " +
                            displayTarget(real) + ", which the rules deny");
  }
  return look ? okStatus() : checkLinks(key, real);  // normalize() looked at its own target
}

Result<FileInfo> GuardedBackend::stat(const std::string& key) const {
  BYD_RETURN_IF_ERROR(checkRead(key));
  return inner_.stat(key);
}

Result<std::vector<FileInfo>> GuardedBackend::list(const std::string& key) const {
  BYD_RETURN_IF_ERROR(checkRead(key));
  BYD_ASSIGN_OR_RETURN(std::vector<FileInfo> entries, inner_.list(key));
  const size_t before = entries.size();
  std::erase_if(entries, [&](const FileInfo& e) {
    const std::string child = joinKey(key, e.name);
    if (!guard_.hidesFromListings(child)) return false;
    spdlog::debug("permission: {} hidden from a listing (read denied)", displayTarget(child));
    return true;
  });
  hidden_ += before - entries.size();
  return entries;
}

Status GuardedBackend::listEach(const std::string& key,
                                const std::function<bool(const FileInfo&)>& visit) const {
  return listTyped(key, nullptr, visit);
}

Status GuardedBackend::listTyped(const std::string& key, const Detail& detail,
                                 const std::function<bool(const FileInfo&)>& visit) const {
  // Each child's key is built in one buffer: the directory's part once, then each name.
  std::string child = joinKey(key, "");
  const size_t stem = child.size();
  auto shown = [&](const FileInfo& e) {
    child.resize(stem);
    child += e.name;
    if (guard_.hidesFromListings(child)) {
      ++hidden_;
      return true;
    }
    return visit(e);
  };
  if (!guard_.hidesFromListings(key)) {
    // With no link on the way the directory is the one its name says, which the rules have
    // just passed, and a directory has no other names (hard links): nothing to follow. A walk
    // lists each directory so, at a third of the system calls.
    if (std::optional<Status> direct = inner_.listTypedDirect(key, detail, shown)) {
      takeLook(key);  // spent, as checkRead() would have spent it
      return *direct;
    }
  }
  BYD_RETURN_IF_ERROR(checkRead(key));
  return detail ? inner_.listTyped(key, detail, shown) : inner_.listEach(key, shown);
}

Result<std::string> GuardedBackend::read(const std::string& key, uint64_t offset,
                                         uint64_t max_bytes) const {
  BYD_RETURN_IF_ERROR(checkRead(key));
  Result<std::string> data = inner_.read(key, offset, max_bytes);
  if (data.ok()) {
    metrics::add("byd_read_bytes_total", {std::string(operationName(op_))},
                 static_cast<double>(data->size()));
  }
  return data;
}

Status GuardedBackend::readStream(const std::string& key, size_t chunk_bytes,
                                  const std::function<bool(std::string_view)>& sink) const {
  BYD_RETURN_IF_ERROR(checkRead(key));
  size_t bytes = 0;
  Status s = inner_.readStream(key, chunk_bytes, [&](std::string_view chunk) {
    bytes += chunk.size();
    return sink(chunk);
  });
  metrics::add("byd_read_bytes_total", {std::string(operationName(op_))},
               static_cast<double>(bytes));
  return s;
}

Status GuardedBackend::checkNotDenied(const std::string& key) const {
  if (guard_.decide(op_, key).action != Action::kDeny) return okStatus();
  return guard_.check(op_, key, nullptr);
}

Status GuardedBackend::checkTree(const std::string& key, const std::string* to, bool asked) const {
  const std::string name(operationName(op_));
  // A move must not bring what the rules keep from reading where it could be read.
  const auto staysHidden = [&](const std::string& held, const std::string& dest) -> Status {
    if (!guard_.hidesFromListings(held) || guard_.hidesFromListings(dest)) return okStatus();
    return permissionDenied(name + " denied for " + displayTarget(key) +
                            (held == key ? "" : ": it holds " + displayTarget(held)) +
                            ", which the rules keep from reading, and " + displayTarget(dest) +
                            " could be read");
  };
  // What refuses the whole is noted as the decision that made it.
  std::string refusing_rule = "the read rules hide what it holds";
  const auto refused = [&](Status s) {
    if (s.code() == Code::kPermissionDenied) {
      DecisionTrail::note(op_, key, Action::kDeny, refusing_rule);
    }
    return s;
  };
  if (to != nullptr) BYD_RETURN_IF_ERROR(refused(staysHidden(key, *to)));
  auto info = inner_.stat(key);
  if (!info.ok() || info->type != FileType::kDir) return okStatus();
  std::vector<std::string> dirs{key};
  Status found = okStatus();
  std::optional<std::pair<std::string, Decision>> asking;  // the first entry whose rule asks
  auto judge = [&](const std::string& path, const std::string& held) {
    const Decision d = guard_.decide(op_, path);
    if (d.action == Action::kAsk && !asking) asking.emplace(held, d);
    if (d.action != Action::kDeny) return true;
    const std::string why = d.description.empty() ? "by " + d.source : d.description;
    refusing_rule = d.source + " (for " + path + ")";
    found = permissionDenied(
        name + " denied for " + displayTarget(key) + ": it holds " + displayTarget(held) +
        (path == held ? ", which the rules deny for " + name
                      : ", which would become " + displayTarget(path) + ", which the rules deny") +
        " (" + why + ")");
    return false;
  };
  while (!dirs.empty() && found.ok()) {
    const std::string dir = std::move(dirs.back());
    dirs.pop_back();
    BYD_RETURN_IF_ERROR(inner_.listEach(dir, [&](const FileInfo& e) {
      const std::string child = joinKey(dir, e.name);
      if (!judge(child, child)) return false;
      if (to != nullptr) {
        const std::string dest = joinKey(*to, child.substr(key.size() + (key.empty() ? 0 : 1)));
        if (!judge(dest, child)) return false;
        if (found = staysHidden(child, dest); !found.ok()) return false;
      }
      if (e.type == FileType::kDir) dirs.push_back(child);
      return true;
    }));
  }
  BYD_RETURN_IF_ERROR(refused(found));
  // Something inside asks while the whole was let through without a question: ask about it.
  if (asking && !asked) {
    return guard_.confirm(op_, key, key + " (which holds " + asking->first + ")", asking->second,
                          approver_);
  }
  return okStatus();
}

Result<WriteOutcome> GuardedBackend::write(const std::string& key, std::string_view data,
                                           WriteMode mode) {
  // The main target was approved in normalize(); a write elsewhere must at least not be denied.
  BYD_RETURN_IF_ERROR(checkNotDenied(key));
  if (denied_files_ != nullptr) denied_files_->invalidate();
  Result<WriteOutcome> written = inner_.write(key, data, mode);
  if (written.ok()) {
    metrics::add("byd_written_bytes_total", {std::string(operationName(op_))},
                 static_cast<double>(data.size()));
  }
  return written;
}

Result<bool> GuardedBackend::makeDir(const std::string& key) {
  BYD_RETURN_IF_ERROR(checkNotDenied(key));
  return inner_.makeDir(key);
}

Result<MoveOutcome> GuardedBackend::move(const std::string& from, const std::string& to,
                                         bool replace) {
  BYD_RETURN_IF_ERROR(guard_.checkMove(from, to, approver_));
  const bool asked = guard_.decide(Operation::kMove, from).action == Action::kAsk ||
                     guard_.decide(Operation::kMove, to).action == Action::kAsk;
  BYD_RETURN_IF_ERROR(checkTree(from, &to, asked));
  if (denied_files_ != nullptr) denied_files_->invalidate();
  return inner_.move(from, to, replace);
}

Result<RemoveOutcome> GuardedBackend::remove(const std::string& key, bool recursive) {
  BYD_RETURN_IF_ERROR(checkNotDenied(key));
  if (recursive) {
    BYD_RETURN_IF_ERROR(
        checkTree(key, nullptr, guard_.decide(Operation::kDelete, key).action == Action::kAsk));
  }
  if (denied_files_ != nullptr) denied_files_->invalidate();
  return inner_.remove(key, recursive);
}

Result<ExecResult> GuardedBackend::execute(const ExecRequest& request, const CancelToken& cancel) {
  // A redirection's path is judged as the file tools would judge it: by its workspace key.
  const Guard::PathMapper paths = [&](std::string_view path) {
    const std::string joined = lexicalKey(request.cwd, path);
    if (path.starts_with('~') || path.starts_with('$')) return joined;
    Result<std::string> key = inner_.normalize(joined);
    return key.ok() ? *key : joined;
  };
  bool approved = false;
  BYD_RETURN_IF_ERROR(
      guard_.checkCommand(request.command, request.env, request.cwd, approver_, paths, &approved));
  return runJudged(request, approved, "execute",
                   [&](const ExecRequest& r) { return inner_.executor()->execute(r, cancel); });
}

Result<PythonResult> GuardedBackend::runPython(const PythonRequest& request,
                                               const CancelToken& cancel) {
  bool approved = false;
  BYD_RETURN_IF_ERROR(guard_.check(Operation::kPython, request.code, approver_, &approved));
  Executor& executor = *inner_.executor();
  const auto run = [&] {
    return runJudged(request, approved, "run_python",
                     [&](const PythonRequest& r) { return executor.runPython(r, cancel); });
  };
  BYD_ASSIGN_OR_RETURN(PythonResult result, run());
  // Packages on demand: a module that is missing at its top level (`import a.b` with `a`
  // there fails for another reason) is installed, if the rules let it, and the cell runs
  // again; each distribution once per call.
  std::vector<std::string> installed, tried;
  while (executor.installsPackages() && !result.missing_module.empty() &&
         result.missing_module.find('.') == std::string::npos) {
    const std::optional<std::string> name = distributionForModule(result.missing_module);
    if (!name || std::find(tried.begin(), tried.end(), *name) != tried.end()) break;
    tried.push_back(*name);
    Status allowed = guard_.checkInstall(*name, "run_python", approver_);
    Result<std::vector<std::string>> got = allowed.ok() ? executor.installPackages({*name}, cancel)
                                                        : Result<std::vector<std::string>>(allowed);
    if (cancel.cancelled()) return cancelled("cancelled");
    if (!got.ok()) {
      result.install_error = got.status().message();
      break;
    }
    installed.insert(installed.end(), got->begin(), got->end());
    BYD_ASSIGN_OR_RETURN(result, run());
  }
  result.installed = std::move(installed);
  return result;
}

}  // namespace byd::permissions
