#include "common/audit_log.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
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

int AuditLog::reopenIfAsked() {
  if (!g_reopen.exchange(false)) return -1;
  const int fd = openLog(path_);
  if (fd < 0) {
    spdlog::error("audit log: cannot reopen '{}': {}; writing on to the old file", path_,
                  strerror(errno));
    return -1;
  }
  const int old = fd_;
  fd_ = fd;
  dirty_ = false;
  spdlog::info("audit log: reopened '{}'", path_);
  return old;
}

void AuditLog::retire(int old_fd) {
  if (old_fd < 0) return;
  fdatasync(old_fd);
  ::close(old_fd);
}

void AuditLog::write(std::string_view line) {
  std::string whole(line);
  whole += '\n';
  int old_fd = -1;
  {
    std::lock_guard lock(mu_);
    old_fd = reopenIfAsked();
    // After a line that failed part way, this one starts a line of its own.
    if (failing_) whole.insert(0, "\n");
    std::string_view rest = whole;
    while (!rest.empty()) {
      const ssize_t n = ::write(fd_, rest.data(), rest.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        if (!failing_) spdlog::error("audit log: cannot write '{}': {}", path_, strerror(errno));
        failing_ = true;
        break;
      }
      rest.remove_prefix(static_cast<size_t>(n));
    }
    if (rest.empty()) failing_ = false;
    dirty_ = true;
  }
  retire(old_fd);  // the old file's sync waits for no writer
}

void AuditLog::flushLoop(std::stop_token stop) {
  // No process signal is this thread's to take (a stop signal's default action would end the
  // server here, before the thread that waits for it could stop it gracefully).
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  std::unique_lock lock(mu_);
  while (!stop.stop_requested()) {
    cv_.wait_for(lock, stop, std::chrono::seconds(1), [] { return false; });
    if (const int old_fd = reopenIfAsked(); old_fd >= 0) {
      lock.unlock();
      retire(old_fd);
      lock.lock();
    }
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
