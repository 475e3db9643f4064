#pragma once
// The file masks of a namespace or container that several kernels share (a session and its
// forks; on Local, the sessions forked from one template): masks made there hold for all of
// them at once, yet each cell must run under its own call's masks (an approved cell may see
// what one allowed outright may not). Cells that want the masks in force run side by side; a
// cell that wants other masks waits until those cells have ended, then changes them.

#include <condition_variable>
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
  // Waits (until `cancel`, if given) for the cells under other masks to end, then makes `masks`
  // those in force and holds them.
  Result<Hold> hold(const FileMasks& masks, const CancelToken* cancel);
  // What holds them now (tests).
  int holders() const;

 private:
  void release();

  Apply apply_;
  mutable std::mutex mu_;
  std::condition_variable released_;
  FileMasks current_;  // none at the start
  bool known_ = true;  // false after a failed change: current_ may not be what is there
  int holders_ = 0;
};

}  // namespace byd
