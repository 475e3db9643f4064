#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "backends/local/local_backend.h"
#include "backends/local/sandbox.h"
#include "common/unique_fd.h"
#include "schemas/validator.h"
#include "tests/test_util.h"
#include "tools/registry.h"

namespace byd::testing {
namespace {

using nlohmann::json;

// The execute tool on a Local backend with the real sandbox: what the sandbox itself promises
// (namespaces, privileges, limits). The contract every backend shares is in
// command_contract_test.cpp.
class ExecuteTest : public ::testing::Test {
 protected:
  void SetUp() override { makeBackend(SandboxLimits{}); }

  void makeBackend(SandboxLimits limits) {
    auto local = LocalBackend::open(tmp_.str(), {});
    ASSERT_TRUE(local.ok()) << local.status().toString();
    SandboxOptions options;
    options.limits = limits;
    auto sandbox = Sandbox::create((*local)->writableDirs(), options);
    ASSERT_TRUE(sandbox.ok()) << sandbox.status().toString();
    (*local)->setSandbox(std::move(*sandbox));
    backend_ = std::move(*local);
  }

  json run(json args) {
    const Tool* tool = findTool("execute");
    EXPECT_NE(tool, nullptr);
    ToolContext ctx{*backend_, limits_, cancel_};
    json r = callTool(*tool, args, ctx, true);
    if (!r.value("isError", false)) {
      Status s = schemas::validate(*tool->output_schema, r["structuredContent"], "output");
      EXPECT_TRUE(s.ok()) << s.message();
    }
    return r;
  }
  json sc(json args) { return run(std::move(args))["structuredContent"]; }

  TempDir tmp_;
  std::unique_ptr<LocalBackend> backend_;
  Limits limits_;
  CancelToken cancel_;
};

TEST_F(ExecuteTest, ATimeoutAboveTheServerLimitIsRefusedNamingIt) {
  limits_.max_timeout_s = 1;
  json r = run({{"command", "touch ran"}, {"timeout_s", 600}});
  EXPECT_EQ(r.value("isError", false), true);
  const std::string text = r["content"][0].value("text", "");
  EXPECT_NE(text.find("timeout_s 600 is above the limit of 1 s (this server's --max-timeout)"),
            std::string::npos)
      << text;
  EXPECT_FALSE(std::filesystem::exists(tmp_.str() + "/ran"));  // refused before running
  // Without timeout_s, the default is held to the limit, and the limit still kills.
  json s = sc({{"command", "sleep 30"}});
  EXPECT_EQ(s["timed_out"], true);
  s = sc({{"command", "sleep 30"}, {"timeout_s", 1}});
  EXPECT_EQ(s["timed_out"], true);
}

TEST_F(ExecuteTest, NoNetwork) {
  // A server of the host's on 127.0.0.2 stands for the internet: nothing leaves the machine
  // even if isolation broke. Inside, 127.0.0.2 is the sandbox's own loopback, and no route
  // leads anywhere else.
  LoopbackListener host;
  json s = sc({{"command",
                "python3 -c \"import socket; s=socket.socket(); s.settimeout(2); "
                "s.connect(('127.0.0.2', " +
                    std::to_string(host.port()) +
                    "))\" 2>&1 | tail -1; "
                    "python3 -c \"import socket; s=socket.socket(socket.AF_INET6); "
                    "s.settimeout(2); s.connect(('::1', 22))\" 2>&1 | tail -1; "
                    "echo routes $(tail -n +2 /proc/net/route | wc -l); "
                    "cat /proc/net/dev | tail -n +3 | cut -d: -f1"}});
  const std::string out = s["stdout"];
  EXPECT_FALSE(host.reached());
  // Both attempts met the sandbox's own loopback, where nothing listens.
  const size_t first = out.find("ConnectionRefusedError");
  ASSERT_NE(first, std::string::npos) << out;
  EXPECT_NE(out.find("ConnectionRefusedError", first + 1), std::string::npos) << out;
  EXPECT_NE(out.find("routes 0"), std::string::npos) << out;  // no way out
  EXPECT_NE(out.find("lo"), std::string::npos);
  EXPECT_EQ(out.find("eth"), std::string::npos) << out;
}

TEST_F(ExecuteTest, SystemIsReadOnlyAndPrivateThingsAbsent) {
  // The server's environment must not be readable from any process the sandbox shows.
  setenv("BYD_TEST_SECRET", "1", 1);
  makeBackend(SandboxLimits{});
  const std::string server_pid = std::to_string(getpid());
  json s = sc({{"command", "touch /etc/x /usr/x /byd-escape 2>&1 | wc -l; touch " +
                               tmp_.path().parent_path().string() +
                               "/byd-escape; ls /root /home 2>&1 | wc -l; "
                               "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | "
                               "grep -c BYD_TEST_SECRET; test -e /proc/" +
                               server_pid + "/environ && echo server-visible"}});
  unsetenv("BYD_TEST_SECRET");
  EXPECT_EQ(s["stdout"], "3\n2\n0\n") << s.dump();
  EXPECT_FALSE(std::filesystem::exists(tmp_.path().parent_path() / "byd-escape"));
}

TEST_F(ExecuteTest, DevicesKeepTheirModesAndDevGetsNothingNew) {
  struct stat before;
  ASSERT_EQ(::stat("/dev/null", &before), 0);
  json s = sc({{"command",
                "chmod 600 /dev/null /dev/zero 2>/dev/null || echo no-chmod; "
                "touch /dev/x 2>/dev/null || echo no-touch; echo hi > /dev/null && echo writes; "
                "head -c 4 /dev/urandom | wc -c; echo shm > /dev/shm/s && cat /dev/shm/s"}});
  EXPECT_EQ(s["stdout"], "no-chmod\nno-touch\nwrites\n4\nshm\n") << s.dump();
  struct stat after;
  ASSERT_EQ(::stat("/dev/null", &after), 0);
  EXPECT_EQ(after.st_mode, before.st_mode);
  EXPECT_FALSE(std::filesystem::exists("/dev/x"));
}

TEST_F(ExecuteTest, LandlockConfinesWritesWhereMountsAllowThem) {
  if (syscall(SYS_landlock_create_ruleset, nullptr, 0, 1U) < 1) {
    GTEST_SKIP() << "this kernel has no Landlock";
  }
  // procfs is writable by mount, but not a place Landlock lets a command write.
  json s = sc({{"command",
                "echo 500 > /proc/self/oom_score_adj 2>/dev/null || echo refused; "
                "echo ok > landlock-ok && cat landlock-ok"}});
  EXPECT_EQ(s["stdout"], "refused\nok\n") << s.dump();
}

TEST_F(ExecuteTest, NoPrivileges) {
  json s =
      sc({{"command",
           "grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status; "
           "mount -t tmpfs none /tmp 2>/dev/null && echo mounted; "
           "python3 -c \"import ctypes; print('ptrace', ctypes.CDLL(None).ptrace(0, 0, 0, 0))\"; "
           "python3 -c \"import fcntl, termios; fcntl.ioctl(1, termios.TIOCSTI, b'x')\" 2>&1 | "
           "tail -1"}});
  const std::string out = s["stdout"];
  EXPECT_NE(out.find("CapEff:\t0000000000000000"), std::string::npos) << out;
  EXPECT_NE(out.find("NoNewPrivs:\t1"), std::string::npos) << out;
  EXPECT_NE(out.find("Seccomp:\t2"), std::string::npos) << out;
  EXPECT_EQ(out.find("mounted"), std::string::npos) << out;
  EXPECT_NE(out.find("ptrace -1"), std::string::npos) << out;
  EXPECT_NE(out.find("Operation not permitted"), std::string::npos) << out;  // TIOCSTI
}

TEST_F(ExecuteTest, SetuidRootCopyDoesNotElevate) {
  // A setuid-root copy of cat, left in the workspace by the host: run inside, it has no
  // capability and no other identity than the command's.
  const std::filesystem::path copy = tmp_.path() / "cat-setuid";
  std::filesystem::copy_file("/usr/bin/cat", copy);
  ASSERT_EQ(chmod(copy.c_str(), 04755), 0);
  json s = sc({{"command", "./cat-setuid /proc/self/status | grep -E '^(Uid|CapEff):'"}});
  EXPECT_EQ(s["stdout"], "Uid:\t1000\t1000\t1000\t1000\nCapEff:\t0000000000000000\n") << s.dump();
}

TEST_F(ExecuteTest, SymlinkToShadowCannotBeRead) {
  std::filesystem::create_symlink("/etc/shadow", tmp_.path() / "shadow");
  json s = sc({{"command", "cat shadow"}});
  EXPECT_NE(s["exit_code"], 0);
  EXPECT_EQ(s["stdout"], "");
}

TEST_F(ExecuteTest, ForkBombIsContained) {
  SandboxLimits limits;
  limits.processes = 64;
  makeBackend(limits);
  // Forking stops at the limit (EAGAIN), and nothing forked outlives the call.
  json s = sc({{"command",
                "python3 -c \"import os, time\nn = 0\nfor i in range(200):\n"
                "    try:\n        pid = os.fork()\n    except OSError:\n        break\n"
                "    if pid == 0:\n        time.sleep(995)\n        os._exit(0)\n"
                "    n += 1\nprint(n)\" marker995"},
               {"timeout_s", 20}});
  const int forked = std::stoi(s["stdout"].get<std::string>());
  EXPECT_GT(forked, 10);
  EXPECT_LT(forked, 64);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_NE(system("pgrep -f 'marke[r]995' >/dev/null"), 0) << "processes outlived the sandbox";
  const auto start = std::chrono::steady_clock::now();
  json bomb = sc({{"command", "bash -c ':(){ :|:& };: # bomb993'; sleep 1"}, {"timeout_s", 3}});
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 8.0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_NE(system("pgrep -f 'bom[b]993' >/dev/null"), 0) << "the fork bomb outlived the sandbox";
}

TEST_F(ExecuteTest, FileSizeLimitStopsAHugeWrite) {
  SandboxLimits limits;
  limits.file_size_bytes = 8 << 20;
  makeBackend(limits);
  json s =
      sc({{"command", "dd if=/dev/zero of=big bs=1M count=10240 2>/dev/null"}, {"timeout_s", 30}});
  EXPECT_EQ(s["exit_code"], 128 + SIGXFSZ);
  EXPECT_LE(std::filesystem::file_size(tmp_.path() / "big"), uint64_t{8} << 20);
}

TEST_F(ExecuteTest, MemoryLimit) {
  SandboxLimits limits;
  limits.memory_bytes = 256 << 20;
  makeBackend(limits);
  json s = sc({{"command", "python3 -c \"x = bytearray(16 * 1024**3)\" 2>&1 | tail -1"}});
  EXPECT_NE(s["stdout"].get<std::string>().find("MemoryError"), std::string::npos) << s.dump();
}

TEST_F(ExecuteTest, EachCommandHasItsOwnTmpAndProcesses) {
  json first = sc({{"command", "echo x > /tmp/left-behind; sleep 30 & echo $$"}});
  EXPECT_EQ(first["stdout"], "2\n");  // the command is process 2 of its own pid namespace
  // ps runs alone (in a pipeline, a stage not yet exec'd would show as bash).
  json second = sc({{"command",
                     "test -e /tmp/left-behind && echo left; ps -e -o comm= > /tmp/ps; "
                     "sort /tmp/ps | tr '\\n' ' '"}});
  // Nothing of the first command: neither its file nor its background sleep.
  EXPECT_EQ(second["stdout"], "bash ps sandbox-helper ") << second.dump();
}

// The pids of this process's descendants whose command line contains `needle`.
// A /proc file's text, or "" when its process has gone meanwhile (a read then fails with
// ESRCH, which an ifstream would throw for).
std::string procFile(const std::string& path) {
  const UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  std::string text;
  char buf[4096];
  ssize_t n;
  while (fd.valid() && (n = read(fd.get(), buf, sizeof buf)) > 0) text.append(buf, n);
  return text;
}

std::vector<pid_t> descendantsMatching(const std::string& needle) {
  std::vector<pid_t> found;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string cmdline = procFile(entry.path() / "cmdline");
    if (cmdline.find(needle) == std::string::npos) continue;
    for (pid_t p = std::stoi(name); p > 1;) {  // walk up to this process
      const std::string line = procFile("/proc/" + std::to_string(p) + "/stat");
      const size_t close = line.rfind(')');
      if (close == std::string::npos) break;
      p = std::stoi(line.substr(close + 4));
      if (p == getpid()) {
        found.push_back(std::stoi(name));
        break;
      }
    }
  }
  return found;
}

TEST_F(ExecuteTest, ANewLauncherReplacesADeadOne) {
  EXPECT_EQ(sc({{"command", "echo before"}})["stdout"], "before\n");
  const std::vector<pid_t> helpers = descendantsMatching("--sandbox-helper");
  ASSERT_FALSE(helpers.empty());
  for (pid_t pid : helpers) kill(pid, SIGKILL);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(sc({{"command", "echo after"}})["stdout"], "after\n");
  EXPECT_FALSE(descendantsMatching("--sandbox-helper").empty());
}

// A launcher that dies with a request queued is noticed at once (its pidfd), and the command
// goes to a new one; a launcher that lives but is slow is waited for instead.
TEST_F(ExecuteTest, ALauncherThatDiesWhileARequestWaitsIsReplacedAtOnce) {
  EXPECT_EQ(sc({{"command", "echo before"}})["stdout"], "before\n");
  const std::vector<pid_t> helpers = descendantsMatching("--sandbox-helper");
  ASSERT_FALSE(helpers.empty());
  for (pid_t pid : helpers) kill(pid, SIGSTOP);  // busy: the request waits in its socket
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    for (pid_t pid : helpers) kill(pid, SIGKILL);
  });
  const auto started = std::chrono::steady_clock::now();
  json r = sc({{"command", "echo queued"}});
  const auto took = std::chrono::steady_clock::now() - started;
  killer.join();
  EXPECT_EQ(r["stdout"], "queued\n");
  // Far below the wait for a helper that lives (a minute), and the old fixed 10 s.
  EXPECT_LT(took, std::chrono::seconds(5));
  EXPECT_EQ(sc({{"command", "echo after"}})["stdout"], "after\n");
}

}  // namespace
}  // namespace byd::testing
