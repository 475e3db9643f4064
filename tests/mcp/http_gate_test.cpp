#include "mcp/http_gate.h"

#include <gtest/gtest.h>

namespace byd::mcp {
namespace {

TEST(HttpGate, LoopbackAddressesAreThoseOfThisMachineAlone) {
  for (const char* a : {"127.0.0.1", "127.0.0.2", "127.255.255.254", "::1", "::ffff:127.0.0.1"}) {
    EXPECT_TRUE(isLoopbackAddress(a)) << a;
  }
  for (const char* a :
       {"128.0.0.1", "10.0.0.1", "192.168.1.10", "169.254.169.254", "0.0.0.0", "::", "::2",
        "::ffff:10.0.0.1", "fe80::1", "2001:db8::1", "localhost", "", "127.0.0.1 ", "1.1.1.1"}) {
    EXPECT_FALSE(isLoopbackAddress(a)) << a;
  }
}

}  // namespace
}  // namespace byd::mcp
