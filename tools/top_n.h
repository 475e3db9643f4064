#pragma once
// The first `limit` items of a stream in the order `before` (the newest files, the first names),
// kept in a heap of that size whose top is the last one kept: memory stays bounded however many
// items pass, and all of them are counted. Not thread-safe.

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace byd {

template <typename T, typename Before>
class TopN {
 public:
  TopN(size_t limit, Before before) : limit_(limit), before_(std::move(before)) {}

  void offer(T item) {
    ++seen_;
    // Below the limit the items are only gathered (and sorted once, by take()); a heap is
    // made when the limit is reached, and kept from then on.
    if (items_.size() < limit_) {
      items_.push_back(std::move(item));
      return;
    }
    if (limit_ == 0) return;
    if (!heap_) {
      std::make_heap(items_.begin(), items_.end(), before_);
      heap_ = true;
    }
    if (!before_(item, items_.front())) return;
    std::pop_heap(items_.begin(), items_.end(), before_);
    items_.back() = std::move(item);
    std::push_heap(items_.begin(), items_.end(), before_);
  }
  size_t seen() const { return seen_; }
  // The items kept, in order; the holder is left empty.
  std::vector<T> take() {
    if (heap_) {
      std::sort_heap(items_.begin(), items_.end(), before_);
    } else if (!std::is_sorted(items_.begin(), items_.end(), before_)) {
      // A listing held in memory comes sorted by name: one pass finds it so.
      std::sort(items_.begin(), items_.end(), before_);
    }
    return std::move(items_);
  }

 private:
  const size_t limit_;
  Before before_;
  std::vector<T> items_;
  size_t seen_ = 0;
  bool heap_ = false;
};

template <typename T, typename Before>
TopN<T, Before> makeTopN(size_t limit, Before before) {
  return TopN<T, Before>(limit, std::move(before));
}

}  // namespace byd
