#pragma once
// The file masks of a namespace or container that several kernels share (a session and its
// forks; on Local, the sessions forked from one template): masks made there hold for all of
// them at once, yet each cell must run under its own call's masks (an approved cell may see
// what one allowed outright may not). Cells that want the masks in force run side by side; a
// cell that wants other masks waits until those cells have ended, then changes them. Callers
// that must wait are served in the order they came, and while one waits, a newcomer waits too
// (even for the masks in force), so a stream of cells under one set cannot starve another.
// Only cells are held to masks: what an earlier cell left running sees those of the cell that
// runs now.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>

#include "backends/local/file_masks.h"
#include "common/cancel.h"
#include "common/result.h"

namespace byd {

class SharedMasks : public std::enable_shared_from_this<SharedMasks> {
 public:
  // Makes `masks` those in force (an error leaves them unknown: the next cell makes them again).
  using Apply = std::function<Status(const FileMasks&)>;
  explicit SharedMasks(Apply apply) : apply_(std::move(apply)) {}

  // Held while a cell runs: the masks stay as they are until every hold on them has gone.
  using Hold = std::shared_ptr<const void>;
  using Deadline = std::chrono::steady_clock::time_point;
  // Waits (until `cancel`, if given, or `deadline`) for the cells under other masks to end, then
  // makes `masks` those in force and holds them.
  Result<Hold> hold(const FileMasks& masks, const CancelToken* cancel,
                    Deadline deadline = Deadline::max());
  // What holds them now (tests).
  int holders() const;

 private:
  void release();
  bool mayEnter(const FileMasks& masks) const {
    return holders_ == 0 || (known_ && current_ == masks);
  }

  Apply apply_;
  mutable std::mutex mu_;
  std::condition_variable released_;
  FileMasks current_;  // none at the start
  bool known_ = true;  // false after a failed change: current_ may not be what is there
  int holders_ = 0;
  std::deque<uint64_t> queue_;  // tickets of the callers that wait, first come first
  uint64_t next_ticket_ = 0;
};

}  // namespace byd
