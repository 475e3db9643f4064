#pragma once
// A cancellation flag shared between the dispatcher (which sets it when the client sends
// notifications/cancelled) and the work it started (which polls it). Copies share one flag;
// safe across threads.

#include <atomic>
#include <memory>

namespace byd {

class CancelToken {
 public:
  CancelToken() : flag_(std::make_shared<std::atomic<bool>>(false)) {}
  void cancel() const { flag_->store(true, std::memory_order_relaxed); }
  bool cancelled() const { return flag_->load(std::memory_order_relaxed); }

 private:
  std::shared_ptr<std::atomic<bool>> flag_;
};

}  // namespace byd
