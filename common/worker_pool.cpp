#include "common/worker_pool.h"

namespace byd {
namespace {

// Yields rather than spinning on `pause`: on a busy machine the poller must give its core to
// the thread that will post the next job (the transport's reader), or it delays the very work
// it waits for. On an idle core sched_yield returns at once.
inline void cpuRelax() { std::this_thread::yield(); }

}  // namespace

WorkerPool::WorkerPool(size_t threads, std::chrono::microseconds spin, std::function<void()> idle,
                       std::chrono::milliseconds idle_after)
    : spin_(spin), idle_(std::move(idle)), idle_after_(idle_after) {
  try {
    for (size_t i = 0; i < std::max<size_t>(threads, 1); ++i)
      threads_.emplace_back([this] { loop(); });
  } catch (...) {  // the workers started so far must end, or their join waits forever
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
      for (Sleeper* s : sleeping_) s->cv.notify_one();
    }
    threads_.clear();
    throw;
  }
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    for (Sleeper* s : sleeping_) s->cv.notify_one();
  }
  threads_.clear();  // joins
}

size_t WorkerPool::asleep() const {
  std::lock_guard lock(mu_);
  return sleeping_.size();
}

void WorkerPool::post(std::function<void()> job) {
  std::lock_guard lock(mu_);
  queue_.push_back(std::move(job));
  const size_t queued = queued_.fetch_add(1) + 1;
  // A polling worker takes a lone job without being woken: waking a sleeper as well would only
  // have it find the queue empty again, a context switch for nothing. The poller looks at the
  // queue under the lock before it sleeps, so the job cannot be missed.
  if ((queued == 1 && polling_.load()) || sleeping_.empty()) return;
  Sleeper* last = sleeping_.back();
  sleeping_.pop_back();
  last->woken = true;
  last->cv.notify_one();
}

bool WorkerPool::pollForWork() {
  bool expected = false;
  if (spin_.count() <= 0 || !polling_.compare_exchange_strong(expected, true)) return false;
  const auto deadline = std::chrono::steady_clock::now() + spin_;
  bool found = false;
  while (!found && std::chrono::steady_clock::now() < deadline) {
    for (int i = 0; i < 16 && !found; ++i) {
      found = queued_.load(std::memory_order_acquire) > 0;
      cpuRelax();
    }
  }
  polling_.store(false);
  return found;
}

void WorkerPool::loop() {
  Sleeper me;
  while (true) {
    std::function<void()> job;
    {
      std::unique_lock lock(mu_);
      if (queue_.empty() && !stopping_) {
        lock.unlock();
        pollForWork();
        lock.lock();
      }
      bool idled = !idle_;  // the idle work is done once per pause
      while (queue_.empty() && !stopping_) {
        sleeping_.push_back(&me);
        if (idled) {
          me.cv.wait(lock, [&] { return me.woken || stopping_; });
        } else if (!me.cv.wait_for(lock, idle_after_, [&] { return me.woken || stopping_; })) {
          std::erase(sleeping_, &me);  // not to be woken while it works
          lock.unlock();
          idle_();
          lock.lock();
          idled = true;
          continue;
        }
        me.woken = false;
        // Woken by stopping, or spuriously: still on the stack.
        std::erase(sleeping_, &me);
      }
      if (queue_.empty()) return;  // stopping, and nothing left to run
      job = std::move(queue_.front());
      queue_.pop_front();
      queued_.fetch_sub(1, std::memory_order_relaxed);
    }
    job();
  }
}

}  // namespace byd
