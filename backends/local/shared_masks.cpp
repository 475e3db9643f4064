#include "backends/local/shared_masks.h"

#include <chrono>

namespace byd {

Result<SharedMasks::Hold> SharedMasks::hold(const FileMasks& masks, const CancelToken* cancel) {
  std::unique_lock lock(mu_);
  while (holders_ > 0 && !(known_ && current_ == masks)) {
    if (cancel && cancel->cancelled()) {
      return cancelled("cancelled while a cell of another session ran under other file rules");
    }
    released_.wait_for(lock, std::chrono::milliseconds(50));
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
