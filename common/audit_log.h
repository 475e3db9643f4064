#pragma once
// The audit log (--audit-log FILE): one JSON line per tool call, appended to FILE (made 0600),
// each line by one write(). Lines reach the disk within about a second: a thread of its own
// fsyncs the file at most once a second, when something was written since. On SIGHUP the file
// is reopened by its name (so that logrotate can move it away): reopenSoon() is
// async-signal-safe, and the next line, or the thread within a second, reopens it.
// Thread-safe.

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "common/result.h"

namespace byd {

class AuditLog {
 public:
  static Result<std::unique_ptr<AuditLog>> open(std::string path);
  ~AuditLog();

  // Appends `line` and a newline. A failure is logged (once until a write succeeds again).
  void write(std::string_view line);

  // The log the process writes to (null: none). Set once at start, before serving.
  static AuditLog* global();
  static void setGlobal(AuditLog* log);
  // For a SIGHUP handler: the log is reopened by its name before its next line.
  static void reopenSoon();

 private:
  AuditLog(std::string path, int fd);
  // With mu_ held: opens the file again when asked to; the old descriptor (or -1), for retire()
  // once mu_ is released.
  int reopenIfAsked();
  static void retire(int old_fd);  // syncs and closes
  void flushLoop(std::stop_token stop);

  const std::string path_;
  std::mutex mu_;
  int fd_;
  bool dirty_ = false;    // written since the last fsync
  bool failing_ = false;  // the last write failed, perhaps part way (said once)
  std::condition_variable_any cv_;
  std::jthread flusher_;  // last: stopped before the rest goes
};

}  // namespace byd
