#pragma once
// Per-run control groups for the sandbox: a pids group (so a fork bomb stops at the limit,
// which RLIMIT_NPROC cannot do for root) and a memory group, each made under a parent group
// of this server where the cgroup v1 hierarchy lets it. Where it does not, describe() says so
// and the sandbox falls back to rlimits. Thread-safe.

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"

namespace byd {

struct SandboxLimits;

class CgroupSet;

// The groups of one run (a pids group and a memory group, either may be missing).
struct CgroupSlot {
  std::vector<std::string> dirs;
  std::vector<int> procs_fds;  // open cgroup.procs files, one per dir; the set owns them
};

// One run's groups. The child joins them by writing "0" into the open cgroup.procs files
// (async-signal-safe, between fork and exec); destruction kills what is left and hands the
// groups back to the set for the next run (making and removing groups costs milliseconds).
class CgroupRun {
 public:
  CgroupRun() = default;
  CgroupRun(const CgroupSet* owner, CgroupSlot slot);
  CgroupRun(CgroupRun&& other) noexcept;
  CgroupRun& operator=(CgroupRun&& other) noexcept;
  ~CgroupRun() { reset(); }
  // Empties the groups (kills what is left) and gives them back; the run then holds none.
  void reset();

  const std::vector<int>& procsFds() const { return slot_.procs_fds; }
  // SIGKILLs every process still in the groups.
  void killAll() const;

 private:
  const CgroupSet* owner_ = nullptr;
  CgroupSlot slot_;
};

class CgroupSet {
 public:
  static std::unique_ptr<CgroupSet> create(const SandboxLimits& limits);
  ~CgroupSet();

  std::string describe() const;
  bool limitsMemory() const { return !memory_parent_.empty(); }
  bool limitsProcesses() const { return !pids_parent_.empty(); }
  CgroupRun start() const;

 private:
  friend class CgroupRun;
  void release(CgroupSlot slot) const;
  CgroupSlot makeSlot() const;

  std::string pids_parent_, memory_parent_;
  uint64_t pids_max_ = 0, memory_max_ = 0;
  mutable std::atomic<uint64_t> next_{0};
  mutable std::mutex mu_;
  mutable std::vector<CgroupSlot> free_;  // emptied groups, ready for the next run
  struct Made {
    std::vector<std::string> dirs;
    std::vector<UniqueFd> procs_fds;
  };
  mutable std::vector<Made> all_;  // every group made, removed at destruction
};

}  // namespace byd
