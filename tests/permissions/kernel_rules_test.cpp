// What the permissions layer gives the sandbox: protected paths, whether a call was approved,
// the read and write rules as the sandbox's view takes them, and the network rules.

#include <gtest/gtest.h>

#include "permissions/guard.h"
#include "permissions/network_rules.h"
#include "permissions/presets.h"
#include "permissions/session_grants.h"

namespace byd::permissions {
namespace {

using nlohmann::json;

// A ruleset document (one that extends a preset is merged with it first).
Guard guardFor(const json& doc, AskFallback fallback = AskFallback::kDeny) {
  auto merged = extendPreset(doc);
  EXPECT_TRUE(merged.ok()) << merged.status().message();
  auto rs = Ruleset::fromJson(*merged);
  EXPECT_TRUE(rs.ok()) << rs.status().message();
  return Guard(std::move(*rs), fallback);
}

class Answering : public Approver {
 public:
  explicit Answering(bool yes, SessionGrants* grants = nullptr) : yes_(yes), grants_(grants) {}
  Result<Answer> approve(const Question& q) override {
    asked.push_back(std::string(q.shown));
    return yes_ ? Answer::kYes : Answer::kNo;
  }
  SessionGrants* grants() override { return grants_; }
  std::vector<std::string> asked;

 private:
  bool yes_;
  SessionGrants* grants_;
};

TEST(ProtectedPaths, AreNeverWrittenInAnyRulesetUnlessItsOwnRuleAllowsThem) {
  for (const char* preset : {"default", "permissive", "strict"}) {
    const Guard g = guardFor(*presetJson(preset));
    for (const char* path : {".git/config", ".git/hooks/pre-commit", ".mcp.json", "sub/.envrc",
                             ".vscode/settings.json", ".claude/settings.json", ".idea/x.xml",
                             ".bashrc", ".profile", ".zshrc", ".bash_profile", "a/.GIT/CONFIG"}) {
      for (const Operation op : {Operation::kWrite, Operation::kEdit, Operation::kMkdir,
                                 Operation::kMove, Operation::kDelete}) {
        const Decision d = g.decide(op, path);
        EXPECT_EQ(d.action, Action::kDeny) << preset << " " << path;
        // (A preset's own rule for .git may come first for move and delete.)
        if (op == Operation::kMove || op == Operation::kDelete) continue;
        EXPECT_NE(d.description.find("runs outside the sandbox later"), std::string::npos)
            << preset << " " << path << ": " << d.source;
      }
      EXPECT_NE(g.decide(Operation::kRead, path).action, Action::kDeny) << preset << path;
    }
    // Nothing else is: the rest of .git, a name that holds one of theirs.
    for (const char* path : {".git/objects/ab/cd", ".git/index", "src/profile.py", "bashrc"}) {
      EXPECT_FALSE(g.decide(Operation::kWrite, path).source.starts_with("protected"))
          << preset << " " << path;
    }
  }
  // A fully custom ruleset is protected too; its own allow rule comes first and wins.
  const Guard own = guardFor({{"default", "allow"}});
  EXPECT_EQ(own.decide(Operation::kWrite, ".mcp.json").action, Action::kDeny);
  const Guard opened = guardFor(
      {{"extends", "permissive"},
       {"write", {{"rules", json::array({{{"pattern", ".vscode/**"}, {"action", "allow"}}})}}}});
  EXPECT_EQ(opened.decide(Operation::kWrite, ".vscode/settings.json").action, Action::kAllow);
  EXPECT_EQ(opened.decide(Operation::kWrite, ".mcp.json").action, Action::kDeny);
}

TEST(Approval, IsReportedOnlyWhenAnAskWasAnsweredYes) {
  const Guard g = guardFor(
      {{"extends", "default"},
       {"execute", {{"rules", json::array({{{"pattern", "ls*"}, {"action", "allow"}}})}}}});
  Answering yes(true), no(false);
  bool approved = false;  // set only when an approval let the call through
  EXPECT_TRUE(g.checkCommand("ls -l", {}, "", &yes, {}, &approved).ok());
  EXPECT_FALSE(approved);  // allowed outright
  approved = false;
  EXPECT_TRUE(g.checkCommand("make", {}, "", &yes, {}, &approved).ok());
  EXPECT_TRUE(approved);
  approved = false;
  EXPECT_FALSE(g.checkCommand("make", {}, "", &no, {}, &approved).ok());
  EXPECT_FALSE(approved);
  approved = false;
  EXPECT_TRUE(g.check(Operation::kPython, "print(1)", &yes, &approved).ok());
  EXPECT_TRUE(approved);
  // A grant for the session is an approval; so is the fallback that allows.
  SessionGrants grants;
  grants.add({Operation::kExecute, SessionGrant::Kind::kCommands, "make*"});
  Answering remembering(false, &grants);
  approved = false;
  EXPECT_TRUE(g.checkCommand("make all", {}, "", &remembering, {}, &approved).ok());
  EXPECT_TRUE(approved);
  const Guard lenient = guardFor(*presetJson("default"), AskFallback::kAllow);
  approved = false;
  EXPECT_TRUE(lenient.checkCommand("make", {}, "", nullptr, {}, &approved).ok());
  EXPECT_TRUE(approved);
}

TEST(FileRules, JudgeReadAndWriteAsTheSandboxTakesThem) {
  const Guard g = guardFor(*presetJson("default"));
  const auto& rules = *g.fileRules();
  EXPECT_EQ(rules.judge("src/a.c"), (PathActions{ViewAction::kAllow, ViewAction::kAsk}));
  EXPECT_EQ(rules.judge(".env"), (PathActions{ViewAction::kDeny, ViewAction::kDeny}));
  EXPECT_EQ(rules.judge(".git/config"), (PathActions{ViewAction::kAllow, ViewAction::kDeny}));
  EXPECT_EQ(g.fileRules(), g.fileRules());  // one object for the guard's life
  // Where nobody can be asked and the user chose so, ask is allow.
  const Guard lenient = guardFor(*presetJson("default"), AskFallback::kAllow);
  EXPECT_EQ(lenient.fileRules()->judge("src/a.c"),
            (PathActions{ViewAction::kAllow, ViewAction::kAllow}));
  const FileView plain{g.fileRules(), false}, approved{g.fileRules(), true};
  EXPECT_FALSE(plain.mayWrite(ViewAction::kAsk));
  EXPECT_TRUE(approved.mayWrite(ViewAction::kAsk));
  EXPECT_FALSE(approved.mayRead(ViewAction::kDeny));
}

TEST(NetworkRules, AllowAskAndDenyWithTheRuleThatDecided) {
  const Guard g =
      guardFor({{"extends", "default"},
                {"network",
                 {{"rules", json::array({{{"pattern", "pypi.org:443"}, {"action", "allow"}},
                                         {{"pattern", "127.0.0.2:*"}, {"action", "allow"}},
                                         {{"pattern", "*.github.com:443"}, {"action", "ask"}},
                                         {{"pattern", "*"}, {"action", "allow"}}})}}}});
  NetworkRules rules(g, nullptr, "execute");
  EXPECT_TRUE(rules.open());
  auto v = rules.judge("pypi.org", 443);
  EXPECT_TRUE(v.allow);
  EXPECT_FALSE(v.names_literal);
  EXPECT_EQ(v.rule, "network rule 1 (pypi.org:443)");
  v = rules.judge("127.0.0.2", 8080);
  EXPECT_TRUE(v.allow);
  EXPECT_TRUE(v.names_literal);  // the rule names the literal: a loopback alias may be reached
  v = rules.judge("127.0.0.1", 8080);
  EXPECT_TRUE(v.allow);  // by "*", which names no literal: the proxy refuses the address
  EXPECT_FALSE(v.names_literal);
  v = rules.judge("api.github.com", 443);  // asks, and nobody can be asked
  EXPECT_FALSE(v.allow);
  EXPECT_NE(v.reason.find("needs approval"), std::string::npos) << v.reason;
  // Every preset denies the network, and a ruleset without a section does too.
  for (const char* preset : {"default", "permissive", "readonly", "strict"}) {
    const Guard p = guardFor(*presetJson(preset));
    EXPECT_FALSE(NetworkRules(p, nullptr, "execute").open()) << preset;
    EXPECT_FALSE(NetworkRules(p, nullptr, "execute").judge("pypi.org", 443).allow);
  }
  const Guard own = guardFor({{"default", "allow"}});
  EXPECT_FALSE(NetworkRules(own, nullptr, "execute").open());
}

TEST(NetworkRules, AnAnswerHoldsForTheSessionAndNobodyIsAskedAfterTheCall) {
  const Guard g =
      guardFor({{"extends", "permissive"},
                {"network", {{"rules", json::array({{{"pattern", "*"}, {"action", "ask"}}})}}}});
  SessionGrants grants;
  Answering yes(true, &grants);
  NetworkRules call(g, &yes, "run_python");
  EXPECT_TRUE(call.judge("pypi.org", 443).allow);
  EXPECT_TRUE(call.judge("pypi.org", 443).allow);
  EXPECT_EQ(yes.asked, (std::vector<std::string>{"run_python wants to reach pypi.org:443"}));
  // A later call of the session is not asked again.
  Answering no(false, &grants);
  NetworkRules later(g, &no, "execute");
  EXPECT_TRUE(later.judge("pypi.org", 443).allow);
  EXPECT_FALSE(later.judge("example.com", 80).allow);
  EXPECT_FALSE(later.judge("example.com", 80).allow);
  EXPECT_EQ(no.asked.size(), 1u);
  // After the call, what was answered holds and nobody else is asked.
  later.detach();
  EXPECT_TRUE(later.judge("pypi.org", 443).allow);
  EXPECT_FALSE(later.judge("other.org", 443).allow);
  EXPECT_EQ(no.asked.size(), 1u);
  EXPECT_EQ(NetworkRules::target("::1", 443), "[::1]:443");
}

}  // namespace
}  // namespace byd::permissions
