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
    if (items_.size() == limit_) {
      if (limit_ == 0 || !before_(item, items_.front())) return;
      std::pop_heap(items_.begin(), items_.end(), before_);
      items_.back() = std::move(item);
    } else {
      items_.push_back(std::move(item));
    }
    std::push_heap(items_.begin(), items_.end(), before_);
  }
  size_t seen() const { return seen_; }
  // The items kept, in order; the holder is left empty.
  std::vector<T> take() {
    std::sort_heap(items_.begin(), items_.end(), before_);
    return std::move(items_);
  }

 private:
  const size_t limit_;
  Before before_;
  std::vector<T> items_;
  size_t seen_ = 0;
};

template <typename T, typename Before>
TopN<T, Before> makeTopN(size_t limit, Before before) {
  return TopN<T, Before>(limit, std::move(before));
}

}  // namespace byd
