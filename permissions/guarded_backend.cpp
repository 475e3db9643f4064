#include "permissions/guarded_backend.h"

#include <algorithm>

#include <spdlog/spdlog.h>

namespace byd::permissions {

Result<std::string> GuardedBackend::normalize(std::string_view user_path) const {
  BYD_ASSIGN_OR_RETURN(std::string key, inner_.normalize(user_path));
  // For execute and python the target is the command or code, checked where it runs; a path
  // they name (the working directory) must only not be hidden.
  if (op_ == Operation::kExecute || op_ == Operation::kPython) {
    BYD_RETURN_IF_ERROR(checkRead(key));
    return key;
  }
  BYD_RETURN_IF_ERROR(guard_.check(op_, key, approver_));
  // Through a symlink, the file reached must not be one the rules deny for this operation.
  BYD_ASSIGN_OR_RETURN(std::string real, cachedRealKey(key));
  if (real != key && guard_.decide(op_, real).action == Action::kDeny) {
    return permissionDenied(std::string(operationName(op_)) + " denied for " + displayTarget(key) +
                            ": it leads to " + displayTarget(real) + ", which the rules deny");
  }
  if (op_ == Operation::kRead) {
    // The read rules passed `key` and what it leads to: checkRead() would ask them again.
    std::lock_guard lock(real_mu_);
    read_vetted_ = key;
  }
  return key;
}

Result<std::string> GuardedBackend::cachedRealKey(const std::string& key) const {
  {
    // Used once: the look right after normalize() shares its lookup, any later one looks again
    // (a long read opens the file once per chunk, and the file may be swapped meanwhile).
    std::lock_guard lock(real_mu_);
    if (has_last_ && last_key_ == key) {
      has_last_ = false;
      return last_real_;
    }
  }
  BYD_ASSIGN_OR_RETURN(std::string real, inner_.realKey(key));
  std::lock_guard lock(real_mu_);
  last_key_ = key;
  last_real_ = real;
  has_last_ = true;
  return real;
}

Status GuardedBackend::checkRead(const std::string& key) const {
  {
    // Once, like the cached real key: the first read after normalize().
    std::lock_guard lock(real_mu_);
    if (read_vetted_ && *read_vetted_ == key) {
      read_vetted_.reset();
      has_last_ = false;
      return okStatus();
    }
  }
  if (guard_.hidesFromListings(key)) {
    // Say why in the words of the read rule that denies it.
    return guard_.check(Operation::kRead, key, nullptr);
  }
  // A symlink must not reach what its own name would not ("notes.txt" -> ".env").
  BYD_ASSIGN_OR_RETURN(std::string real, cachedRealKey(key));
  if (real != key && guard_.hidesFromListings(real)) {
    return permissionDenied("read denied for " + displayTarget(key) + ": it leads to " +
                            displayTarget(real) + ", which the rules deny");
  }
  return okStatus();
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

Result<std::string> GuardedBackend::read(const std::string& key, uint64_t offset,
                                         uint64_t max_bytes) const {
  BYD_RETURN_IF_ERROR(checkRead(key));
  return inner_.read(key, offset, max_bytes);
}

Status GuardedBackend::readStream(const std::string& key, size_t chunk_bytes,
                                  const std::function<bool(std::string_view)>& sink) const {
  BYD_RETURN_IF_ERROR(checkRead(key));
  return inner_.readStream(key, chunk_bytes, sink);
}

Result<WriteOutcome> GuardedBackend::write(const std::string& key, std::string_view data,
                                           WriteMode mode) {
  // The main target was approved in normalize(); a write elsewhere must at least not be denied.
  if (guard_.decide(op_, key).action == Action::kDeny) {
    BYD_RETURN_IF_ERROR(guard_.check(op_, key, nullptr));
  }
  return inner_.write(key, data, mode);
}

Result<ExecResult> GuardedBackend::execute(const ExecRequest& request,
                                           const CancelToken& cancel) const {
  BYD_RETURN_IF_ERROR(guard_.check(Operation::kExecute, request.command, approver_));
  return inner_.execute(request, cancel);
}

Result<PythonResult> GuardedBackend::runPython(const PythonRequest& request,
                                               const CancelToken& cancel) const {
  BYD_RETURN_IF_ERROR(guard_.check(Operation::kPython, request.code, approver_));
  return inner_.runPython(request, cancel);
}

}  // namespace byd::permissions
