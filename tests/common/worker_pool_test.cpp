#include "common/worker_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <future>
#include <latch>
#include <mutex>
#include <set>
#include <thread>

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

TEST(WorkerPool, OneJobAfterAnotherIsServedByTheWorkerThatSleptLast) {
  WorkerPool pool(4, std::chrono::microseconds(0));  // no polling: every job wakes a sleeper
  std::set<std::thread::id> served;
  const auto allAsleep = [&pool] {
    while (pool.asleep() < 4) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  };
  for (int i = 0; i < 20; ++i) {
    allAsleep();  // the worker that ran the last job has gone back to sleep, on top
    std::promise<std::thread::id> ran;
    auto id = ran.get_future();
    pool.post([&ran] { ran.set_value(std::this_thread::get_id()); });
    served.insert(id.get());
  }
  // The first job may find any worker; from then on, the one that just slept is woken.
  EXPECT_LE(served.size(), 2u);
}

TEST(WorkerPool, AnIdleWorkerRunsTheIdleWorkOncePerPause) {
  std::atomic<int> idled{0}, done{0};
  WorkerPool pool(
      2, std::chrono::microseconds(0), [&] { idled.fetch_add(1); }, std::chrono::milliseconds(50));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const int first = idled.load();
  EXPECT_EQ(first, 2);  // each worker, once: not every 50 ms
  pool.post([&] { done.fetch_add(1); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(done.load(), 1);
  EXPECT_EQ(idled.load(), first + 1);  // the worker that ran the job paused again
}

// Waits (10 s at most) until `done` holds; true if it came to.
template <typename F>
bool eventually(F done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

TEST(WorkerPool, StartsWorkersOnlyForJobsThatWaitAndRetiresThemOnceIdle) {
  std::atomic<int> idled{0};
  WorkerPool pool(
      4, std::chrono::microseconds(0), [&] { idled.fetch_add(1); }, std::chrono::milliseconds(20),
      /*keep=*/1, /*retire_after=*/std::chrono::milliseconds(50));
  EXPECT_EQ(pool.threads(), 1u);
  // One job after another: the one worker serves them all.
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(eventually([&] { return pool.asleep() == pool.threads(); }));
    std::promise<void> ran;
    pool.post([&ran] { ran.set_value(); });
    ran.get_future().wait();
  }
  ASSERT_TRUE(eventually([&] { return pool.asleep() == 1; }));
  EXPECT_EQ(pool.threads(), 1u);
  // Six jobs that all wait for each other as far as they can: four run at once, on four
  // workers, and the other two wait for them; no fifth worker starts.
  std::mutex mu;
  std::condition_variable cv;
  int running = 0, most = 0, finished = 0;
  bool release = false;
  for (int i = 0; i < 6; ++i) {
    pool.post([&] {
      std::unique_lock lock(mu);
      most = std::max(most, ++running);
      cv.notify_all();
      cv.wait_for(lock, std::chrono::seconds(10), [&] { return release; });
      --running;
      ++finished;
      cv.notify_all();
    });
  }
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return running == 4; }));
    EXPECT_EQ(pool.threads(), 4u);
    release = true;
    cv.notify_all();
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return finished == 6; }));
  }
  EXPECT_EQ(most, 4);
  // Once idle (and after their idle work), the three beyond the one kept end.
  ASSERT_TRUE(eventually([&] { return pool.threads() == 1; })) << pool.threads();
  EXPECT_GE(idled.load(), 4);
  // A later job starts what it needs again.
  std::promise<void> ran;
  pool.post([&ran] { ran.set_value(); });
  EXPECT_EQ(ran.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
}

TEST(WorkerPool, APoolThatKeepsNoneStillRunsEveryJob) {
  std::atomic<int> done{0};
  {
    WorkerPool pool(2, std::chrono::microseconds(0), nullptr, std::chrono::milliseconds(1000), 0,
                    std::chrono::milliseconds(1));
    for (int round = 0; round < 5; ++round) {
      for (int i = 0; i < 50; ++i) pool.post([&] { done.fetch_add(1); });
      ASSERT_TRUE(eventually([&] { return pool.threads() == 0; })) << pool.threads();
    }
    EXPECT_EQ(done.load(), 250);
    pool.post([&] { done.fetch_add(1); });  // run by the destructor's time
  }
  EXPECT_EQ(done.load(), 251);
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
