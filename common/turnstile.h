#pragma once
// Lets at most `limit` holders through at once, in the order they asked. For work whose
// throughput does not grow when more of it runs at once on a shared resource: 64 containers
// started together on a two-core engine were all ready only near the end (p50 26 s, the last
// 28 s), while taken a few at a time half were ready after 12.5 s and the last after 24 s.
// Thread-safe.

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace byd {

class Turnstile {
 public:
  // Held through its lifetime: a turn.
  class Turn {
   public:
    Turn(Turn&& other) noexcept : gate_(other.gate_) { other.gate_ = nullptr; }
    Turn(const Turn&) = delete;
    Turn& operator=(const Turn&) = delete;
    Turn& operator=(Turn&&) = delete;
    ~Turn() {
      if (gate_) gate_->leave();
    }

   private:
    friend class Turnstile;
    explicit Turn(Turnstile* gate) : gate_(gate) {}
    Turnstile* gate_;
  };

  // Waits until fewer than `limit` (at least one) hold a turn and every earlier caller has had
  // theirs.
  Turn enter(size_t limit) {
    std::unique_lock lock(mu_);
    const uint64_t ticket = next_++;
    cv_.wait(lock, [&] { return ticket < left_ + std::max<size_t>(limit, 1); });
    return Turn(this);
  }

  // How many hold a turn or wait for one.
  size_t waiting() const {
    std::lock_guard lock(mu_);
    return next_ - left_;
  }

 private:
  void leave() {
    std::lock_guard lock(mu_);
    ++left_;
    cv_.notify_all();
  }

  mutable std::mutex mu_;
  std::condition_variable cv_;
  uint64_t next_ = 0;  // the next caller's ticket
  uint64_t left_ = 0;  // turns ended
};

}  // namespace byd
