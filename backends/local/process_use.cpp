#include "backends/local/process_use.h"

#include <dirent.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace byd {
namespace {

// Adds `pid`'s use to `use`; false when it is gone.
bool addOne(pid_t pid, TreeUse& use) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(in, text)) return false;
  const size_t paren = text.rfind(')');
  if (paren == std::string::npos) return false;
  std::istringstream fields(text.substr(paren + 2));
  // From field 3 (state): utime is the 12th after it, then stime, cutime, cstime; rss the 22nd.
  std::vector<std::string> f;
  for (std::string word; fields >> word && f.size() < 22;) f.push_back(word);
  if (f.size() < 22) return false;
  static const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  static const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  double cpu = 0;
  for (size_t i = 11; i <= 14; ++i) cpu += std::stod(f[i]);
  use.cpu_seconds += cpu / ticks;
  use.rss_bytes += std::stoull(f[21]) * page;
  ++use.processes;
  return true;
}

// The children of every thread of `pid`.
std::vector<pid_t> childrenOf(pid_t pid) {
  std::vector<pid_t> out;
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  DIR* dir = opendir(tasks.c_str());
  if (dir == nullptr) return out;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::ifstream in(tasks + "/" + e->d_name + "/children");
    for (pid_t child; in >> child;) out.push_back(child);
  }
  closedir(dir);
  return out;
}

}  // namespace

std::optional<TreeUse> processTreeUse(pid_t root) {
  TreeUse use;
  try {
    if (!addOne(root, use)) return std::nullopt;
    std::vector<pid_t> todo = childrenOf(root);
    while (!todo.empty() && use.processes < 100000) {
      const pid_t pid = todo.back();
      todo.pop_back();
      if (!addOne(pid, use)) continue;  // gone meanwhile
      for (pid_t child : childrenOf(pid)) todo.push_back(child);
    }
  } catch (const std::exception&) {  // a malformed number: the process changed under us
    return std::nullopt;
  }
  return use;
}

}  // namespace byd
