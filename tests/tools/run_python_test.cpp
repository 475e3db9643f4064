#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "backends/local/local_backend.h"
#include "backends/local/sandbox.h"
#include "schemas/validator.h"
#include "tests/test_util.h"
#include "tools/registry.h"

namespace byd::testing {
namespace {

using nlohmann::json;

// run_python on a Local backend with the real sandbox and kernel: what is Local's own. The
// contract every backend shares is in command_contract_test.cpp.
class RunPythonTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tmp_ = new TempDir();
    auto local = LocalBackend::open(tmp_->str(), {});
    ASSERT_TRUE(local.ok()) << local.status().toString();
    auto sandbox = Sandbox::create((*local)->writableDirs(), SandboxOptions{});
    ASSERT_TRUE(sandbox.ok()) << sandbox.status().toString();
    PythonOptions python;
    python.max_sessions = 16;  // the tests below use more than the default 8
    (*local)->setSandbox(std::move(*sandbox), "", python);
    backend_ = local->release();
  }
  static void TearDownTestSuite() {
    delete backend_;
    delete tmp_;
  }

  json run(json args) {
    const Tool* tool = findTool("run_python");
    EXPECT_NE(tool, nullptr);
    CancelToken cancel;
    ToolContext ctx{*backend_, limits_, cancel};
    json r = callTool(*tool, args, ctx, true);
    if (r.contains("structuredContent")) {
      Status s = schemas::validate(*tool->output_schema, r["structuredContent"], "output");
      EXPECT_TRUE(s.ok()) << s.message();
    }
    return r;
  }

  static TempDir* tmp_;
  static LocalBackend* backend_;
  Limits limits_;
};

TempDir* RunPythonTest::tmp_ = nullptr;
LocalBackend* RunPythonTest::backend_ = nullptr;

TEST_F(RunPythonTest, UnstoppableCodeLosesTheSession) {
  run({{"code", "lost = 1"}, {"session", "stubborn"}});
  json r = run({{"code",
                 "while True:\n    try:\n        while True:\n            pass\n"
                 "    except BaseException:\n        pass"},
                {"session", "stubborn"},
                {"timeout_s", 1}});
  EXPECT_EQ(r["structuredContent"]["state_lost"], true) << r.dump();
  EXPECT_EQ(r["isError"], true);
  json next = run({{"code", "'lost' in globals()"}, {"session", "stubborn"}});
  EXPECT_EQ(next["structuredContent"]["result"], "False");
  EXPECT_EQ(next["structuredContent"]["new_session"], true);
}

TEST_F(RunPythonTest, MemoryErrorLeavesTheSessionAlive) {
  run({{"code", "alive = True"}, {"session", "mem"}});
  json r = run({{"code", "bytearray(2**60)"}, {"session", "mem"}});
  const std::string type = r["structuredContent"]["error"]["type"];
  EXPECT_TRUE(type == "MemoryError" || type == "OverflowError") << type;
  EXPECT_EQ(run({{"code", "alive"}, {"session", "mem"}})["structuredContent"]["result"], "True");
}

TEST_F(RunPythonTest, SessionLimitIsEnforced) {
  PythonOptions python;
  python.max_sessions = 1;
  TempDir tmp;
  auto local = LocalBackend::open(tmp.str(), {});
  ASSERT_TRUE(local.ok());
  auto sandbox = Sandbox::create((*local)->writableDirs(), SandboxOptions{});
  ASSERT_TRUE(sandbox.ok());
  (*local)->setSandbox(std::move(*sandbox), "", python);
  CancelToken cancel;
  PythonRequest first;
  first.code = "1";
  EXPECT_TRUE((*local)->runPython(first, cancel).ok());
  PythonRequest second = first;
  second.session = "another";
  auto r = (*local)->runPython(second, cancel);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "there are already 1 Python sessions (the limit); reuse one of them");
}

TEST_F(RunPythonTest, EscapesFail) {
  LoopbackListener host;
  // A setuid-root copy of a program, left in the workspace by the host.
  const std::filesystem::path setuid_copy = tmp_->path() / "id-setuid";
  std::filesystem::copy_file("/usr/bin/id", setuid_copy);
  ASSERT_EQ(chmod(setuid_copy.c_str(), 04755), 0);
  std::filesystem::create_symlink("/etc/shadow", tmp_->path() / "shadow-link");
  const std::string code = R"PY(
import ctypes, fcntl, os, socket, subprocess, termios
out = {}
def attempt(name, fn):
    try:
        fn()
        out[name] = 'WORKED'
    except Exception as e:
        out[name] = type(e).__name__
attempt('net4', lambda: socket.create_connection(('127.0.0.2', HOST_PORT), timeout=2))
attempt('net6', lambda: socket.create_connection(('::1', 22), timeout=2))
for p in ('/etc/x', '/usr/x', '/x'):
    attempt('write ' + p, lambda: open(p, 'w'))
try:  # the workspace's parent (inside a private /tmp when the workspace is in /tmp)
    open(os.path.dirname(os.getcwd()) + '/byd-escape-py', 'w').close()
except OSError:
    pass
attempt('read /root', lambda: os.listdir('/root'))
attempt('read /home', lambda: os.listdir('/home'))
attempt('shadow', lambda: open('shadow-link').read())
attempt('server env', lambda: open('/proc/%d/environ' % SERVER_PID).read())
libc = ctypes.CDLL(None, use_errno=True)
out['ptrace'] = libc.ptrace(0, 0, 0, 0)
out['mount'] = libc.mount(b'none', b'/tmp', b'tmpfs', 0, None)
attempt('tiocsti', lambda: fcntl.ioctl(1, termios.TIOCSTI, b'x'))
status = dict(l.split(':	', 1) for l in open('/proc/self/status').read().splitlines() if ':	' in l)
out['caps'] = status['CapEff'].strip() + ' ' + status['NoNewPrivs'].strip()
out['setuid'] = subprocess.run(['./id-setuid', '-u'], capture_output=True, text=True).stdout.strip()
out['uid'] = str(os.getuid())
out
)PY";
  json r = run({{"code", "SERVER_PID = " + std::to_string(getpid()) +
                             "\nHOST_PORT = " + std::to_string(host.port()) + code},
                {"session", "escape"}});
  ASSERT_EQ(r["isError"], false) << r.dump();
  const std::string result = r["structuredContent"]["result"];
  EXPECT_EQ(result.find("'WORKED'"), std::string::npos) << result;  // every attempt failed
  // 127.0.0.2, a server of the host's standing for the internet, is the kernel's own loopback
  // inside: refused there, and never reached.
  EXPECT_NE(result.find("'net4': 'ConnectionRefusedError'"), std::string::npos) << result;
  EXPECT_FALSE(host.reached());
  EXPECT_NE(result.find("'ptrace': -1"), std::string::npos) << result;
  EXPECT_NE(result.find("'mount': -1"), std::string::npos) << result;
  EXPECT_NE(result.find("'caps': '0000000000000000 1'"), std::string::npos) << result;
  EXPECT_NE(result.find("'setuid': '1000'"), std::string::npos) << result;  // not 0
  EXPECT_NE(result.find("'uid': '1000'"), std::string::npos) << result;
  EXPECT_NE(result.find("'tiocsti': 'PermissionError'"), std::string::npos) << result;
}

TEST_F(RunPythonTest, MatplotlibFigureComesBackAsAnImage) {
  json r = run({{"code", "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [1, 4, 9])\nNone"},
                {"session", "plot"},
                {"timeout_s", 60}});
  ASSERT_EQ(r["isError"], false) << r.dump().substr(0, 2000);
  ASSERT_EQ(r["content"].size(), 2u);
  EXPECT_EQ(r["content"][1]["type"], "image");
  EXPECT_EQ(r["content"][1]["mimeType"], "image/png");
  EXPECT_EQ(r["content"][1]["data"].get<std::string>().substr(0, 8), "iVBORw0K");  // PNG magic
}

}  // namespace
}  // namespace byd::testing
