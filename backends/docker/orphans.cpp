#include "backends/docker/orphans.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

#include <spdlog/spdlog.h>

namespace byd::docker {

namespace {

// The machine and pid namespace this process sees: "MACHINE-ID PIDNS", or "".
std::string place() {
  std::ifstream in("/etc/machine-id");
  std::string machine;
  in >> machine;
  char ns[128];
  const ssize_t n = readlink("/proc/self/ns/pid", ns, sizeof ns - 1);
  if (machine.empty() || n <= 0) return "";
  return machine + " " + std::string(ns, n);
}

// The start time of process `pid` (clock ticks since boot), or "" when there is none.
std::string startTime(const std::string& pid) {
  std::ifstream in("/proc/" + pid + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return "";
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  for (int i = 0; i < 20 && fields >> field; ++i) {  // field 22 of stat: the 20th after ')'
  }
  return field;
}

}  // namespace

std::string ownerLabel() {
  const std::string here = place();
  if (here.empty()) return "";
  const std::string pid = std::to_string(getpid());
  return here + " " + pid + " " + startTime(pid);
}

bool ownerEnded(const std::string& label) {
  const std::string here = place();
  std::istringstream in(label);
  std::string machine, ns, pid, started;
  if (here.empty() || !(in >> machine >> ns >> pid >> started)) return false;
  if (machine + " " + ns != here) return false;
  return startTime(pid) != started;  // gone, or the pid is another process's now
}

int removeOrphans(const Client& client) {
  // filters={"label":["io.backyard-mcp.owner"]}
  auto listed = client.request(
      "GET",
      "/containers/json?all=1&filters=%7B%22label%22%3A%5B%22io.backyard-mcp.owner%22%5D%7D");
  if (!listed.ok() || !listed->is_array()) return 0;
  int removed = 0;
  for (const json& c : *listed) {
    const json labels = c.value("Labels", json::object());
    const std::string id = c.value("Id", "");
    if (!labels.is_object() || id.empty() || !ownerEnded(labels.value(kOwnerLabel, ""))) continue;
    if (client.request("DELETE", "/containers/" + id + "?force=true&v=true").ok()) {
      spdlog::info("docker: removed container {}, left by a server that ended ({})",
                   id.substr(0, 12), labels.value(kOwnerLabel, ""));
      ++removed;
    }
  }
  return removed;
}

}  // namespace byd::docker
