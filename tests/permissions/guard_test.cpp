#include "permissions/guard.h"

#include <gtest/gtest.h>

#include <thread>

#include "backends/state/state_backend.h"
#include "permissions/decision_trail.h"
#include "permissions/guarded_backend.h"
#include "permissions/presets.h"

namespace byd::permissions {
namespace {

using nlohmann::json;

Guard guardFor(const json& doc, AskFallback fallback = AskFallback::kDeny) {
  auto rs = Ruleset::fromJson(doc);
  EXPECT_TRUE(rs.ok()) << rs.status().message();
  return Guard(std::move(*rs), fallback);
}

Guard presetGuard(std::string_view name) { return guardFor(*presetJson(name)); }

// An approver that answers from a script and records what it was asked.
class ScriptedApprover : public Approver {
 public:
  explicit ScriptedApprover(Result<Answer> answer, SessionGrants* grants = nullptr)
      : answer_(std::move(answer)), grants_(grants) {}
  explicit ScriptedApprover(bool yes) : ScriptedApprover(yes ? Answer::kYes : Answer::kNo) {}
  Result<Answer> approve(const Question& q) override {
    asked.push_back(std::string(operationName(q.op)) + " " + std::string(q.shown));
    std::string remember;
    for (const std::string& r : q.remember) remember += (remember.empty() ? "" : "; ") + r;
    offered.push_back(remember);
    return answer_;
  }
  SessionGrants* grants() override { return grants_; }
  std::vector<std::string> asked, offered;

 private:
  Result<Answer> answer_;
  SessionGrants* grants_;
};

class OnlyGitStatusAndLs : public ::testing::TestWithParam<const char*> {};

TEST_P(OnlyGitStatusAndLs, IsNotAllowed) {
  Guard g = guardFor({{"default", "deny"},
                      {"execute",
                       {{"rules",
                         {{{"pattern", "git status*"}, {"action", "allow"}},
                          {{"pattern", "ls*"}, {"action", "allow"}}}}}}});
  EXPECT_NE(g.decide(Operation::kExecute, GetParam()).action, Action::kAllow) << GetParam();
  EXPECT_FALSE(g.check(Operation::kExecute, GetParam(), nullptr).ok());
}

INSTANTIATE_TEST_SUITE_P(Lines, OnlyGitStatusAndLs,
                         ::testing::Values("git status && touch p", "git status; touch p",
                                           "git status | sh", "git status $(touch p)",
                                           "git status `touch p`", "git status\ntouch p",
                                           "ls > ~/.bashrc", "echo $[ x='a[$(touch F)]', x ]",
                                           "env touch p", "sudo touch p", "bash -c 'touch p'",
                                           "/usr/bin/touch p", "git statusx", "ls; eval x"));

TEST(Guard, AllowedLinesUnderGitStatusAndLs) {
  Guard g = guardFor({{"default", "deny"},
                      {"execute",
                       {{"rules",
                         {{{"pattern", "git status*"}, {"action", "allow"}},
                          {{"pattern", "ls*"}, {"action", "allow"}}}}}}});
  for (const char* line :
       {"git status", "git status --short", "ls -la", "ls && git status", "ls 2>/dev/null | ls"}) {
    EXPECT_EQ(g.decide(Operation::kExecute, line).action, Action::kAllow) << line;
  }
}

class DangerousSpellings : public ::testing::TestWithParam<const char*> {};

TEST_P(DangerousSpellings, AreDeniedEvenWhenEverythingElseIsAllowed) {
  Guard g = presetGuard("permissive");
  Decision d = g.decide(Operation::kExecute, GetParam());
  EXPECT_EQ(d.action, Action::kDeny) << GetParam() << " -> " << d.source;
}

INSTANTIATE_TEST_SUITE_P(Lines, DangerousSpellings,
                         ::testing::Values("sudo rm -rf /", "rm -fr /", "rm -r -f /", "rm -rf /*",
                                           "mkfs.ext4 /dev/sda1", "dd if=/dev/zero of=/dev/sda",
                                           ":(){ :|:& };:", "cd /tmp && sudo rm -rf ~",
                                           "bash -c 'rm -rf /'", "nohup shutdown -h now"));

TEST(Guard, WhatIsKnownOnlyWhenTheLineRunsIsAskAtBest) {
  Guard g = presetGuard("permissive");
  Decision d = g.decide(Operation::kExecute, "make && $CMD --fast");
  EXPECT_EQ(d.action, Action::kAsk);
  EXPECT_EQ(d.source, "what it runs is known only when the line runs");
  EXPECT_EQ(d.description, "'$CMD --fast' (line 1, column 9): its name '$CMD' is an expansion");
  d = g.decide(Operation::kExecute, "echo `if`");
  EXPECT_EQ(d.action, Action::kAsk);
  EXPECT_EQ(d.source, "some of what the line runs cannot be seen before it runs");
  // A deny rule still matches the text of a command that is otherwise unknown.
  EXPECT_EQ(g.decide(Operation::kExecute, "$X; rm -rf /").action, Action::kDeny);
}

TEST(Guard, OrdinaryBashRunsUnderPermissive) {
  Guard g = presetGuard("permissive");
  for (const char* line : {"cat > x.py <<'EOF'\nprint(1)\nEOF\npython3 x.py",
                           "for i in 1 2 3 4; do echo tick$i; sleep 0.8; done",
                           "git init && git add f && echo x > f && git add f",
                           "printf 'int main(){}' > h.c && gcc h.c", "f() { echo hi; }; f",
                           "case $1 in a) echo a;; esac", "[[ -f x && $y =~ ^a(b|c)$ ]] && echo y",
                           "diff <(sort a) <(sort b)", "exec 3>log; echo x >&3",
                           "trap 'rm -f t' EXIT", "time ( make )", "while :; do break; done",
                           "a=(1 2); declare -A m=([k]=v); echo ${a[@]} $((1+2)) {1..3}"}) {
    const Decision d = g.decide(Operation::kExecute, line);
    EXPECT_EQ(d.action, Action::kAllow) << line << ": " << d.source << " " << d.description;
  }
}

TEST(Guard, JudgesEveryRedirectionAsTheFileToolsWould) {
  Guard permissive = presetGuard("permissive");
  Decision d = permissive.decide(Operation::kExecute, "while read l; do echo \"$l\"; done < .env");
  EXPECT_EQ(d.action, Action::kDeny);
  EXPECT_EQ(d.description,
            "secrets are never read or written (the redirection < at line 1, column 34 reads "
            "'.env')");
  EXPECT_EQ(permissive.decide(Operation::kExecute, "echo x > /etc/passwd").action, Action::kDeny);
  EXPECT_EQ(permissive.decide(Operation::kExecute, "echo x > src/../.env.local").action,
            Action::kDeny);
  EXPECT_EQ(permissive.decide(Operation::kExecute, "ls >/dev/null 2>&1").action, Action::kAllow);
  // The command's working directory: `../.env` from `src` is the workspace's `.env`.
  EXPECT_EQ(permissive.checkCommand("cat < ../.env", {}, "src", nullptr).code(),
            Code::kPermissionDenied);
  // Under default, writing asks, and what the user may grant for the session is the directory.
  Guard def = presetGuard("default");
  SessionGrants grants;
  ScriptedApprover yes(Answer::kYesForSession, &grants);
  EXPECT_TRUE(def.checkCommand("true > out/a.txt", {}, "", &yes).ok());
  EXPECT_EQ(
      yes.offered,
      (std::vector<std::string>{"execute of commands matching 'true*'; write under 'out/**'"}));
  EXPECT_EQ(def.decideCommand("true > out/b.txt", {}, &grants).action, Action::kAllow);
  EXPECT_EQ(def.decideCommand("true > elsewhere.txt", {}, &grants).action, Action::kAsk);
  // A path the rules deny is denied however it is reached.
  EXPECT_EQ(def.decideCommand("f() { cat; }; f < id_rsa", {}).action, Action::kDeny);
}

TEST(Guard, RefusesWhatIsNotBashWithThePosition) {
  Guard g = presetGuard("permissive");
  const Status s = g.check(Operation::kExecute, "if true\nthen echo; done", nullptr);
  EXPECT_EQ(s.code(), Code::kPermissionDenied);
  EXPECT_EQ(s.message(),
            "execute denied for 'if true then echo; done': the line is not valid bash (line 2, "
            "column 12: expected 'fi' but found 'done')");
}

TEST(Guard, DeniesAForkBombWhateverItsName) {
  for (const char* preset : {"permissive", "default"}) {
    Guard g = presetGuard(preset);
    const Decision d = g.decide(Operation::kExecute, "bomb() { bomb | bomb & }; bomb");
    EXPECT_EQ(d.action, Action::kDeny) << preset;
    EXPECT_EQ(d.description,
              "the function 'bomb' starts copies of itself in parallel, a fork bomb, which is "
              "never allowed");
  }
  EXPECT_EQ(presetGuard("permissive").decide(Operation::kExecute, ": && true").action,
            Action::kAllow);
}

TEST(Guard, FindsDeniedCommandsInsideEveryConstruct) {
  Guard g = presetGuard("permissive");
  for (const char* line :
       {"if false; then rm -rf ~; fi", "f() { cat .env; }", "x=$(cat .env)",
        "false && cat <<EOF\n$(rm -rf /)\nEOF", "while read l; do echo $l; done < .env",
        "for f in a; do sudo rm -rf /; done", "case x in *) mkfs.ext4 /dev/sda1;; esac",
        "echo ${x:-$(rm -rf ~)}", "diff <(cat .env) a", "eval 'rm -rf /'", "trap 'rm -rf ~' EXIT",
        "bash -c 'f() { cat .env; }'", "[[ $(cat .env) ]]", "(( $(rm -rf /) ))", "echo `cat .env`",
        "a=($(cat .env))", "coproc { cat .env; }", "time rm -rf /"}) {
    EXPECT_EQ(g.decide(Operation::kExecute, line).action, Action::kDeny) << line;
  }
}

TEST(Guard, DeniedMessageNamesOperationTargetAndReason) {
  Guard g = presetGuard("default");
  Status s = g.check(Operation::kRead, ".env", nullptr);
  EXPECT_EQ(s.code(), Code::kPermissionDenied);
  EXPECT_EQ(s.message(), "read denied for '.env': secrets are never read or written");
}

TEST(Guard, AskGoesToTheApprover) {
  Guard g = presetGuard("default");
  ScriptedApprover yes(true), no(false);
  EXPECT_TRUE(g.check(Operation::kWrite, "a.txt", &yes).ok());
  EXPECT_EQ(yes.asked, (std::vector<std::string>{"write a.txt"}));
  Status s = g.check(Operation::kWrite, "a.txt", &no);
  EXPECT_EQ(s.message(), "write for 'a.txt' needs approval (write default) and the user declined");
}

TEST(Guard, AskWithoutAnswerFallsBack) {
  ScriptedApprover silent(unimplemented("the client does not support elicitation"));
  Status s = presetGuard("default").check(Operation::kWrite, "a.txt", &silent);
  EXPECT_EQ(s.message(),
            "write for 'a.txt' needs approval (write default) and none was given: the client "
            "does not support elicitation");
  Guard lenient = guardFor(*presetJson("default"), AskFallback::kAllow);
  EXPECT_TRUE(lenient.check(Operation::kWrite, "a.txt", &silent).ok());
  // The fallback never overrides a deny.
  EXPECT_FALSE(lenient.check(Operation::kWrite, ".env", &silent).ok());
}

TEST(Guard, AYesForTheSessionCoversTheFilesDirectory) {
  Guard g = presetGuard("default");
  SessionGrants grants;
  ScriptedApprover always(Answer::kYesForSession, &grants);
  EXPECT_TRUE(g.check(Operation::kWrite, "src/app/a.py", &always).ok());
  EXPECT_EQ(always.offered, (std::vector<std::string>{"write under 'src/app/**'"}));
  // Below the directory: not asked again.
  EXPECT_TRUE(g.check(Operation::kWrite, "src/app/b.py", &always).ok());
  EXPECT_TRUE(g.check(Operation::kWrite, "src/app/deep/c.py", &always).ok());
  EXPECT_EQ(always.asked.size(), 1u);
  // Elsewhere, and for another operation: asked.
  EXPECT_TRUE(g.check(Operation::kWrite, "src/other.py", &always).ok());
  EXPECT_TRUE(g.check(Operation::kEdit, "src/app/a.py", &always).ok());
  EXPECT_EQ(always.asked, (std::vector<std::string>{"write src/app/a.py", "write src/other.py",
                                                    "edit src/app/a.py"}));
  // A file at the root is remembered alone.
  EXPECT_TRUE(g.check(Operation::kWrite, "notes.md", &always).ok());
  EXPECT_EQ(always.offered.back(), "write of 'notes.md'");
  ScriptedApprover no(false);
  no.asked.clear();
  // What the rules deny stays denied.
  EXPECT_FALSE(g.check(Operation::kWrite, "src/app/.env", &always).ok());
  // A grant is the session's: an approver without it asks again.
  ScriptedApprover other(Answer::kNo, nullptr);
  EXPECT_FALSE(g.check(Operation::kWrite, "src/app/b.py", &other).ok());
  EXPECT_EQ(other.offered, (std::vector<std::string>{""}));
}

TEST(Guard, AYesForTheSessionCoversTheCommandAndItsSubcommand) {
  Guard g = presetGuard("default");
  ASSERT_EQ(g.decide(Operation::kExecute, "git commit -m x").action, Action::kAsk);
  SessionGrants grants;
  ScriptedApprover always(Answer::kYesForSession, &grants);
  EXPECT_TRUE(g.check(Operation::kExecute, "git commit -m 'first'", &always).ok());
  EXPECT_EQ(always.offered,
            (std::vector<std::string>{"execute of commands matching 'git commit*'"}));
  EXPECT_TRUE(g.check(Operation::kExecute, "git commit --amend", &always).ok());
  EXPECT_EQ(always.asked.size(), 1u);
  // Only the command not covered is offered in a line with both.
  ScriptedApprover once(Answer::kYes, &grants);
  EXPECT_TRUE(g.check(Operation::kExecute, "git commit -q && git push", &once).ok());
  EXPECT_EQ(once.offered, (std::vector<std::string>{"execute of commands matching 'git push*'"}));
  // "git commitx" is no "git commit".
  EXPECT_TRUE(g.check(Operation::kExecute, "git commitx", &once).ok());
  EXPECT_EQ(once.asked.size(), 2u);
  // A line with something known only when it runs is asked about every time, with nothing to
  // remember.
  ScriptedApprover again(Answer::kYesForSession, &grants);
  EXPECT_TRUE(g.check(Operation::kExecute, "git commit -q; $GIT commit", &again).ok());
  EXPECT_TRUE(g.check(Operation::kExecute, "git commit -m `if`", &again).ok());
  EXPECT_EQ(again.asked.size(), 2u);
  EXPECT_EQ(again.offered, (std::vector<std::string>{"", ""}));
  // A variable that changes what runs is never covered.
  EXPECT_FALSE(g.check(Operation::kExecute, "GIT_DIR=/tmp/x git commit", &once).ok());
}

TEST(Guard, AYesForTheSessionCoversAnyCodeForPython) {
  Guard g = guardFor({{"default", "allow"}, {"python", {{"default", "ask"}}}});
  SessionGrants grants;
  ScriptedApprover always(Answer::kYesForSession, &grants);
  EXPECT_TRUE(g.check(Operation::kPython, "print(1)", &always).ok());
  EXPECT_TRUE(g.check(Operation::kPython, "print(2)", &always).ok());
  EXPECT_EQ(always.asked, (std::vector<std::string>{"python print(1)"}));
  EXPECT_EQ(always.offered, (std::vector<std::string>{"python of any code"}));
}

TEST(Guard, AMoveAsksOnceAboutBothPaths) {
  Guard g = presetGuard("default");
  ScriptedApprover yes(true);
  EXPECT_TRUE(g.checkMove("a.txt", "src/b.txt", &yes).ok());
  EXPECT_EQ(yes.asked, (std::vector<std::string>{"move a.txt -> src/b.txt"}));
  // Either path denied denies, without asking.
  ScriptedApprover never(true);
  EXPECT_EQ(g.checkMove("a.txt", ".env", &never).message(),
            "move denied for '.env': secrets are never read or written");
  EXPECT_EQ(g.checkMove(".git", "old-git", &never).message(),
            "move denied for '.git': the repository's history is never moved or deleted");
  EXPECT_TRUE(never.asked.empty());
  // Both covered for the session: not asked.
  SessionGrants grants;
  ScriptedApprover always(Answer::kYesForSession, &grants);
  EXPECT_TRUE(g.checkMove("src/a.txt", "lib/a.txt", &always).ok());
  EXPECT_EQ(always.offered, (std::vector<std::string>{"move under 'src/**'; move under 'lib/**'"}));
  EXPECT_TRUE(g.checkMove("lib/a.txt", "src/c.txt", &always).ok());
  EXPECT_EQ(always.asked.size(), 1u);
}

TEST(Guard, DeleteAndMoveHaveTheirOwnRulesOrWrites) {
  Guard permissive = presetGuard("permissive");
  EXPECT_EQ(permissive.decide(Operation::kDelete, "build/out.o").action, Action::kAllow);
  EXPECT_EQ(permissive.decide(Operation::kDelete, ".git").action, Action::kDeny);
  EXPECT_EQ(permissive.decide(Operation::kDelete, "vendor/lib/.git/HEAD").action, Action::kDeny);
  EXPECT_EQ(permissive.decide(Operation::kDelete, "config/.env").action, Action::kDeny);
  EXPECT_EQ(permissive.decide(Operation::kMkdir, "/etc/x").action, Action::kDeny);
  // readonly denies them all, so their tools are not offered.
  Guard readonly = presetGuard("readonly");
  for (Operation op : {Operation::kMkdir, Operation::kMove, Operation::kDelete}) {
    EXPECT_TRUE(readonly.hidden(op)) << operationName(op);
  }
  // A ruleset without a section for them judges them by its write section, and says so.
  Guard own = guardFor({{"default", "allow"},
                        {"write", {{"rules", {{{"pattern", "docs/**"}, {"action", "deny"}}}}}}});
  const Decision d = own.decide(Operation::kDelete, "docs/a.md");
  EXPECT_EQ(d.action, Action::kDeny);
  EXPECT_EQ(d.source, "write rule 1 (docs/**)");
  EXPECT_EQ(own.decide(Operation::kMove, "docs/a.md").action, Action::kDeny);
  EXPECT_EQ(own.decide(Operation::kMkdir, "src").action, Action::kAllow);
}

TEST(Guard, AFileThatExtendsAPresetSpeaksForMkdirMoveAndDeleteInItsWriteSection) {
  auto doc =
      extendPreset({{"extends", "permissive"},
                    {"write", {{"rules", {{{"pattern", "protected/**"}, {"action", "deny"}}}}}}});
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  Guard g = guardFor(*doc);
  for (Operation op :
       {Operation::kWrite, Operation::kMkdir, Operation::kMove, Operation::kDelete}) {
    EXPECT_EQ(g.decide(op, "protected/x").action, Action::kDeny) << operationName(op);
    EXPECT_EQ(g.decide(op, "src/x").action, Action::kAllow) << operationName(op);
  }
  // The preset's own rules for them stay.
  EXPECT_EQ(g.decide(Operation::kDelete, ".git").action, Action::kDeny);
  EXPECT_EQ(g.decide(Operation::kDelete, "sub/.GIT").action, Action::kDeny);  // casefold disks
}

TEST(GuardedBackend, AMoveNeverBringsWhatIsKeptFromReadingWhereItCouldBeRead) {
  StateBackend state;
  ASSERT_TRUE(state.write("private/key", "k", WriteMode::kOverwrite).ok());
  ASSERT_TRUE(state.write("vault/inner", "i", WriteMode::kOverwrite).ok());
  Guard g = guardFor({{"default", "allow"},
                      {"read",
                       {{"rules",
                         {{{"pattern", "**/private/**"}, {"action", "deny"}},
                          {{"pattern", "vault/**"}, {"action", "deny"}}}}}}});
  GuardedBackend mover(state, g, Operation::kMove, nullptr);
  auto moved = mover.move("private/key", "key.txt", false);
  ASSERT_FALSE(moved.ok());
  EXPECT_EQ(moved.status().message(),
            "move denied for 'private/key', which the rules keep from reading, and 'key.txt' could "
            "be read");
  moved = mover.move("vault", "open", false);
  ASSERT_FALSE(moved.ok());
  EXPECT_EQ(moved.status().message(),
            "move denied for 'vault': it holds 'vault/inner', which the rules keep from "
            "reading, and 'open/inner' could be read");
  EXPECT_TRUE(state.stat("vault/inner").ok());
  // Where it stays hidden, it may move.
  EXPECT_TRUE(mover.move("private/key", "other/private/key", false).ok());
  EXPECT_TRUE(state.stat("other/private/key").ok());
}

TEST(GuardedBackend, AnEntryWhoseRuleAsksIsAskedAboutOnce) {
  StateBackend state;
  ASSERT_TRUE(state.write("data/prod.db", "p", WriteMode::kOverwrite).ok());
  ASSERT_TRUE(state.write("data/test.db", "t", WriteMode::kOverwrite).ok());
  ASSERT_TRUE(state.write("data/notes.txt", "n", WriteMode::kOverwrite).ok());
  Guard g = guardFor({{"default", "allow"},
                      {"delete", {{"rules", {{{"pattern", "data/*.db"}, {"action", "ask"}}}}}}});
  ScriptedApprover no(false);
  GuardedBackend deleter(state, g, Operation::kDelete, &no);
  auto removed = deleter.remove("data", true);
  ASSERT_FALSE(removed.ok());
  ASSERT_EQ(no.asked.size(), 1u);
  EXPECT_TRUE(no.asked[0].starts_with("delete data (which holds data/")) << no.asked[0];
  EXPECT_TRUE(state.stat("data/prod.db").ok());
  ScriptedApprover yes(true);
  GuardedBackend approved(state, g, Operation::kDelete, &yes);
  EXPECT_TRUE(approved.remove("data", true).ok());
  EXPECT_EQ(yes.asked.size(), 1u);
  EXPECT_FALSE(state.stat("data").ok());
}

TEST(GuardedBackend, TheRootIsRefusedBeforeAnyQuestion) {
  StateBackend state;
  Guard g = presetGuard("default");
  ScriptedApprover yes(true);
  GuardedBackend deleter(state, g, Operation::kDelete, &yes);
  EXPECT_EQ(deleter.normalize(".").status().message(), "the workspace root cannot be deleted");
  GuardedBackend mover(state, g, Operation::kMove, &yes);
  EXPECT_FALSE(mover.normalize("/workspace").ok());
  EXPECT_TRUE(yes.asked.empty());
}

TEST(GuardedBackend, ADirectoryHoldingWhatTheRulesDenyIsNotDeletedOrMoved) {
  StateBackend state;
  ASSERT_TRUE(state.write("cfg/app.toml", "x", WriteMode::kOverwrite).ok());
  ASSERT_TRUE(state.write("cfg/deep/.env", "KEY=1", WriteMode::kOverwrite).ok());
  Guard g = presetGuard("permissive");
  GuardedBackend deleter(state, g, Operation::kDelete, nullptr);
  ASSERT_TRUE(deleter.normalize("cfg").ok());
  auto removed = deleter.remove("cfg", true);
  ASSERT_FALSE(removed.ok());
  EXPECT_EQ(removed.status().message(),
            "delete denied for 'cfg': it holds 'cfg/deep/.env', which the rules deny for delete "
            "(secrets are never read or written)");
  GuardedBackend mover(state, g, Operation::kMove, nullptr);
  EXPECT_FALSE(mover.move("cfg", "config", false).ok());
  EXPECT_TRUE(state.stat("cfg/deep/.env").ok());
  EXPECT_FALSE(state.stat("config").ok());
  // Where the entries would land counts too.
  ASSERT_TRUE(state.write("docs/a.md", "a", WriteMode::kOverwrite).ok());
  Guard locked =
      guardFor({{"default", "allow"},
                {"move", {{"rules", {{{"pattern", "locked/**"}, {"action", "deny"}}}}}}});
  GuardedBackend into(state, locked, Operation::kMove, nullptr);
  auto moved = into.move("docs", "locked", false);
  ASSERT_FALSE(moved.ok());
  EXPECT_EQ(moved.status().message(),
            "move denied for 'docs': it holds 'docs/a.md', which would become 'locked/a.md', "
            "which the rules deny (by move rule 1 (locked/**))");
  EXPECT_TRUE(into.move("docs", "open", false).ok());
  EXPECT_TRUE(state.stat("open/a.md").ok());
}

TEST(GuardedBackend, HidesDeniedEntriesAndCountsThem) {
  StateBackend state;
  ASSERT_TRUE(state.write("a.txt", "a", WriteMode::kOverwrite).ok());
  ASSERT_TRUE(state.write(".env", "KEY=1", WriteMode::kOverwrite).ok());
  ASSERT_TRUE(state.write("cfg/.env.prod", "KEY=2", WriteMode::kOverwrite).ok());
  Guard g = presetGuard("default");
  GuardedBackend guarded(state, g, Operation::kLs, nullptr);
  auto entries = guarded.list("");
  ASSERT_TRUE(entries.ok());
  std::vector<std::string> names;
  for (const auto& e : *entries) names.push_back(e.name);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"a.txt", "cfg"}));
  ASSERT_TRUE(guarded.list("cfg").ok());
  EXPECT_EQ(guarded.hiddenCount(), 2u);
  EXPECT_EQ(guarded.read(".env", 0, 100).status().code(), Code::kPermissionDenied);
  EXPECT_EQ(guarded.stat("cfg/.env.prod").status().code(), Code::kPermissionDenied);
}

TEST(GuardedBackend, MainTargetIsCheckedInNormalize) {
  StateBackend state;
  Guard g = presetGuard("readonly");
  GuardedBackend writer(state, g, Operation::kWrite, nullptr);
  auto key = writer.normalize("notes.txt");
  ASSERT_FALSE(key.ok());
  EXPECT_EQ(key.status().message(), "write denied for 'notes.txt': by write default");
  GuardedBackend reader(state, g, Operation::kRead, nullptr);
  EXPECT_TRUE(reader.normalize("notes.txt").ok());
}

}  // namespace
}  // namespace byd::permissions

namespace byd::permissions {
namespace {

// A backend where "notes.txt" is a symlink to ".env".
class LinkingBackend : public StateBackend {
 public:
  Result<std::string> realKey(const std::string& key) const override {
    return key == "notes.txt" ? std::string(".env") : key;
  }
};

TEST(GuardedBackend, SymlinkToASecretIsDenied) {
  LinkingBackend state;
  ASSERT_TRUE(state.write("notes.txt", "API_KEY=1", WriteMode::kOverwrite).ok());
  Guard g = guardFor(*presetJson("permissive"));
  GuardedBackend reader(state, g, Operation::kRead, nullptr);
  auto key = reader.normalize("notes.txt");
  ASSERT_FALSE(key.ok());
  EXPECT_EQ(key.status().message(),
            "read denied for 'notes.txt': it leads to '.env', which the rules deny");
  GuardedBackend grep(state, g, Operation::kGrep, nullptr);
  EXPECT_EQ(grep.readStream("notes.txt", 1024, [](std::string_view) { return true; }).message(),
            "read denied for 'notes.txt': it leads to '.env', which the rules deny");
  GuardedBackend writer(state, g, Operation::kWrite, nullptr);
  EXPECT_FALSE(writer.normalize("notes.txt").ok());
}

// A backend whose "notes.txt" becomes a symlink to ".env" when told, as another process could
// make it in the middle of a tool call.
class SwappingBackend : public StateBackend {
 public:
  Result<std::string> realKey(const std::string& key) const override {
    ++looks;
    return key == "notes.txt" && swapped ? std::string(".env") : key;
  }
  bool swapped = false;
  mutable int looks = 0;
};

TEST(GuardedBackend, OnlyTheFirstReadAfterNormalizeSharesItsLookAtTheRealPath) {
  SwappingBackend state;
  ASSERT_TRUE(state.write("notes.txt", "plain", WriteMode::kOverwrite).ok());
  Guard g = guardFor(*presetJson("permissive"));
  GuardedBackend reader(state, g, Operation::kRead, nullptr);
  ASSERT_TRUE(reader.normalize("notes.txt").ok());
  EXPECT_EQ(state.looks, 1);
  ASSERT_TRUE(reader.read("notes.txt", 0, 100).ok());
  EXPECT_EQ(state.looks, 1) << "the first read asked again what normalize() had just asked";
  // Swapped between two reads of one call (a file read in chunks): the next read looks again.
  state.swapped = true;
  EXPECT_EQ(reader.read("notes.txt", 0, 100).status().message(),
            "read denied for 'notes.txt': it leads to '.env', which the rules deny");

  SwappingBackend other;
  ASSERT_TRUE(other.write("notes.txt", "plain", WriteMode::kOverwrite).ok());
  GuardedBackend editor(other, g, Operation::kEdit, nullptr);
  ASSERT_TRUE(editor.normalize("notes.txt").ok());
  ASSERT_TRUE(editor.read("notes.txt", 0, 100).ok());
  EXPECT_EQ(other.looks, 1);
  other.swapped = true;
  EXPECT_FALSE(editor.read("notes.txt", 0, 100).ok());
  EXPECT_EQ(other.looks, 2);
}

}  // namespace
}  // namespace byd::permissions

namespace byd::permissions {
namespace {

TEST(DecisionTrail, NotesEachDecisionOnItsThreadWithTheRuleAndTheAnswer) {
  const Guard guard =
      guardFor(json{{"default", "allow"},
                    {"read", {{"rules", {{{"pattern", "**/.env"}, {"action", "deny"}}}}}},
                    {"write", {{"default", "ask"}}}});
  ScriptedApprover yes(true), no(false);
  DecisionTrail trail;
  EXPECT_TRUE(guard.check(Operation::kRead, "src/a.txt", nullptr).ok());
  EXPECT_FALSE(guard.check(Operation::kRead, "x/.env", nullptr).ok());
  EXPECT_TRUE(guard.check(Operation::kWrite, "out.txt", &yes).ok());
  EXPECT_FALSE(guard.check(Operation::kWrite, "out2.txt", &no).ok());
  EXPECT_FALSE(guard.check(Operation::kWrite, "out3.txt", nullptr).ok());
  std::thread([&] {
    EXPECT_TRUE(guard.check(Operation::kRead, "elsewhere", nullptr).ok());
  }).join();
  const auto& d = trail.decisions();
  ASSERT_EQ(d.size(), 5u) << "the other thread's decision is not this call's";
  EXPECT_EQ(d[0].target, "src/a.txt");
  EXPECT_EQ(d[0].action, Action::kAllow);
  EXPECT_EQ(d[1].action, Action::kDeny);
  EXPECT_NE(d[1].rule.find("**/.env"), std::string::npos) << d[1].rule;
  EXPECT_EQ(d[2].answer, "approved");
  EXPECT_EQ(d[3].answer, "refused");
  EXPECT_EQ(d[4].answer, "unanswered: denied by the fallback");
  for (const NotedDecision& n : d) EXPECT_FALSE(n.rule.empty());
}

TEST(DecisionTrail, NestedTrailsKeepTheirOwn) {
  const Guard guard = guardFor(json{{"default", "allow"}});
  DecisionTrail outer;
  EXPECT_TRUE(guard.check(Operation::kRead, "a", nullptr).ok());
  {
    DecisionTrail inner;
    EXPECT_TRUE(guard.check(Operation::kRead, "b", nullptr).ok());
    ASSERT_EQ(inner.decisions().size(), 1u);
    EXPECT_EQ(inner.decisions()[0].target, "b");
  }
  EXPECT_TRUE(guard.check(Operation::kRead, "c", nullptr).ok());
  ASSERT_EQ(outer.decisions().size(), 2u);
  EXPECT_EQ(outer.decisions()[1].target, "c");
}

}  // namespace
}  // namespace byd::permissions
