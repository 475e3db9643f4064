// The test binary's main: gtest's, except that the sandbox tests start this binary again as
// the sandbox helper.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "backends/local/sandbox_zygote.h"

int main(int argc, char** argv) {
  if (auto helper = byd::runSandboxHelper(argc, argv)) return *helper;
  testing::InitGoogleMock(&argc, argv);
  return RUN_ALL_TESTS();
}
