#include "mcp/elicitation.h"

#include <gtest/gtest.h>

namespace byd::mcp {
namespace {

using permissions::Action;
using permissions::Decision;
using permissions::Operation;

const Decision kAsk{Action::kAsk, "execute default", "", ""};

TEST(Elicitation, TheWholeCommandIsShownWithItsLineBreaks) {
  const std::string line =
      "echo \"running the unit tests\"" + std::string(220, ' ') + "; echo HIDDEN >&2\nrm -rf build";
  auto params = elicitationParams({Operation::kExecute, line, kAsk, {}});
  ASSERT_TRUE(params.ok()) << params.status().message();
  const std::string message = (*params)["message"];
  EXPECT_EQ(message,
            "backyard-mcp asks: allow execute? The rules say ask (execute default).\n\n" + line);
}

TEST(Elicitation, ControlAndInvisibleCharactersAreEscaped) {
  // A terminal escape that would erase the line, a carriage return that would hide what came
  // before it, and a right-to-left override that reorders what follows.
  EXPECT_EQ(promptText("ls\x1b[2K\rrm -rf x\tok"), "ls\\x1b[2K\\x0drm -rf x\tok");
  EXPECT_EQ(promptText("echo \xe2\x80\xae"
                       "cba\xe2\x81\xa6 \xe2\x80\x8b!\xef\xbb\xbf"),
            "echo \\u{202e}cba\\u{2066} \\u{200b}!\\u{feff}");
  EXPECT_EQ(promptText("caf\xc3\xa9 \xe2\x82\xac"),
            "caf\xc3\xa9 \xe2\x82\xac");  // é €: as they are
}

TEST(Elicitation, TextTooLongToShowIsNotAskedAbout) {
  const std::string code(kMaxPromptText + 1, 'x');
  auto params = elicitationParams({Operation::kPython, code, kAsk, {}});
  ASSERT_FALSE(params.ok());
  EXPECT_NE(params.status().message().find("too long to show whole in an approval prompt (16385 "
                                           "bytes; at most 16384)"),
            std::string::npos)
      << params.status().message();
  EXPECT_TRUE(elicitationParams({Operation::kPython, code.substr(1), kAsk, {}}).ok());
}

TEST(Elicitation, APathIsAskedAboutInTheQuestion) {
  const Decision why{Action::kAsk, "write default", "", ""};
  auto params = elicitationParams({Operation::kWrite, "src/a.py", why, {}});
  ASSERT_TRUE(params.ok());
  EXPECT_EQ((*params)["message"],
            "backyard-mcp asks: allow write for 'src/a.py'? The rules say ask (write default).");
  // Nothing to remember: the form has no such box.
  EXPECT_FALSE((*params)["requestedSchema"]["properties"].contains("remember"));
}

TEST(Elicitation, AllowingForTheSessionIsOfferedWithWhatItCovers) {
  const Decision why{Action::kAsk, "write default", "", ""};
  auto params = elicitationParams({Operation::kWrite, "src/a.py", why, {"write under 'src/**'"}});
  ASSERT_TRUE(params.ok());
  const nlohmann::json& remember = (*params)["requestedSchema"]["properties"]["remember"];
  EXPECT_EQ(remember["type"], "boolean");
  EXPECT_EQ(remember["title"], "Allow for the rest of this session");
  EXPECT_EQ(remember["description"],
            "With Allow: do not ask again in this session for write under 'src/**'");
  EXPECT_EQ((*params)["requestedSchema"]["required"], nlohmann::json::array({"approve"}));
}

}  // namespace
}  // namespace byd::mcp
