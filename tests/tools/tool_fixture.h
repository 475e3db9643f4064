#pragma once
// Runs every tool test against every backend (State, Local, Local reached as --backend remote
// reaches a backyard-mcp service, and Docker, whose file tools need no engine: they work on
// the host directory as the container's user): each test seeds files
// through `seed()`, calls tools through `call()` (which also checks structuredContent against the
// tool's outputSchema) and reads results back through the backend.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <memory>
#include <optional>
#include <string>

#include "backends/docker/docker_backend.h"
#include "backends/local/local_backend.h"
#include "backends/local/sandbox_identity.h"
#include "backends/state/state_backend.h"
#include "schemas/validator.h"
#include "tests/remote_service.h"
#include "tests/test_util.h"
#include "tools/registry.h"

namespace byd::testing {

enum class BackendKind { kState, kLocal, kRemote, kDocker };

inline std::string backendName(const ::testing::TestParamInfo<BackendKind>& info) {
  return info.param == BackendKind::kState    ? "State"
         : info.param == BackendKind::kLocal  ? "Local"
         : info.param == BackendKind::kRemote ? "Remote"
                                              : "Docker";
}

// The container's user, who owns a Docker workspace.
inline constexpr uid_t kContainerUid = kDedicatedSandboxUid;  // the container's user by default

class ToolTest : public ::testing::TestWithParam<BackendKind> {
 protected:
  void SetUp() override {
    if (GetParam() == BackendKind::kState) {
      auto state = std::make_unique<StateBackend>();
      state_ = state.get();
      backend_ = std::move(state);
    } else if (GetParam() == BackendKind::kLocal || GetParam() == BackendKind::kRemote) {
      tmp_ = std::make_unique<TempDir>();
      auto local = LocalBackend::open(tmp_->str(), {});
      ASSERT_TRUE(local.ok()) << local.status().toString();
      backend_ = std::move(*local);
    } else {
      tmp_ = std::make_unique<TempDir>();
      giveToContainerUser(tmp_->path());
      DockerOptions options;
      options.host = "unix:///nonexistent/docker.sock";
      auto docker = DockerBackend::open(tmp_->str(), options);
      ASSERT_TRUE(docker.ok()) << docker.status().toString();
      backend_ = std::move(*docker);
    }
  }

  // What the test seeds into a Docker workspace belongs to the container's user, as files
  // made inside the container would.
  void giveToContainerUser(const std::filesystem::path& path) {
    if (GetParam() != BackendKind::kDocker || geteuid() != 0) return;
    for (auto p = path; p != tmp_->path().parent_path() && !p.empty(); p = p.parent_path()) {
      if (lchown(p.c_str(), kContainerUid, kContainerUid) != 0) break;
      if (p == tmp_->path()) break;
    }
  }

  // Creates a file with the given content and modification time (seconds since the epoch).
  void seed(const std::string& path, const std::string& content, int64_t mtime_s = 1700000000) {
    if (state_) {
      nlohmann::json doc = state_->toJson();
      doc["files"][path] = {
          {"content", base64(content)}, {"encoding", "base64"}, {"mtime_ns", mtime_s * 1000000000}};
      ASSERT_TRUE(state_->loadJson(doc).ok());
      return;
    }
    tmp_->write(path, content);
    struct timespec times[2] = {{mtime_s, 0}, {mtime_s, 0}};
    ASSERT_EQ(utimensat(AT_FDCWD, (tmp_->path() / path).c_str(), times, 0), 0);
    giveToContainerUser(tmp_->path() / path);
  }

  std::string contentOf(const std::string& path) {
    auto r = backend_->read(path, 0, 1 << 30);
    return r.ok() ? *r : "<" + r.status().toString() + ">";
  }

  // Calls a tool; fails the test if a successful result does not match the outputSchema. A
  // read-only tool is called first without structuredContent (--structured-content off), and
  // its text must be the same either way.
  nlohmann::json call(const std::string& tool_name, const nlohmann::json& args) {
    const Tool* tool = findTool(tool_name);
    EXPECT_NE(tool, nullptr) << tool_name;
    if (!tool) return {};
    // Here, or through the remote service.
    const auto invoke = [&](bool structured) {
      ToolContext ctx{*backend_, limits_, cancel_};
      if (GetParam() == BackendKind::kRemote)
        return remote().call(tool_name, args, ctx, structured);
      return callTool(*tool, args, ctx, structured);
    };
    std::optional<nlohmann::json> text_alone;
    if (tool->spec->read_only) {
      text_alone = invoke(/*structured=*/false);
      EXPECT_FALSE(text_alone->contains("structuredContent")) << tool_name;
    }
    nlohmann::json result = invoke(/*structured=*/true);
    if (text_alone) {
      EXPECT_EQ((*text_alone)["content"], result["content"])
          << tool_name << ": the text differs without structuredContent";
    }
    if (!result.value("isError", false)) {
      Status s = schemas::validate(*tool->output_schema, result["structuredContent"], "output");
      EXPECT_TRUE(s.ok()) << tool_name << ": " << s.message();
    }
    return result;
  }

  // The service that serves the backend remotely, started on first use: with the limits the
  // test has set by then.
  RemoteService& remote() {
    if (!remote_) {
      remote_ = std::make_unique<RemoteService>(*backend_, limits_);
      EXPECT_TRUE(remote_->bound().ok()) << remote_->bound().toString();
    }
    return *remote_;
  }

  // The text of a result, and whether it was an error.
  static std::string text(const nlohmann::json& result) {
    return result["content"][0]["text"].get<std::string>();
  }
  static bool isError(const nlohmann::json& result) { return result.value("isError", false); }

  static std::string base64(const std::string& s);

  std::unique_ptr<TempDir> tmp_;
  std::unique_ptr<Backend> backend_;
  StateBackend* state_ = nullptr;
  Limits limits_;
  CancelToken cancel_;
  std::unique_ptr<RemoteService> remote_;  // after the backend it serves: ends first
};

inline std::string ToolTest::base64(const std::string& s) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  int val = 0, bits = -6;
  for (unsigned char c : s) {
    val = (val << 8) + c;
    bits += 8;
    while (bits >= 0) {
      out.push_back(kAlphabet[(val >> bits) & 0x3F]);
      bits -= 6;
    }
  }
  if (bits > -6) out.push_back(kAlphabet[((val << 8) >> (bits + 8)) & 0x3F]);
  while (out.size() % 4) out.push_back('=');
  return out;
}

#define BYD_TOOL_SUITE(Suite)                                                                     \
  INSTANTIATE_TEST_SUITE_P(                                                                       \
      Backends, Suite,                                                                            \
      ::testing::Values(::byd::testing::BackendKind::kState, ::byd::testing::BackendKind::kLocal, \
                        ::byd::testing::BackendKind::kRemote,                                     \
                        ::byd::testing::BackendKind::kDocker),                                    \
      ::byd::testing::backendName)

}  // namespace byd::testing
