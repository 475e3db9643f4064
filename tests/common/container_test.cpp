#include "common/container.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "tests/test_util.h"

namespace byd {
namespace {

class ContainerEvidence : public ::testing::Test {
 protected:
  std::string evidence() {
    return containerEvidence(dir_.str(), [this](const char* name) -> const char* {
      auto it = env_.find(name);
      return it == env_.end() ? nullptr : it->second.c_str();
    });
  }
  void touch(const std::string& rel) { dir_.write(rel.substr(1), ""); }
  testing::TempDir dir_;
  std::map<std::string, std::string> env_;
};

TEST_F(ContainerEvidence, NothingShowsAContainer) {
  env_["HOME"] = "/root";
  env_["container"] = "";  // set but empty says nothing
  EXPECT_EQ(evidence(), "");
}

TEST_F(ContainerEvidence, EachMarkerIsNamed) {
  touch("/run/.containerenv");
  EXPECT_EQ(evidence(), "/run/.containerenv");
  touch("/.dockerenv");
  EXPECT_EQ(evidence(), "/.dockerenv");
}

TEST_F(ContainerEvidence, APodOrANamedContainerIsSeenInTheEnvironment) {
  env_["container"] = "podman";
  EXPECT_EQ(evidence(), "container=podman");
  env_["KUBERNETES_SERVICE_HOST"] = "10.96.0.1";
  EXPECT_EQ(evidence(), "KUBERNETES_SERVICE_HOST");
}

}  // namespace
}  // namespace byd
