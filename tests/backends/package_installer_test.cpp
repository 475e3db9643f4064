// The package installer's pieces that need no sandbox: the index's address, what its pip may
// reach, and what pip said it installed.

#include "backends/local/package_installer.h"

#include <gtest/gtest.h>

namespace byd {
namespace {

TEST(PackageIndex, ParsesHostAndPortAndDropsTheTrailingSlash) {
  auto pypi = parsePackageIndex("https://pypi.org/simple/");
  ASSERT_TRUE(pypi.ok()) << pypi.status().message();
  EXPECT_EQ(pypi->url, "https://pypi.org/simple");
  EXPECT_EQ(pypi->host, "pypi.org");
  EXPECT_EQ(pypi->port, 443);
  auto local = parsePackageIndex("http://127.0.0.2:8080/simple");
  ASSERT_TRUE(local.ok());
  EXPECT_EQ(local->host, "127.0.0.2");
  EXPECT_EQ(local->port, 8080);
  auto v6 = parsePackageIndex("http://[::1]:3141/root/pypi/+simple/");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 3141);
  auto upper = parsePackageIndex("http://Mirror.Example.COM/simple");
  ASSERT_TRUE(upper.ok());
  EXPECT_EQ(upper->host, "mirror.example.com");
  EXPECT_EQ(upper->port, 80);
}

TEST(PackageIndex, RefusesWhatIsNoHttpUrlAndSaysWhy) {
  for (const char* bad : {"", "pypi.org/simple", "ftp://pypi.org/simple", "file:///srv/wheels",
                          "https:///simple", "https://pypi.org:99999/simple",
                          "https://user@pypi.org/simple", "https://pypi.org/sim ple"}) {
    auto r = parsePackageIndex(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find("--package-index"), std::string::npos) << bad;
  }
}

TEST(PackageIndex, TheInstallerReachesTheIndexAlone) {
  auto local = parsePackageIndex("http://127.0.0.2:8080/simple");
  ASSERT_TRUE(local.ok());
  auto policy = indexOnlyPolicy(*local);
  EXPECT_TRUE(policy->open());
  egress::Verdict yes = policy->judge("127.0.0.2", 8080);
  EXPECT_TRUE(yes.allow);
  EXPECT_TRUE(yes.names_literal);  // a loopback index is reached because it is named
  for (const auto& [host, port] :
       std::vector<std::pair<std::string, uint16_t>>{{"127.0.0.2", 8081},
                                                     {"127.0.0.1", 8080},
                                                     {"files.pythonhosted.org", 443},
                                                     {"169.254.169.254", 80}}) {
    egress::Verdict no = policy->judge(host, port);
    EXPECT_FALSE(no.allow) << host << ":" << port;
    EXPECT_NE(no.reason.find("is not the package index"), std::string::npos) << no.reason;
  }
  // PyPI serves its files from another host, which its index links to.
  auto pypi = indexOnlyPolicy(*parsePackageIndex(kDefaultPackageIndex));
  EXPECT_TRUE(pypi->judge("pypi.org", 443).allow);
  EXPECT_FALSE(pypi->judge("pypi.org", 443).names_literal);
  EXPECT_TRUE(pypi->judge("files.pythonhosted.org", 443).allow);
  EXPECT_FALSE(pypi->judge("files.pythonhosted.org", 80).allow);
  EXPECT_FALSE(pypi->judge("evil.example", 443).allow);
}

TEST(PackageIndex, ReadsWhatPipInstalled) {
  EXPECT_EQ(installedByPip("Looking in indexes: http://x/simple\nCollecting byd-tiny\n"
                           "Successfully installed byd-dep-2.0 byd_tiny-1.0.post1 numpy-2.1.0\n"),
            (std::vector<std::string>{"byd-dep 2.0", "byd_tiny 1.0.post1", "numpy 2.1.0"}));
  EXPECT_TRUE(installedByPip("Requirement already satisfied: numpy\n").empty());
  // Only the line pip starts with it.
  EXPECT_TRUE(installedByPip("print('Successfully installed x-1')\n").empty());
}

}  // namespace
}  // namespace byd
