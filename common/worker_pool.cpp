#include "common/worker_pool.h"

#include <algorithm>
#include <system_error>

namespace byd {
namespace {

// Yields rather than spinning on `pause`: on a busy machine the poller must give its core to
// the thread that will post the next job (the transport's reader), or it delays the very work
// it waits for. On an idle core sched_yield returns at once.
inline void cpuRelax() { std::this_thread::yield(); }

}  // namespace

WorkerPool::WorkerPool(size_t threads, std::chrono::microseconds spin, std::function<void()> idle,
                       std::chrono::milliseconds idle_after, size_t keep,
                       std::chrono::milliseconds retire_after)
    : max_threads_(std::max<size_t>(threads, 1)),
      keep_(std::min(keep, max_threads_)),
      spin_(spin),
      idle_(std::move(idle)),
      idle_after_(idle_after),
      retire_after_(retire_after) {
  try {
    std::lock_guard lock(mu_);
    while (live_ < keep_) spawn(nullptr);
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
  std::list<std::jthread> threads;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    for (Sleeper* s : sleeping_) s->cv.notify_one();
    threads.swap(threads_);  // none starts once stopping_ is set
  }
  threads.clear();  // joins
}

size_t WorkerPool::asleep() const {
  std::lock_guard lock(mu_);
  return sleeping_.size();
}

size_t WorkerPool::threads() const {
  std::lock_guard lock(mu_);
  return live_;
}

void WorkerPool::spawn(std::list<std::jthread>* ended) {
  if (ended) {
    for (std::thread::id id : ended_) {
      auto it = std::find_if(threads_.begin(), threads_.end(),
                             [id](const std::jthread& t) { return t.get_id() == id; });
      if (it != threads_.end()) ended->splice(ended->end(), threads_, it);
    }
    ended_.clear();
  }
  threads_.emplace_back([this] { loop(); });
  ++live_;
}

void WorkerPool::post(std::function<void()> job) {
  std::list<std::jthread> ended;  // joined after the lock is released
  std::lock_guard lock(mu_);
  queue_.push_back(std::move(job));
  const size_t queued = queued_.fetch_add(1) + 1;
  if (!sleeping_.empty()) {
    // A polling worker takes a lone job without being woken: waking a sleeper as well would
    // only have it find the queue empty again, a context switch for nothing. The poller looks
    // at the queue under the lock before it sleeps, so the job cannot be missed.
    if (queued == 1 && polling_.load()) return;
    Sleeper* last = sleeping_.back();
    sleeping_.pop_back();
    last->woken = true;
    last->cv.notify_one();
    return;
  }
  // None sleeps: each worker not running a job (polling, starting, or between jobs) takes one
  // from the queue before it could sleep. A job beyond those needs a new worker, if one may
  // start; otherwise it waits for a job to end.
  if (queue_.size() <= live_ - running_ || live_ >= max_threads_ || stopping_) return;
  try {
    spawn(&ended);
  } catch (const std::system_error&) {
    if (live_ > 0) return;  // the workers there are take it in turn
    queue_.pop_back();
    queued_.fetch_sub(1);
    throw;
  }
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
  bool ran = false;  // a job of this worker's has just ended
  while (true) {
    std::function<void()> job;
    {
      std::unique_lock lock(mu_);
      if (ran) --running_;
      ran = false;
      if (queue_.empty() && !stopping_) {
        lock.unlock();
        pollForWork();
        lock.lock();
      }
      bool idled = !idle_;  // the idle work is done once per pause
      while (queue_.empty() && !stopping_) {
        sleeping_.push_back(&me);
        bool woken;
        if (!idled) {
          woken = me.cv.wait_for(lock, idle_after_, [&] { return me.woken || stopping_; });
        } else if (live_ > keep_) {
          woken = me.cv.wait_for(lock, retire_after_, [&] { return me.woken || stopping_; });
        } else {
          me.cv.wait(lock, [&] { return me.woken || stopping_; });
          woken = true;
        }
        if (!woken) {
          std::erase(sleeping_, &me);  // not to be woken while it works, or once it has ended
          if (!idled) {
            lock.unlock();
            idle_();
            lock.lock();
            idled = true;
          } else if (live_ > keep_ && queue_.empty()) {
            --live_;  // retires: the next worker to start, or the destructor, joins it
            ended_.push_back(std::this_thread::get_id());
            return;
          }
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
      ++running_;
      ran = true;
    }
    job();
  }
}

}  // namespace byd
