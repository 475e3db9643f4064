// The contract of execute and run_python, run against every backend that executes: Local with
// its sandbox, Local with plain processes (--sandbox none or container: what backyard-mcp runs
// as inside a container or pod that is already the boundary), the same reached as --backend remote
// reaches a backyard-mcp service (over HTTP, through the remote client), and Docker under runc and
// under runsc (gVisor) against a real engine. The Docker cases need BYD_DOCKER_TESTS=1 (the test
// command sets the engine and the image up, then sets it) and skip otherwise; BYD_DOCKER_IMAGE
// names the image.

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <thread>

#include "backends/docker/docker_backend.h"
#include "backends/local/local_backend.h"
#include "backends/local/sandbox.h"
#include "schemas/validator.h"
#include "tests/remote_service.h"
#include "tests/test_util.h"
#include "tools/registry.h"

namespace byd::testing {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

enum class Where { kLocal, kLocalPlain, kRemote, kDockerRunc, kDockerRunsc };

std::string whereName(const ::testing::TestParamInfo<Where>& info) {
  return info.param == Where::kLocal        ? "Local"
         : info.param == Where::kLocalPlain ? "LocalPlain"
         : info.param == Where::kRemote     ? "Remote"
         : info.param == Where::kDockerRunc ? "DockerRunc"
                                            : "DockerRunsc";
}

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

class CommandContractTest : public ::testing::TestWithParam<Where> {
 protected:
  void SetUp() override {
    if (onHost()) {
      auto local = LocalBackend::open(tmp_.str(), {});
      ASSERT_TRUE(local.ok()) << local.status().toString();
      SandboxOptions options;
      options.isolate = GetParam() != Where::kLocalPlain;
      options.container = !options.isolate;
      auto sandbox = Sandbox::create((*local)->writableDirs(), options);
      ASSERT_TRUE(sandbox.ok()) << sandbox.status().toString();
      (*local)->setSandbox(std::move(*sandbox), "", PythonOptions{});
      backend_ = std::move(*local);
      return;
    }
    const char* on = getenv("BYD_DOCKER_TESTS");
    if (on == nullptr || std::string(on) != "1") {
      GTEST_SKIP() << "no Docker engine set up for tests (BYD_DOCKER_TESTS=1 is not set)";
    }
    // The workspace belongs to the container's user, as a real session's does.
    ASSERT_EQ(chown(tmp_.str().c_str(), kDedicatedSandboxUid, kDedicatedSandboxUid), 0);
    DockerOptions options;
    const char* image = getenv("BYD_DOCKER_IMAGE");
    options.image = image ? image : "backyard-mcp/python:bookworm";
    options.runtime = GetParam() == Where::kDockerRunc ? "runc" : "runsc";
    if (const char* host = getenv("DOCKER_HOST")) options.host = host;  // Podman's, say
    auto docker = DockerBackend::open(tmp_.str(), options);
    ASSERT_TRUE(docker.ok()) << docker.status().toString();
    backend_ = std::move(*docker);
  }

  bool onHost() const {
    return GetParam() == Where::kLocal || GetParam() == Where::kLocalPlain ||
           GetParam() == Where::kRemote;
  }
  json call(const std::string& name, const json& args, ToolContext* context = nullptr) {
    const Tool* tool = findTool(name);
    EXPECT_NE(tool, nullptr) << name;
    ToolContext own{*backend_, limits_, cancel_};
    json r = invoke(*tool, args, context ? *context : own);
    if (r.contains("structuredContent")) {
      Status s = schemas::validate(*tool->output_schema, r["structuredContent"], "output");
      EXPECT_TRUE(s.ok()) << s.message();
    }
    return r;
  }
  // The tool called here, or through the remote service.
  json invoke(const Tool& tool, const json& args, ToolContext& ctx) {
    if (GetParam() == Where::kRemote) {
      std::call_once(remote_started_, [this] {
        // Started on first use: with the limits the test has set by then.
        remote_ = std::make_unique<RemoteService>(*backend_, limits_);
        EXPECT_TRUE(remote_->bound().ok()) << remote_->bound().toString();
      });
      return remote_->call(std::string(tool.spec->name), args, ctx, true);
    }
    return callTool(tool, args, ctx, true);
  }
  json sc(const json& args) { return call("execute", args)["structuredContent"]; }
  json py(const json& args) { return call("run_python", args)["structuredContent"]; }

  // How many processes whose command line matches `regex` (grep -E) are still running where
  // commands run: on the host for Local (each command has a namespace of its own), in the
  // container for Docker.
  int leftovers(const std::string& regex) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (onHost()) {
      return system(("pgrep -f '" + regex + "' >/dev/null").c_str()) == 0 ? 1 : 0;
    }
    CancelToken own;  // the test's may be cancelled
    ToolContext ctx{*backend_, limits_, own};
    json s = call("execute", {{"command", "ps -eo args | grep -cE '^" + regex + "' || true"}},
                  &ctx)["structuredContent"];
    return std::stoi(s.value("stdout", "-1"));
  }

  TempDir tmp_;
  std::unique_ptr<Backend> backend_;
  Limits limits_;
  CancelToken cancel_;
  std::once_flag remote_started_;
  std::unique_ptr<RemoteService> remote_;  // after the backend it serves: ends first
};

TEST_P(CommandContractTest, StdoutStderrAndExitCode) {
  json r = call("execute", {{"command", "echo out; echo err >&2; exit 3"}});
  EXPECT_EQ(r["isError"], false);  // a non-zero exit is a normal result
  EXPECT_EQ(r["structuredContent"]["stdout"], "out\n");
  EXPECT_EQ(r["structuredContent"]["stderr"], "err\n");
  EXPECT_EQ(r["structuredContent"]["exit_code"], 3);
  EXPECT_TRUE(r["structuredContent"]["signal"].is_null());
  EXPECT_EQ(r["structuredContent"]["timed_out"], false);
  const std::string text = r["content"][0]["text"];
  EXPECT_EQ(text.substr(0, 12), "exit code 3 ");
  EXPECT_NE(text.find("--- stdout ---\nout\n--- stderr ---\nerr\n"), std::string::npos) << text;
}

TEST_P(CommandContractTest, StdinEnvAndCwd) {
  ASSERT_TRUE(backend_->write("sub/.keep", "", WriteMode::kOverwrite).ok());
  json s = sc({{"command", "cat; echo \"$GREETING\"; pwd"},
               {"stdin", "from stdin\n"},
               {"env", {{"GREETING", "hello"}}},
               {"cwd", "sub"}});
  EXPECT_EQ(s["stdout"], "from stdin\nhello\n" + backend_->root() + "/sub\n");
}

TEST_P(CommandContractTest, CleanEnvironment) {
  setenv("BYD_TEST_SECRET", "1", 1);
  const std::string env = sc({{"command", "env | sort"}})["stdout"];
  unsetenv("BYD_TEST_SECRET");
  EXPECT_EQ(env.find("BYD_"), std::string::npos) << env;
  EXPECT_NE(env.find("LANG=C.UTF-8\n"), std::string::npos) << env;
  EXPECT_NE(env.find("TERM=dumb\n"), std::string::npos) << env;
}

TEST_P(CommandContractTest, WritesLandInTheWorkspace) {
  EXPECT_EQ(sc({{"command", "mkdir -p d && echo made > d/made.txt"}})["exit_code"], 0);
  auto content = backend_->read("d/made.txt", 0, 100);
  ASSERT_TRUE(content.ok()) << content.status().toString();
  EXPECT_EQ(*content, "made\n");
}

TEST_P(CommandContractTest, OutputIsCappedButDrainedAndItsEndKept) {
  limits_.max_output_bytes = 4096;
  json r =
      call("execute", {{"command",
                        "head -c 3000000 /dev/zero | tr '\\0' x; echo; echo SUMMARY: 3 passed; "
                        "echo done >&2"}});
  const json& s = r["structuredContent"];
  const std::string out = s["stdout"];
  EXPECT_EQ(out.substr(0, 2048), std::string(2048, 'x'));
  EXPECT_NE(out.find("[... 2.9 MiB not shown ...]\n"), std::string::npos) << out.substr(2000, 200);
  EXPECT_TRUE(out.ends_with("x\nSUMMARY: 3 passed\n")) << out.substr(out.size() - 100);
  EXPECT_EQ(s["stdout_bytes"], 3000000 + 1 + 18);
  EXPECT_EQ(s["stderr"], "done\n");
  EXPECT_EQ(s["stderr_bytes"], 5);
  EXPECT_EQ(s["truncated"], true);
  EXPECT_EQ(s["exit_code"], 0);
  const std::string text = r["content"][0]["text"];
  EXPECT_NE(text.find("--- stdout (2.9 MiB; its beginning and end) ---"), std::string::npos);
  EXPECT_NE(text.find("SUMMARY: 3 passed\n--- stderr ---\ndone\n"), std::string::npos) << text;
  EXPECT_NE(text.find("(... > out.txt 2>&1) and read_file"), std::string::npos);
}

TEST_P(CommandContractTest, TimeoutKillsTheWholeTree) {
  const auto start = Clock::now();
  json s = sc({{"command", "setsid sleep 999 & nohup sleep 998 & echo started; sleep 997"},
               {"timeout_s", 1}});
  EXPECT_EQ(s["timed_out"], true);
  EXPECT_EQ(s["stdout"], "started\n");
  EXPECT_LT(secondsSince(start), 5.0);
  EXPECT_EQ(leftovers("slee[p] 99[789]"), 0) << "a sleep outlived its timeout";
}

TEST_P(CommandContractTest, BackgroundChildDoesNotHangTheCall) {
  const auto start = Clock::now();
  json s = sc({{"command", "(sleep 996 &); echo hi"}});
  EXPECT_EQ(s["stdout"], "hi\n");
  EXPECT_LT(secondsSince(start), 5.0);
  EXPECT_EQ(leftovers("slee[p] 996"), 0) << "a background sleep outlived its command";
}

TEST_P(CommandContractTest, MissingCwdIsAnError) {
  json r = call("execute", {{"command", "true"}, {"cwd", "nope"}});
  EXPECT_EQ(r["isError"], true);
  EXPECT_EQ(r["content"][0]["text"], "'nope' does not exist");
}

TEST_P(CommandContractTest, CancellationStopsTheCommand) {
  std::thread canceller([this] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    cancel_.cancel();
  });
  const auto start = Clock::now();
  json r = call("execute", {{"command", "sleep 994"}});
  canceller.join();
  EXPECT_EQ(r["isError"], true);
  EXPECT_EQ(r["content"][0]["text"], "cancelled");
  EXPECT_LT(secondsSince(start), 5.0);
  EXPECT_EQ(leftovers("slee[p] 994"), 0);
}

TEST_P(CommandContractTest, ConcurrentCommandsGetTheirOwnResults) {
  std::vector<std::thread> threads;
  std::vector<json> results(6);
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([&, i] {
      ToolContext ctx{*backend_, limits_, cancel_};
      const std::string n = std::to_string(i);
      results[i] = invoke(
          *findTool("execute"),
          {{"command", "sleep 0.$((RANDOM % 3)); echo " + n + "; echo e" + n + " >&2"}}, ctx);
    });
  }
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(results[i]["structuredContent"]["stdout"], std::to_string(i) + "\n")
        << results[i].dump();
    EXPECT_EQ(results[i]["structuredContent"]["stderr"], "e" + std::to_string(i) + "\n");
  }
}

TEST_P(CommandContractTest, ProgressReportsTheLatestLine) {
  std::vector<std::string> messages;
  std::mutex mu;
  ToolContext ctx{*backend_, limits_, cancel_};
  ctx.progress = [&](double, std::string message) {
    std::lock_guard lock(mu);
    messages.push_back(std::move(message));
  };
  json r =
      call("execute", {{"command", "for i in 1 2 3 4; do echo line$i; sleep 0.5; done"}}, &ctx);
  EXPECT_EQ(r["structuredContent"]["exit_code"], 0);
  ASSERT_GE(messages.size(), 1u);
  EXPECT_EQ(messages.back().substr(0, 4), "line");
}

// The call ends when the command's output does, not a grace period later: nothing else (a
// process made for later commands) may hold its pipes open. The least of three runs, against
// a grace of 500 ms.
TEST_P(CommandContractTest, TheCallEndsWithTheCommandsOutput) {
  double least = 1e9;
  for (int i = 0; i < 3; ++i) {
    json r = sc({{"command", "echo done"}});
    ASSERT_EQ(r["stdout"], "done\n") << r.dump();
    least = std::min(least, r["duration_ms"].get<double>());
  }
  EXPECT_LT(least, 400.0);
}

TEST_P(CommandContractTest, NoDescriptorIsLeftOpen) {
  auto open_fds = [] {
    return std::distance(std::filesystem::directory_iterator("/proc/self/fd"),
                         std::filesystem::directory_iterator());
  };
  sc({{"command", "true"}});  // what stays open for later commands exists from here on
  const auto before = open_fds();
  for (int i = 0; i < 10; ++i) {
    sc({{"command", "echo out; echo err >&2"}});
    sc({{"command", "cat"}, {"stdin", "fed"}});
  }
  EXPECT_EQ(open_fds(), before);
}

TEST_P(CommandContractTest, PythonStatePersistsAndTheTrailingExpressionIsTheResult) {
  json a = py({{"code", "x = 20\nprint('set')"}});
  EXPECT_EQ(a["stdout"], "set\n") << a.dump();
  EXPECT_TRUE(a["result"].is_null());
  json b = call("run_python", {{"code", "x + 22"}});
  EXPECT_EQ(b["structuredContent"]["result"], "42");
  EXPECT_NE(b["content"][0]["text"].get<std::string>().find("=> 42"), std::string::npos);
}

TEST_P(CommandContractTest, WhatRunsStartsWithNoSignalBlockedOrIgnored) {
  if (!onHost()) GTEST_SKIP() << "a container's processes start from the engine";
  // As an HTTP server's threads are: SIGINT and SIGTERM blocked (its stop signals go to one
  // waiting thread), SIGPIPE ignored. None of it may reach a command or a kernel.
  sigset_t stop, old;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &stop, &old), 0);
  struct sigaction ignore = {}, old_pipe = {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(sigaction(SIGPIPE, &ignore, &old_pipe), 0);
  json s = sc({{"command", "grep -E '^Sig(Blk|Ign)' /proc/self/status"}});
  EXPECT_EQ(s["stdout"], "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n") << s.dump();
  // A kernel started now takes the SIGINT of a timeout: its cell is interrupted, its state kept.
  py({{"session", "masked"}, {"code", "kept = 5"}});
  json r = py({{"session", "masked"}, {"code", "import time\ntime.sleep(30)"}, {"timeout_s", 1}});
  EXPECT_EQ(r["timed_out"], true) << r.dump();
  EXPECT_EQ(r["state_lost"], false) << r.dump();
  EXPECT_EQ(r["error"]["type"], "KeyboardInterrupt") << r.dump();
  EXPECT_EQ(py({{"session", "masked"}, {"code", "kept"}})["result"], "5");
  sigaction(SIGPIPE, &old_pipe, nullptr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

TEST_P(CommandContractTest, PlainKernelsKeepNamedSessionsAndRefuseWhatNeedsTheSandbox) {
  if (GetParam() != Where::kLocalPlain) {
    GTEST_SKIP() << "isolated runs and forks in a sandbox: tests/integration/isolated_test.py, "
                    "fork_test.py";
  }
  // The kernel is a plain process of the server's: it sees the server's pid namespace.
  json a = py({{"code", "import os\nos.getppid() == " + std::to_string(getpid())}});
  EXPECT_EQ(a["result"], "True") << a.dump();
  json r = call("run_python", {{"code", "1"}, {"isolated", true}});
  ASSERT_TRUE(r.value("isError", false)) << r.dump();
  EXPECT_NE(r["content"][0]["text"].get<std::string>().find(
                "an isolated run needs the sandbox (--sandbox bwrap); under --sandbox container"),
            std::string::npos)
      << r.dump();
  r = call("run_python", {{"code", "1"}, {"session", "copy"}, {"fork_from", "default"}});
  ASSERT_TRUE(r.value("isError", false)) << r.dump();
  EXPECT_NE(r["content"][0]["text"].get<std::string>().find("forking a session needs the sandbox"),
            std::string::npos)
      << r.dump();
  // The session itself is untouched by the refusals.
  EXPECT_EQ(py({{"code", "a = 41\na + 1"}})["result"], "42");
}

TEST_P(CommandContractTest, PythonExceptionIsAnErrorWithTraceback) {
  json r = call("run_python", {{"code", "def f():\n    return 1 / 0\n\nf()"}});
  EXPECT_EQ(r["isError"], true);
  const json& e = r["structuredContent"]["error"];
  EXPECT_EQ(e["type"], "ZeroDivisionError");
  EXPECT_EQ(e["message"], "division by zero");
  EXPECT_NE(e["traceback"].get<std::string>().find("line 2, in f"), std::string::npos) << e.dump();
  EXPECT_EQ(e["traceback"].get<std::string>().find("kernel.py"), std::string::npos);
  EXPECT_EQ(py({{"code", "f.__name__"}})["result"], "'f'");
}

TEST_P(CommandContractTest, PythonSessionsAreIsolatedAndResetForgets) {
  py({{"code", "secret = 'one'"}, {"session", "a"}});
  EXPECT_EQ(py({{"code", "'secret' in globals()"}, {"session", "b"}})["result"], "False");
  json reset = py({{"code", "'secret' in globals()"}, {"session", "a"}, {"reset", true}});
  EXPECT_EQ(reset["result"], "False");
  EXPECT_EQ(reset["new_session"], true);
}

TEST_P(CommandContractTest, PythonTimeoutInterruptsAndEndsWhatTheCellStarted) {
  py({{"code", "kept = 7\nimport subprocess"}});
  json r =
      py({{"code", "subprocess.Popen(['sleep', '993'])\nwhile True:\n    pass"}, {"timeout_s", 1}});
  EXPECT_EQ(r["timed_out"], true);
  EXPECT_EQ(r["state_lost"], false);
  EXPECT_EQ(r["error"]["type"], "KeyboardInterrupt");
  EXPECT_EQ(py({{"code", "kept"}})["result"], "7");
  EXPECT_EQ(leftovers("slee[p] 993"), 0);
}

TEST_P(CommandContractTest, PythonKernelThatDiedWhileIdleIsReplaced) {
  py({{"code",
       "import os, threading, time\nx = 1\n"
       "threading.Thread(target=lambda: (time.sleep(0.3), os._exit(1))).start()"}});
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  json r = call("run_python", {{"code", "'x' in globals()"}});
  EXPECT_EQ(r["structuredContent"]["result"], "False") << r.dump();
  EXPECT_EQ(r["structuredContent"]["new_session"], true);
  EXPECT_NE(r["content"][0]["text"].get<std::string>().find("started afresh"), std::string::npos)
      << r.dump();
  EXPECT_EQ(py({{"code", "'x' in globals()"}})["new_session"], false);
}

TEST_P(CommandContractTest, PythonFilesMeetTheFileTools) {
  py({{"code", "open('from_python.txt', 'w').write('py\\n')"}});
  auto content = backend_->read("from_python.txt", 0, 100);
  ASSERT_TRUE(content.ok()) << content.status().toString();
  EXPECT_EQ(*content, "py\n");
}

INSTANTIATE_TEST_SUITE_P(Backends, CommandContractTest,
                         ::testing::Values(Where::kLocal, Where::kLocalPlain, Where::kRemote,
                                           Where::kDockerRunc, Where::kDockerRunsc),
                         whereName);

}  // namespace
}  // namespace byd::testing
