#pragma once
// What a process and everything below it use, from /proc: resident memory (each process's
// RSS, summed: shared pages count once per process) and CPU time (each live process's own and
// that of the children it has reaped, so every process that ran below the root counts once,
// the dead through their reapers). Linux only; thread-safe.

#include <sys/types.h>

#include <cstdint>
#include <optional>

namespace byd {

struct TreeUse {
  uint64_t rss_bytes = 0;
  double cpu_seconds = 0;
  size_t processes = 0;
};

// None when `root` is gone.
std::optional<TreeUse> processTreeUse(pid_t root);

}  // namespace byd
