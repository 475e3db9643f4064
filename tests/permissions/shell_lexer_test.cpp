#include "permissions/shell_lexer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace byd::permissions {
namespace {

// Records what a parser would be handed instead of parsing it.
class RecordingLexer : public ShellLexer {
 public:
  RecordingLexer(std::string_view input, SplitStatus& status) : ShellLexer(input, status) {}
  std::vector<std::string> scripts;

 private:
  void parseSubstitution(int) override {
    const size_t close = in_.find(')', pos_);
    scripts.emplace_back(in_.substr(pos_, close - pos_));
    pos_ = close + 1;
  }
  void parseScript(std::string_view script, int) override { scripts.emplace_back(script); }
};

Word lex(std::string_view input, SplitStatus& status) {
  return RecordingLexer(input, status).lexWord(0);
}

TEST(ShellLexerTest, RemovesQuotesAndMarksWhatWasBare) {
  SplitStatus status;
  const Word w = lex(R"(a'b'"c"\d e)", status);
  EXPECT_EQ(w.text, "abcd");
  EXPECT_EQ(w.bare, std::string("a") + std::string(3, kNotBare));
  EXPECT_FALSE(w.expands);
  EXPECT_TRUE(status.certain);
}

TEST(ShellLexerTest, KeepsParametersAndDecodesAnsiC) {
  SplitStatus status;
  EXPECT_EQ(lex("$HOME/${x:-y}", status).text, "$HOME/${x:-y}");
  EXPECT_EQ(lex(R"($'a\tb')", status).text, "a\tb");
  EXPECT_TRUE(status.certain);
  EXPECT_TRUE(lex("$HOME", status).expands);
}

TEST(ShellLexerTest, HandsSubstitutionsToTheParser) {
  SplitStatus status;
  RecordingLexer lexer(R"sh(x$(touch p)"`echo \$y`")sh", status);
  const Word w = lexer.lexWord(0);
  EXPECT_EQ(w.text, "x$(...)$(...)");
  EXPECT_TRUE(w.substitutes);
  EXPECT_EQ(lexer.scripts, (std::vector<std::string>{"touch p", "echo $y"}));
  EXPECT_TRUE(status.certain);
}

TEST(ShellLexerTest, RecordsTheFirstReasonForUncertainty) {
  SplitStatus status;
  EXPECT_EQ(lex("'open", status).text, "open");
  lex("`open", status);
  EXPECT_FALSE(status.certain);
  EXPECT_EQ(status.reason, "unbalanced quote");
}

TEST(ShellLexerTest, ClassifiesBareWords) {
  SplitStatus status;
  EXPECT_TRUE(isAssignment(lex("a[1]+=x", status)));
  EXPECT_FALSE(isAssignment(lex("'a'=x", status)));
  EXPECT_TRUE(looksLikeFd(lex("{fd}", status)));
  EXPECT_FALSE(looksLikeFd(lex("'2'", status)));
  EXPECT_TRUE(hasGlob(lex("*.txt", status).bare));
  EXPECT_FALSE(hasGlob(lex("'*.txt'", status).bare));
  EXPECT_TRUE(hasBraceExpansion(lex("{a,b}", status).bare));
  EXPECT_FALSE(hasBraceExpansion(lex("{a}", status).bare));
}

}  // namespace
}  // namespace byd::permissions
