// A native load client for MCP servers over stdio, so that the client is not what limits the
// measured rate: spawns the server, initializes, then keeps IN_FLIGHT tools/call requests of
// one tool on one path (or pings, for TOOL "ping") pipelined until TOTAL have been answered, and
// prints
// {"calls_per_s": ..., "p50_s": ..., "p99_s": ...}. Any error answer stops it (exit 1).
//   stdio_load TOOL PATH IN_FLIGHT TOTAL -- SERVER ARGV...
// Built and run by bench/transports.py; bench only, not part of the server.

#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "load_report.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void die(const std::string& why) {
  fprintf(stderr, "stdio_load: %s\n", why.c_str());
  exit(1);
}

void writeAll(int fd, const std::string& data) {
  size_t at = 0;
  while (at < data.size()) {
    const ssize_t n = write(fd, data.data() + at, data.size() - at);
    if (n <= 0) die("the server stopped reading");
    at += n;
  }
}

// The integer id of a response line, or -1 for a line without one (a notification).
long idOf(const std::string& line) {
  const size_t at = line.find("\"id\":");
  if (at == std::string::npos) return -1;
  return strtol(line.c_str() + at + 5, nullptr, 10);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 7 || std::string(argv[5]) != "--") {
    die("usage: stdio_load TOOL PATH IN_FLIGHT TOTAL -- SERVER ARGV...");
  }
  const std::string tool = argv[1], path = argv[2];
  const long in_flight = atol(argv[3]), total = atol(argv[4]);
  if (path.find_first_of("\"\\") != std::string::npos) die("the path needs no JSON escapes");
  int to_server[2], from_server[2];
  if (pipe(to_server) != 0 || pipe(from_server) != 0) die("pipe");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, to_server[0], 0);
  posix_spawn_file_actions_adddup2(&actions, from_server[1], 1);
  posix_spawn_file_actions_addclose(&actions, to_server[1]);
  posix_spawn_file_actions_addclose(&actions, from_server[0]);
  pid_t pid;
  if (posix_spawnp(&pid, argv[6], &actions, nullptr, argv + 6, environ) != 0) die("spawn");
  close(to_server[0]);
  close(from_server[1]);
  const int out = to_server[1], in = from_server[0];

  std::string buf;
  // The next complete line from the server.
  auto readLine = [&]() -> std::string {
    while (true) {
      const size_t nl = buf.find('\n');
      if (nl != std::string::npos) {
        std::string line = buf.substr(0, nl);
        buf.erase(0, nl + 1);
        return line;
      }
      char chunk[1 << 16];
      const ssize_t n = read(in, chunk, sizeof chunk);
      if (n <= 0) die("the server closed its output");
      buf.append(chunk, n);
    }
  };
  writeAll(out,
           R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":)"
           R"("2025-06-18","capabilities":{},"clientInfo":{"name":"stdio_load","version":"1"}}})"
           "\n");
  while (idOf(readLine()) != 0) {
  }
  writeAll(out, R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
                "\n");

  const std::string head = R"({"jsonrpc":"2.0","id":)";
  // "ping" measures the protocol's floor: the same pipes and parsing, no tool and no file.
  const std::string tail = tool == "ping" ? std::string(R"(,"method":"ping"})"
                                                        "\n")
                                          : R"(,"method":"tools/call","params":{"name":")" + tool +
                                                R"(","arguments":{"path":")" + path + "\"}}}\n";
  std::unordered_map<long, Clock::time_point> sent;
  std::vector<double> latencies;
  latencies.reserve(total);
  long next = 1;
  auto send = [&]() {
    sent[next] = Clock::now();
    writeAll(out, head + std::to_string(next) + tail);
    ++next;
  };
  const auto start = Clock::now();
  while (next <= std::min(in_flight, total)) send();
  long done = 0;
  while (done < total) {
    const std::string line = readLine();
    const long id = idOf(line);
    if (id <= 0) continue;
    if (line.find("\"error\":") != std::string::npos ||
        line.find("\"isError\":true") != std::string::npos) {
      die("an error answer: " + line.substr(0, 300));
    }
    auto it = sent.find(id);
    if (it == sent.end()) die("an answer to nothing asked: " + line.substr(0, 300));
    latencies.push_back(std::chrono::duration<double>(Clock::now() - it->second).count());
    sent.erase(it);
    ++done;
    if (next <= total) send();
  }
  const double took = std::chrono::duration<double>(Clock::now() - start).count();
  close(out);
  waitpid(pid, nullptr, 0);
  printLoadReport(std::move(latencies), total, took);
  return 0;
}
