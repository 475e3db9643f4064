#include "common/audit_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

namespace byd {
namespace {

std::atomic<AuditLog*> g_log{nullptr};
std::atomic<bool> g_reopen{false};
static_assert(std::atomic<bool>::is_always_lock_free);

int openLog(const std::string& path) {
  return ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0600);
}

}  // namespace

Result<std::unique_ptr<AuditLog>> AuditLog::open(std::string path) {
  const int fd = openLog(path);
  if (fd < 0) {
    return invalidArgument("--audit-log '" + path +
                           "' cannot be opened for appending: " + strerror(errno));
  }
  return std::unique_ptr<AuditLog>(new AuditLog(std::move(path), fd));
}

AuditLog::AuditLog(std::string path, int fd)
    : path_(std::move(path)), fd_(fd), flusher_([this](std::stop_token s) { flushLoop(s); }) {}

AuditLog::~AuditLog() {
  flusher_.request_stop();
  flusher_.join();
  std::lock_guard lock(mu_);
  if (dirty_) fdatasync(fd_);
  ::close(fd_);
}

AuditLog* AuditLog::global() { return g_log.load(); }
void AuditLog::setGlobal(AuditLog* log) { g_log.store(log); }
void AuditLog::reopenSoon() { g_reopen.store(true); }

void AuditLog::reopenIfAsked() {
  if (!g_reopen.exchange(false)) return;
  const int fd = openLog(path_);
  if (fd < 0) {
    spdlog::error("audit log: cannot reopen '{}': {}; writing on to the old file", path_,
                  strerror(errno));
    return;
  }
  if (dirty_) fdatasync(fd_);
  ::close(fd_);
  fd_ = fd;
  dirty_ = false;
  spdlog::info("audit log: reopened '{}'", path_);
}

void AuditLog::write(std::string_view line) {
  std::string whole(line);
  whole += '\n';
  std::lock_guard lock(mu_);
  reopenIfAsked();
  std::string_view rest = whole;
  while (!rest.empty()) {
    const ssize_t n = ::write(fd_, rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (!failing_) spdlog::error("audit log: cannot write '{}': {}", path_, strerror(errno));
      failing_ = true;
      return;
    }
    rest.remove_prefix(static_cast<size_t>(n));
  }
  failing_ = false;
  dirty_ = true;
}

void AuditLog::flushLoop(std::stop_token stop) {
  std::unique_lock lock(mu_);
  while (!stop.stop_requested()) {
    cv_.wait_for(lock, stop, std::chrono::seconds(1), [] { return false; });
    reopenIfAsked();
    if (!dirty_) continue;
    dirty_ = false;
    // The sync runs without the lock, on its own descriptor: writers go on meanwhile.
    const int fd = dup(fd_);
    if (fd < 0) continue;
    lock.unlock();
    fdatasync(fd);
    ::close(fd);
    lock.lock();
  }
}

}  // namespace byd
