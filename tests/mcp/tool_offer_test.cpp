// Which tools a server offers on a Local backend, by what its sandbox can run: a tool that can
// only refuse is not offered (nor named in the instructions, which use the same decision).

#include <gtest/gtest.h>

#include "backends/local/local_backend.h"
#include "mcp/server.h"
#include "tests/test_util.h"
#include "tools/registry.h"

namespace byd::mcp {
namespace {

std::vector<std::string> offered(Backend& backend) {
  std::vector<std::string> names;
  for (const Tool& tool : allTools()) {
    if (toolOffered(tool, backend, nullptr)) names.emplace_back(tool.spec->name);
  }
  return names;
}

bool has(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

class ToolOfferTest : public ::testing::Test {
 protected:
  std::unique_ptr<LocalBackend> local(bool isolate) {
    auto backend = LocalBackend::open(tmp_.str(), {});
    EXPECT_TRUE(backend.ok()) << backend.status().toString();
    SandboxOptions options;
    options.isolate = isolate;
    auto sandbox = Sandbox::create((*backend)->writableDirs(), options);
    EXPECT_TRUE(sandbox.ok()) << sandbox.status().toString();
    (*backend)->setSandbox(std::move(*sandbox));
    return std::move(*backend);
  }
  byd::testing::TempDir tmp_;
};

TEST_F(ToolOfferTest, ASandboxedLocalBackendOffersEveryTool) {
  auto backend = local(/*isolate=*/true);
  const auto names = offered(*backend);
  EXPECT_TRUE(has(names, "execute"));
  EXPECT_TRUE(has(names, "run_python"));
  EXPECT_TRUE(has(names, "read_file"));
}

TEST_F(ToolOfferTest, WithoutIsolationCommandsAndPythonRunAsPlainProcesses) {
  auto backend = local(/*isolate=*/false);
  const auto names = offered(*backend);
  EXPECT_TRUE(has(names, "execute"));
  EXPECT_TRUE(has(names, "run_python"));
}

TEST_F(ToolOfferTest, WithoutASandboxNeitherCommandsNorPythonAreOffered) {
  auto backend = LocalBackend::open(tmp_.str(), {});
  ASSERT_TRUE(backend.ok());
  (*backend)->setSandbox(nullptr, "bubblewrap is not installed");
  const auto names = offered(**backend);
  EXPECT_FALSE(has(names, "execute"));
  EXPECT_FALSE(has(names, "run_python"));
  EXPECT_TRUE(has(names, "write_file"));
}

}  // namespace
}  // namespace byd::mcp
