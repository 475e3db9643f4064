#include "common/worker_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <latch>
#include <set>

namespace byd {
namespace {

TEST(WorkerPool, RunsEveryJobBeforeDestruction) {
  std::atomic<int> done{0};
  {
    WorkerPool pool(3);
    for (int i = 0; i < 1000; ++i) pool.post([&] { done.fetch_add(1); });
  }
  EXPECT_EQ(done.load(), 1000);
}

TEST(WorkerPool, JobsRunConcurrently) {
  // Two jobs that each wait for the other can only finish if they run at the same time.
  WorkerPool pool(2);
  std::latch both(2);
  std::latch finished(2);
  for (int i = 0; i < 2; ++i) {
    pool.post([&] {
      both.arrive_and_wait();
      finished.count_down();
    });
  }
  finished.wait();
  SUCCEED();
}

TEST(WorkerPool, SingleThreadRunsInPostOrder) {
  std::vector<int> order;
  {
    WorkerPool pool(1);
    for (int i = 0; i < 100; ++i) pool.post([&order, i] { order.push_back(i); });
  }
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[i], i);
}

TEST(WorkerPool, WithoutPollingStillRunsJobs) {
  std::atomic<int> done{0};
  {
    WorkerPool pool(2, std::chrono::microseconds(0));
    for (int i = 0; i < 100; ++i) pool.post([&] { done.fetch_add(1); });
  }
  EXPECT_EQ(done.load(), 100);
}

TEST(WorkerPool, JobsPostedFromJobsRun) {
  std::atomic<int> done{0};
  {
    WorkerPool pool(2);
    std::latch posted(1);
    pool.post([&] {
      pool.post([&] { done.fetch_add(1); });
      posted.count_down();
    });
    posted.wait();
  }
  EXPECT_EQ(done.load(), 1);
}

}  // namespace
}  // namespace byd
