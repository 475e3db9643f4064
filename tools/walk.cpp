#include "tools/walk.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace byd {
namespace {

// How long a walk goes alone before it takes a second thread.
constexpr std::chrono::milliseconds kAloneFor(2);

// Directories wait on a stack (depth first, as the walk was when it had one thread) for any
// of the walkers. A directory is listed outside the lock, which is where a walk spends its
// time (the kernel's directory reads and stats); its entries are then visited under the lock,
// so `visit` is called from one thread at a time.
class Walk {
 public:
  Walk(const Backend& backend, const WalkOptions& options, const CancelToken& cancel,
       const std::function<bool(const std::string&, const std::string&, const FileInfo&)>& visit)
      : backend_(backend), options_(options), cancel_(cancel), visit_(visit) {}

  Status run(const std::string& start_key) {
    stack_.emplace_back(start_key, "");
    std::thread helper;
    // A second walker once there is more than one directory to read and the walk has taken
    // a while, where there is a second core for it: a small walk, or one whose listings come
    // from memory (the backend's cache), costs no thread; one that waits on the kernel
    // lists two directories at a time.
    bool may_help = std::thread::hardware_concurrency() > 1;
    const auto start = std::chrono::steady_clock::now();
    walk([&] {
      if (!may_help || helper.joinable() || stack_.size() < 2) return;
      if (std::chrono::steady_clock::now() - start < kAloneFor) return;
      try {
        helper = std::thread([this] { walk(nullptr); });
      } catch (const std::exception&) {  // no thread to be had: one walker does it all
        may_help = false;
      }
    });
    if (helper.joinable()) helper.join();
    // What a walker threw (memory ran out, say) is the caller's, from its own thread.
    if (error_) std::rethrow_exception(error_);
    return cancelled_ ? cancelled("cancelled") : okStatus();
  }

 private:
  // `more`, called under the lock after each directory, may add walkers. An exception ends
  // the walk for every walker and is kept for run() to throw.
  void walk(const std::function<void()>& more) {
    std::unique_lock lock(mu_, std::defer_lock);
    bool listing = false;
    try {
      lock.lock();
      walkLocked(lock, listing, more);
    } catch (...) {
      if (!lock.owns_lock()) lock.lock();
      if (listing) --busy_;
      if (!error_) error_ = std::current_exception();
      done_ = true;
    }
    work_.notify_all();
  }

  void walkLocked(std::unique_lock<std::mutex>& lock, bool& listing,
                  const std::function<void()>& more) {
    for (;;) {
      work_.wait(lock, [this] { return !stack_.empty() || busy_ == 0 || done_; });
      if (done_ || stack_.empty()) break;  // nothing left, and nobody is listing more
      if (cancel_.cancelled()) {
        cancelled_ = done_ = true;
        break;
      }
      auto [dir_key, dir_rel] = std::move(stack_.back());
      stack_.pop_back();
      ++busy_;
      listing = true;
      lock.unlock();
      std::deque<FileInfo> entries = list(dir_key, dir_rel);
      lock.lock();
      listing = false;
      --busy_;
      if (!done_) visitAll(dir_key, dir_rel, entries);
      if (more) more();
      work_.notify_all();
    }
  }

  std::deque<FileInfo> list(const std::string& dir_key, const std::string& dir_rel) {
    // A deque grows without copying what it holds: a directory of a million entries costs
    // their size once, not twice while a vector moves them.
    std::deque<FileInfo> entries;
    auto keep = [&entries](const FileInfo& e) {
      entries.push_back(e);
      return true;
    };
    const Status listed =
        options_.detail
            ? backend_.listTyped(
                  dir_key,
                  [&](std::string_view name, FileType type) {
                    return type != FileType::kDir && options_.detail(joinKey(dir_rel, name), type);
                  },
                  keep)
            : backend_.listEach(dir_key, keep);
    if (!listed.ok()) entries.clear();  // skipped, as a directory that cannot be read
    // Sorted so that results (and which ones a cap keeps) do not depend on readdir order.
    std::sort(entries.begin(), entries.end(),
              [](const FileInfo& a, const FileInfo& b) { return a.name > b.name; });
    return entries;
  }

  // Under the lock.
  void visitAll(const std::string& dir_key, const std::string& dir_rel,
                const std::deque<FileInfo>& entries) {
    for (const FileInfo& entry : entries) {
      const std::string key = joinKey(dir_key, entry.name);
      const std::string rel = joinKey(dir_rel, entry.name);
      if (entry.type == FileType::kDir && options_.skip_git && entry.name == ".git") continue;
      if (!visit_(key, rel, entry)) {
        done_ = true;
        return;
      }
      if (entry.type == FileType::kDir && (!options_.descend || options_.descend(rel))) {
        stack_.emplace_back(key, rel);
      }
    }
  }

  const Backend& backend_;
  const WalkOptions& options_;
  const CancelToken& cancel_;
  const std::function<bool(const std::string&, const std::string&, const FileInfo&)>& visit_;
  std::mutex mu_;
  std::condition_variable work_;
  // Explicit stack rather than recursion: a hostile tree may be thousands of levels deep.
  std::vector<std::pair<std::string, std::string>> stack_;
  int busy_ = 0;       // walkers listing a directory
  bool done_ = false;  // visit said stop, or the walk was cancelled
  bool cancelled_ = false;
  std::exception_ptr error_;  // the first a walker threw
};

}  // namespace

Status walkTree(const Backend& backend, const std::string& start_key, const WalkOptions& options,
                const CancelToken& cancel,
                const std::function<bool(const std::string& key, const std::string& rel,
                                         const FileInfo& info)>& visit) {
  return Walk(backend, options, cancel, visit).run(start_key);
}

}  // namespace byd
