#include "backends/local/shared_masks.h"

#include <atomic>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace byd {
namespace {

using namespace std::chrono_literals;

const FileMasks kNone;
const FileMasks kHidden = {{FileMask::kHideFile, "/w/.env"}};
const FileMasks kWider = {{FileMask::kReadOnly, "/w/.git/config"}};

// Records each change of the masks in force.
struct Recorder {
  std::mutex mu;
  std::vector<FileMasks> applied;
  std::atomic<bool> fail{false};
  std::shared_ptr<SharedMasks> masks = std::make_shared<SharedMasks>([this](const FileMasks& m) {
    if (fail) return internalError("the namespace refused");
    std::lock_guard lock(mu);
    applied.push_back(m);
    return okStatus();
  });
  size_t changes() {
    std::lock_guard lock(mu);
    return applied.size();
  }
};

TEST(SharedMasks, CellsUnderTheMasksInForceRunSideBySideAndChangeNothing) {
  Recorder r;
  auto a = r.masks->hold(kHidden, nullptr);
  ASSERT_TRUE(a.ok()) << a.status().message();
  auto b = r.masks->hold(kHidden, nullptr);  // does not wait: the same masks
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(r.masks->holders(), 2);
  EXPECT_EQ(r.changes(), 1u);  // made once
  a->reset();
  b->reset();
  EXPECT_EQ(r.masks->holders(), 0);
  auto none = r.masks->hold(kNone, nullptr);  // back to none is a change too
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(r.changes(), 2u);
  EXPECT_EQ(r.applied.back(), kNone);
}

TEST(SharedMasks, OtherMasksWaitUntilTheCellsUnderTheseHaveEnded) {
  Recorder r;
  auto narrow = r.masks->hold(kHidden, nullptr);
  ASSERT_TRUE(narrow.ok());
  std::atomic<bool> entered{false};
  auto wide = std::async(std::launch::async, [&] {
    auto held = r.masks->hold(kWider, nullptr);
    entered = true;
    return held;
  });
  std::this_thread::sleep_for(200ms);
  EXPECT_FALSE(entered) << "the masks changed under a running cell";
  EXPECT_EQ(r.applied.back(), kHidden);
  narrow->reset();  // the cell ends
  ASSERT_EQ(wide.wait_for(5s), std::future_status::ready);
  auto held = wide.get();
  ASSERT_TRUE(held.ok());
  EXPECT_EQ(r.applied.back(), kWider);
}

TEST(SharedMasks, ACancelledWaitSaysWhyAndChangesNothing) {
  Recorder r;
  auto narrow = r.masks->hold(kHidden, nullptr);
  ASSERT_TRUE(narrow.ok());
  CancelToken cancel;
  auto wide = std::async(std::launch::async, [&] { return r.masks->hold(kWider, &cancel); });
  std::this_thread::sleep_for(100ms);
  cancel.cancel();
  ASSERT_EQ(wide.wait_for(5s), std::future_status::ready);
  auto held = wide.get();
  ASSERT_FALSE(held.ok());
  EXPECT_EQ(held.status().code(), Code::kCancelled);
  EXPECT_NE(held.status().message().find("other file rules"), std::string::npos);
  EXPECT_EQ(r.changes(), 1u);
  EXPECT_EQ(r.masks->holders(), 1);
}

TEST(SharedMasks, AFailedChangeIsAnErrorAndTheNextCellMakesThemAgain) {
  Recorder r;
  ASSERT_TRUE(r.masks->hold(kHidden, nullptr).ok());  // held and let go at once
  r.fail = true;
  auto failed = r.masks->hold(kWider, nullptr);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().message(), "the namespace refused");
  EXPECT_EQ(r.masks->holders(), 0);
  r.fail = false;
  // What is there is not known now: even the masks asked for before are made again.
  auto again = r.masks->hold(kHidden, nullptr);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(r.changes(), 2u);
  EXPECT_EQ(r.applied.back(), kHidden);
}

TEST(SharedMasks, WhileACellWaitsForOtherMasksNewcomersUnderTheseWaitTheirTurn) {
  Recorder r;
  auto first = r.masks->hold(kHidden, nullptr);
  ASSERT_TRUE(first.ok());
  auto wide = std::async(std::launch::async, [&] { return r.masks->hold(kWider, nullptr); });
  std::this_thread::sleep_for(100ms);  // it waits for `first`
  std::atomic<bool> joined{false};
  auto late = std::async(std::launch::async, [&] {
    auto held = r.masks->hold(kHidden, nullptr);  // the masks in force, but after `wide`
    joined = true;
    return held;
  });
  std::this_thread::sleep_for(200ms);
  EXPECT_FALSE(joined) << "a newcomer under the masks in force went ahead of a waiting cell";
  first->reset();
  ASSERT_EQ(wide.wait_for(5s), std::future_status::ready);
  auto w = wide.get();
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(r.applied.back(), kWider);
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(joined) << "the masks changed under a running cell";
  w->reset();
  ASSERT_EQ(late.wait_for(5s), std::future_status::ready);
  auto l = late.get();
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(r.applied.back(), kHidden);
  EXPECT_EQ(r.changes(), 3u);
}

TEST(SharedMasks, AWaitEndsAtTheCallsDeadlineAndLeavesTheLine) {
  Recorder r;
  auto narrow = r.masks->hold(kHidden, nullptr);
  ASSERT_TRUE(narrow.ok());
  auto waited = r.masks->hold(kWider, nullptr, std::chrono::steady_clock::now() + 150ms);
  ASSERT_FALSE(waited.ok());
  EXPECT_EQ(waited.status().code(), Code::kDeadlineExceeded);
  EXPECT_NE(waited.status().message().find("other file rules"), std::string::npos);
  EXPECT_EQ(r.changes(), 1u);
  // Gone from the line, it holds up no one: the masks in force are shared at once again.
  auto joined = r.masks->hold(kHidden, nullptr, std::chrono::steady_clock::now() + 1s);
  ASSERT_TRUE(joined.ok()) << joined.status().message();
  EXPECT_EQ(r.masks->holders(), 2);
}

}  // namespace
}  // namespace byd
