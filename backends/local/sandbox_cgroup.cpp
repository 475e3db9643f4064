#include "backends/local/sandbox_cgroup.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "backends/local/sandbox.h"

namespace byd {
namespace {

constexpr const char* kV1Root = "/sys/fs/cgroup";

bool writeFile(const std::string& path, const std::string& value) {
  std::ofstream out(path);
  out << value;
  out.flush();
  return static_cast<bool>(out);
}

// This process's group in a v1 hierarchy ("memory"), from /proc/self/cgroup.
std::string ownGroup(const std::string& controller) {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    if (line.substr(a + 1, b - a - 1) == controller) return line.substr(b + 1);
  }
  return "";
}

// Makes this server's parent group in `controller` and checks it can hold a child group.
std::string makeParent(const std::string& controller, const std::string& limit_file) {
  const std::string base = std::string(kV1Root) + "/" + controller;
  const std::string own = ownGroup(controller);
  if (own.empty() || access((base + "/cgroup.procs").c_str(), W_OK) != 0) return "";
  // One parent per set: two sets in one process (tests, later HTTP sessions) must not share
  // run groups.
  static std::atomic<uint64_t> instance{0};
  const std::string parent = base + (own == "/" ? "" : own) + "/backyard-mcp-" +
                             std::to_string(getpid()) + "-" + std::to_string(instance++);
  if (mkdir(parent.c_str(), 0755) != 0) return "";
  if (access((parent + "/" + limit_file).c_str(), W_OK) != 0) {
    rmdir(parent.c_str());
    return "";
  }
  return parent;
}

std::vector<pid_t> procsOf(const std::string& dir) {
  std::vector<pid_t> pids;
  std::ifstream in(dir + "/cgroup.procs");
  pid_t pid;
  while (in >> pid) pids.push_back(pid);
  return pids;
}

}  // namespace

CgroupRun::CgroupRun(const CgroupSet* owner, CgroupSlot slot)
    : owner_(owner), slot_(std::move(slot)) {}

CgroupRun::CgroupRun(CgroupRun&& other) noexcept
    : owner_(other.owner_), slot_(std::move(other.slot_)) {
  other.owner_ = nullptr;
  other.slot_ = CgroupSlot{};
}

void CgroupRun::killAll() const {
  for (const std::string& dir : slot_.dirs) {
    for (pid_t pid : procsOf(dir)) kill(pid, SIGKILL);
  }
}

CgroupRun& CgroupRun::operator=(CgroupRun&& other) noexcept {
  if (this != &other) {
    reset();
    owner_ = other.owner_;
    slot_ = std::move(other.slot_);
    other.owner_ = nullptr;
    other.slot_ = CgroupSlot{};
  }
  return *this;
}

void CgroupRun::reset() {
  if (owner_ == nullptr || slot_.dirs.empty()) return;
  // Nothing of a run may outlive its call: kill until the groups are empty (a fork loop can
  // add processes between one look and the next), for at most two seconds.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (true) {
    bool empty = true;
    for (const std::string& dir : slot_.dirs) {
      for (pid_t pid : procsOf(dir)) {
        empty = false;
        kill(pid, SIGKILL);
      }
    }
    if (empty || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  owner_->release(std::move(slot_));
  owner_ = nullptr;
  slot_ = CgroupSlot{};
}

std::unique_ptr<CgroupSet> CgroupSet::create(const SandboxLimits& limits) {
  auto set = std::make_unique<CgroupSet>();
  set->pids_max_ = limits.processes;
  set->memory_max_ = limits.memory_bytes;
  if (limits.processes > 0) set->pids_parent_ = makeParent("pids", "pids.max");
  if (limits.memory_bytes > 0) set->memory_parent_ = makeParent("memory", "memory.limit_in_bytes");
  return set;
}

CgroupSet::~CgroupSet() {
  for (Made& made : all_) {
    made.procs_fds.clear();
    for (const std::string& dir : made.dirs) {
      for (int attempt = 0; attempt < 100 && rmdir(dir.c_str()) != 0 && errno == EBUSY; ++attempt) {
        for (pid_t pid : procsOf(dir)) kill(pid, SIGKILL);
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
  }
  if (!pids_parent_.empty()) rmdir(pids_parent_.c_str());
  if (!memory_parent_.empty()) rmdir(memory_parent_.c_str());
}

void CgroupSet::release(CgroupSlot slot) const {
  std::lock_guard lock(mu_);
  free_.push_back(std::move(slot));
}

std::string CgroupSet::describe() const {
  if (limitsProcesses() && limitsMemory()) return "cgroup pids and memory";
  if (limitsProcesses()) return "cgroup pids (memory by RLIMIT_AS)";
  if (limitsMemory()) return "cgroup memory (no process limit for root)";
  return "no cgroup (memory by RLIMIT_AS, processes by RLIMIT_NPROC)";
}

CgroupSlot CgroupSet::makeSlot() const {
  CgroupSlot slot;
  Made made;
  const std::string name = "/run-" + std::to_string(next_++);
  auto add = [&](const std::string& parent, const std::string& file, uint64_t value) {
    if (parent.empty()) return;
    const std::string dir = parent + name;
    if (mkdir(dir.c_str(), 0755) != 0) return;
    UniqueFd fd(open((dir + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd.valid() || !writeFile(dir + "/" + file, std::to_string(value))) {
      rmdir(dir.c_str());
      return;
    }
    slot.dirs.push_back(dir);
    slot.procs_fds.push_back(fd.get());
    made.dirs.push_back(dir);
    made.procs_fds.push_back(std::move(fd));
  };
  add(pids_parent_, "pids.max", pids_max_);
  add(memory_parent_, "memory.limit_in_bytes", memory_max_);
  if (!made.dirs.empty()) {
    std::lock_guard lock(mu_);
    all_.push_back(std::move(made));
  }
  return slot;
}

CgroupRun CgroupSet::start() const {
  {
    std::lock_guard lock(mu_);
    // Reuse a group whose processes are all gone; one still emptying waits for a later run.
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      bool empty = true;
      for (const std::string& dir : it->dirs) empty = empty && procsOf(dir).empty();
      if (!empty) continue;
      CgroupSlot slot = std::move(*it);
      free_.erase(it);
      return CgroupRun(this, std::move(slot));
    }
  }
  CgroupSlot slot = makeSlot();
  if (slot.dirs.empty()) return CgroupRun();
  return CgroupRun(this, std::move(slot));
}

}  // namespace byd
