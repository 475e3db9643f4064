#pragma once
// A fixed pool of threads that run posted jobs in FIFO order. After a job, one idle worker
// keeps polling the queue for a short while before it sleeps: on virtual machines the wake-up
// of a sleeping thread costs hundreds of microseconds (measured: a 1 KiB read_file took 360 µs
// through asio::thread_pool and 90 µs run inline), which would dominate every quick tool call
// of a client that sends one request after another. At most one worker polls at a time, and
// it yields between looks, so the cost is bounded to one core for `spin` after the last job
// and gives way to any other runnable thread. A job wakes the worker that went to sleep last:
// the one whose caches, and whose allocator's free pages, are warmest. A client that sends one
// request after another is then served by one thread, and the pages a large answer freed are
// reused by the next, not kept in each worker's heap. The pool keeps `keep` workers; it starts
// more, up to `threads`, only when a job finds no worker free to take it, and a worker beyond
// `keep` that sleeps for `retire_after` ends: a server of many sessions, most of them calling
// one tool at a time, holds one thread for each, not `threads`. Thread-safe.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <mutex>
#include <thread>
#include <vector>

namespace byd {

class WorkerPool {
 public:
  // At most `threads` workers (at least one), of which `keep` (all by default) start now and
  // stay. `idle`, if given, is run by a worker that has had nothing to do for `idle_after` since
  // its last job (once per such pause; a job posted meanwhile goes to another sleeping worker, or
  // waits for it). A worker beyond `keep` ends once it has slept for `retire_after` after that.
  explicit WorkerPool(size_t threads,
                      std::chrono::microseconds spin = std::chrono::microseconds(500),
                      std::function<void()> idle = nullptr,
                      std::chrono::milliseconds idle_after = std::chrono::milliseconds(1000),
                      size_t keep = SIZE_MAX,
                      std::chrono::milliseconds retire_after = std::chrono::seconds(10));
  // Runs every job already posted, then joins the threads.
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void post(std::function<void()> job);

  // How many workers are asleep now (waiting for a job or for their idle pause to end).
  size_t asleep() const;
  // How many workers there are now.
  size_t threads() const;

 private:
  // A sleeping worker, on the stack of those idle (the last to sleep on top).
  struct Sleeper {
    std::condition_variable cv;
    bool woken = false;
  };
  void loop();
  // Polls for up to spin_ while the queue is empty; true if it became non-empty.
  bool pollForWork();
  // Starts one more worker (mu_ held); the workers that ended are taken into `ended`, to be
  // joined once mu_ is released.
  void spawn(std::list<std::jthread>* ended);

  const size_t max_threads_;
  const size_t keep_;
  const std::chrono::microseconds spin_;
  const std::function<void()> idle_;
  const std::chrono::milliseconds idle_after_;
  const std::chrono::milliseconds retire_after_;
  mutable std::mutex mu_;
  std::vector<Sleeper*> sleeping_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  size_t live_ = 0;                   // workers that have not ended
  size_t running_ = 0;                // workers running a job
  std::atomic<size_t> queued_{0};     // lock-free view of queue_.size() for the poller
  std::atomic<bool> polling_{false};  // one poller at a time
  std::list<std::jthread> threads_;
  std::vector<std::thread::id> ended_;  // workers that retired, not yet joined
};

}  // namespace byd
