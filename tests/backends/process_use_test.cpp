#include "backends/local/process_use.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace byd {
namespace {

TEST(ProcessUse, CountsAProcessAndEverythingBelowIt) {
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    setpgid(0, 0);  // a group of its own, killed whole at the end
    // A grandchild that burns a little CPU and then waits; the child waits for it.
    if (fork() == 0) {
      volatile double x = 0;
      for (int i = 0; i < 30'000'000; ++i) x = x + i;
      (void)!write(ready[1], "g", 1);
      pause();
      _exit(0);
    }
    (void)!write(ready[1], "c", 1);
    pause();
    _exit(0);
  }
  close(ready[1]);
  char got[2];
  ASSERT_EQ(read(ready[0], got, 1), 1);
  ASSERT_EQ(read(ready[0], got + 1, 1), 1);
  close(ready[0]);
  std::optional<TreeUse> use;
  for (int i = 0; i < 100; ++i) {  // the grandchild shows under the child once it is forked
    use = processTreeUse(child);
    if (use && use->processes == 2) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(use.has_value());
  EXPECT_EQ(use->processes, 2u);
  EXPECT_GT(use->rss_bytes, 0u);
  EXPECT_GT(use->cpu_seconds, 0.0) << "the grandchild's loop";
  setpgid(child, child);  // whichever of the two runs first
  kill(-child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_FALSE(processTreeUse(child).has_value());
}

}  // namespace
}  // namespace byd
