// Which distribution provides a module: the names the issue of packages on demand lists, any
// other module as its own distribution, and what cannot be a module refused.

#include "backends/python/import_names.h"

#include <gtest/gtest.h>

namespace byd {
namespace {

TEST(ImportNames, TheWellKnownDifferencesAreInTheTable) {
  const std::pair<const char*, const char*> known[] = {
      {"sklearn", "scikit-learn"}, {"cv2", "opencv-python"},   {"PIL", "pillow"},
      {"yaml", "pyyaml"},          {"bs4", "beautifulsoup4"},  {"dateutil", "python-dateutil"},
      {"skimage", "scikit-image"}, {"attr", "attrs"},          {"jwt", "pyjwt"},
      {"serial", "pyserial"},      {"OpenSSL", "pyopenssl"},   {"zmq", "pyzmq"},
      {"git", "gitpython"},        {"Crypto", "pycryptodome"}, {"usb", "pyusb"}};
  for (const auto& [module, dist] : known) {
    EXPECT_EQ(distributionForModule(module), dist) << module;
  }
  EXPECT_GT(importNameCount(), 500u);  // several hundred, from Debian's archive
}

TEST(ImportNames, AnyOtherModuleIsItsOwnDistributionAndSubmodulesTheirTopLevels) {
  EXPECT_EQ(distributionForModule("numpy"), "numpy");
  EXPECT_EQ(distributionForModule("Flask_SQLAlchemy"), "flask-sqlalchemy");
  EXPECT_EQ(distributionForModule("sklearn.linear_model"), "scikit-learn");
  EXPECT_EQ(distributionForModule("yaml.constructor"), "pyyaml");
  for (const char* bad :
       {"_private_ext", "", ".x", "1abc", "a-b", "a b", "a/b", "$(x)", "ünïcode"}) {
    EXPECT_EQ(distributionForModule(bad), std::nullopt) << bad;
  }
}

}  // namespace
}  // namespace byd
