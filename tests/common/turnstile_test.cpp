#include "common/turnstile.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace byd {
namespace {

TEST(Turnstile, NoMoreThanTheLimitHoldATurnAtOnce) {
  Turnstile gate;
  std::atomic<int> inside{0}, most{0};
  std::vector<std::jthread> threads;
  for (int i = 0; i < 16; ++i) {
    threads.emplace_back([&] {
      for (int j = 0; j < 20; ++j) {
        Turnstile::Turn turn = gate.enter(3);
        const int now = inside.fetch_add(1) + 1;
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        inside.fetch_sub(1);
      }
    });
  }
  threads.clear();
  EXPECT_EQ(most.load(), 3);
  EXPECT_EQ(gate.waiting(), 0u);
}

TEST(Turnstile, TurnsComeInTheOrderAsked) {
  Turnstile gate;
  std::mutex mu;
  std::vector<int> order;
  std::vector<std::jthread> threads;
  {
    Turnstile::Turn first = gate.enter(1);  // holds the gate while the others line up
    for (int i = 0; i < 8; ++i) {
      threads.emplace_back([&, i] {
        Turnstile::Turn turn = gate.enter(1);
        std::lock_guard lock(mu);
        order.push_back(i);
      });
      // Each has asked before the next starts.
      while (gate.waiting() < static_cast<size_t>(i) + 2) std::this_thread::yield();
    }
  }
  threads.clear();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(Turnstile, ATurnMovedEndsOnce) {
  Turnstile gate;
  {
    Turnstile::Turn a = gate.enter(1);
    Turnstile::Turn b = std::move(a);
    EXPECT_EQ(gate.waiting(), 1u);
  }
  EXPECT_EQ(gate.waiting(), 0u);
  Turnstile::Turn again = gate.enter(1);  // would wait forever had the turn ended twice or never
  EXPECT_EQ(gate.waiting(), 1u);
}

}  // namespace
}  // namespace byd
