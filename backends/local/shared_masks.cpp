#include "backends/local/shared_masks.h"

#include <algorithm>
#include <chrono>

namespace byd {

Result<SharedMasks::Hold> SharedMasks::hold(const FileMasks& masks, const CancelToken* cancel,
                                            Deadline deadline) {
  std::unique_lock lock(mu_);
  if (!queue_.empty() || !mayEnter(masks)) {
    const uint64_t ticket = next_ticket_++;
    queue_.push_back(ticket);
    auto leave = [&] {
      queue_.erase(std::find(queue_.begin(), queue_.end(), ticket));
      released_.notify_all();  // the next in line may be able to enter now
    };
    while (queue_.front() != ticket || !mayEnter(masks)) {
      if (cancel && cancel->cancelled()) {
        leave();
        return cancelled("cancelled while a cell of another session ran under other file rules");
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        leave();
        return Status{Code::kDeadlineExceeded,
                      "timed out waiting for a cell of another session, which runs under other "
                      "file rules, to end"};
      }
      released_.wait_until(lock, std::min(deadline, std::chrono::steady_clock::now() +
                                                        std::chrono::milliseconds(50)));
    }
    leave();
  }
  if (!known_ || current_ != masks) {
    known_ = false;
    BYD_RETURN_IF_ERROR(apply_(masks));
    current_ = masks;
    known_ = true;
  }
  ++holders_;
  auto self = shared_from_this();
  return Hold(self.get(), [self](const void*) { self->release(); });
}

int SharedMasks::holders() const {
  std::lock_guard lock(mu_);
  return holders_;
}

void SharedMasks::release() {
  std::lock_guard lock(mu_);
  if (--holders_ == 0) released_.notify_all();
}

}  // namespace byd
