#include <gtest/gtest.h>

#include "backends/state/state_backend.h"
#include "tools/registry.h"

namespace byd::testing {
namespace {

using nlohmann::json;

// A backend without an executor (State): the server does not offer execute and run_python
// (mcp::toolOffered); a handler called directly says why instead of failing otherwise.
TEST(NoExecutor, ExecuteAndRunPythonSayTheBackendRunsNoCode) {
  StateBackend state;
  ASSERT_EQ(state.executor(), nullptr);
  Limits limits;
  CancelToken cancel;
  ToolContext ctx{state, limits, cancel};
  const json run = callTool(*findTool("execute"), {{"command", "true"}}, ctx, true);
  EXPECT_TRUE(run["isError"].get<bool>());
  EXPECT_EQ(run["content"][0]["text"], "the state backend runs no commands");
  const json py = callTool(*findTool("run_python"), {{"code", "1"}}, ctx, true);
  EXPECT_TRUE(py["isError"].get<bool>());
  EXPECT_EQ(py["content"][0]["text"], "the state backend runs no Python");
}

}  // namespace
}  // namespace byd::testing
