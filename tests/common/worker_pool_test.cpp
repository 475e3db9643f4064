#include "common/worker_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <latch>
#include <mutex>
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
  // Two jobs that each wait (a while at most) for the other: each sees the other only if they
  // run at the same time.
  WorkerPool pool(2);
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0, finished = 0, met = 0;
  for (int i = 0; i < 2; ++i) {
    pool.post([&] {
      std::unique_lock lock(mu);
      ++arrived;
      cv.notify_all();
      if (cv.wait_for(lock, std::chrono::seconds(10), [&] { return arrived == 2; })) ++met;
      ++finished;
      cv.notify_all();
    });
  }
  std::unique_lock lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return finished == 2; }));
  EXPECT_EQ(met, 2);
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
