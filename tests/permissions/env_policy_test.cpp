#include "permissions/env_policy.h"

#include <gtest/gtest.h>

#include "permissions/guard.h"
#include "permissions/presets.h"

namespace byd::permissions {
namespace {

using nlohmann::json;

Guard guardFor(const json& doc) {
  auto rs = Ruleset::fromJson(doc);
  EXPECT_TRUE(rs.ok()) << rs.status().message();
  return Guard(std::move(*rs), AskFallback::kDeny);
}

// The review's ruleset: only `echo hello` and `git status*` may run.
Guard echoAndGitStatus() {
  return guardFor({{"default", "deny"},
                   {"execute",
                    {{"rules",
                      {{{"pattern", "echo hello"}, {"action", "allow"}},
                       {{"pattern", "git status*"}, {"action", "allow"}}}}}}});
}

TEST(EnvPolicy, NamesThatChangeWhatRuns) {
  for (const char* name : {"BASH_ENV",
                           "ENV",
                           "PROMPT_COMMAND",
                           "SHELLOPTS",
                           "BASHOPTS",
                           "PS4",
                           "PATH",
                           "BASH_FUNC_f%%",
                           "LD_PRELOAD",
                           "LD_AUDIT",
                           "GIT_CONFIG_COUNT",
                           "GIT_CONFIG_KEY_0",
                           "GIT_CONFIG_GLOBAL",
                           "GIT_SSH_COMMAND",
                           "GIT_EXEC_PATH",
                           "GIT_ASKPASS",
                           "PYTHONSTARTUP",
                           "PYTHONPATH",
                           "PYTHONHOME",
                           "NODE_OPTIONS",
                           "PERL5OPT",
                           "PERL5LIB",
                           "RUBYOPT",
                           "npm_config_script_shell",
                           "NPM_CONFIG_NODE_OPTIONS"}) {
    EXPECT_TRUE(changesWhatRuns(name)) << name;
  }
  for (const char* name : {"DEBUG", "LANG", "TERM", "PYTHONUNBUFFERED", "CI", "GIT_AUTHOR_NAME",
                           "NO_COLOR", "LDFLAGS_X", "PATHS"}) {
    EXPECT_FALSE(changesWhatRuns(name)) << name;
  }
  EXPECT_EQ(assignedName("PATH=/x"), "PATH");
  EXPECT_EQ(assignedName("a[1]=x"), "a");
  EXPECT_EQ(assignedName("PATH+=:/x"), "PATH");
}

TEST(EnvPolicy, EnvThatRunsCodeIsDeniedWhereOnlyTheCommandIsAllowed) {
  const Guard g = echoAndGitStatus();
  EXPECT_EQ(g.decideCommand("echo hello", {}).action, Action::kAllow);
  EXPECT_EQ(g.decideCommand("echo hello", {{"DEBUG", "1"}}).action, Action::kAllow);
  const Decision d = g.decideCommand("echo hello", {{"BASH_ENV", "$(id >&2; touch pwned)"}});
  EXPECT_EQ(d.action, Action::kDeny);
  EXPECT_NE(d.description.find("BASH_ENV changes what runs, and no rule names it"),
            std::string::npos)
      << d.description;
  EXPECT_EQ(g.decideCommand("git status", {{"GIT_CONFIG_COUNT", "1"},
                                           {"GIT_CONFIG_KEY_0", "core.fsmonitor"},
                                           {"GIT_CONFIG_VALUE_0", "id >&2; false"}})
                .action,
            Action::kDeny);
  // The message the caller gets names the variable.
  const Status s = g.checkCommand("echo hello", {{"LD_PRELOAD", "/tmp/x.so"}}, "", nullptr);
  EXPECT_EQ(s.code(), Code::kPermissionDenied);
  EXPECT_NE(s.message().find("LD_PRELOAD changes what runs"), std::string::npos) << s.message();
}

TEST(EnvPolicy, AssignmentsInTheLineAreJudgedToo) {
  const Guard g = echoAndGitStatus();
  for (const char* line :
       {"BASH_ENV='$(touch pwned)' echo hello", "env LD_PRELOAD=/tmp/x.so echo hello",
        "PATH=./bin:$PATH git status", "CDPATH=/ ; echo hello", "export PATH=./bin; git status",
        "declare -x BASH_ENV=x; echo hello", "echo hello; GIT_SSH_COMMAND=x git status"}) {
    EXPECT_EQ(g.decideCommand(line, {}).action, Action::kDeny) << line;
  }
  EXPECT_EQ(g.decideCommand("DEBUG=1 echo hello", {}).action, Action::kAllow);
  // IFS splits expansions only, and shells reset it at start.
  EXPECT_FALSE(changesWhatRuns("IFS"));
  EXPECT_EQ(g.decideCommand("IFS=, echo hello", {}).action, Action::kAllow);
}

TEST(EnvPolicy, EvenPermissiveNeedsARuleThatNamesTheVariable) {
  const Guard permissive = guardFor(*presetJson("permissive"));
  EXPECT_EQ(permissive.decideCommand("pytest -q", {{"PYTHONPATH", "src"}}).action, Action::kDeny);
  EXPECT_EQ(permissive.decideCommand("make", {{"CFLAGS", "-O2"}}).action, Action::kAllow);
  const Guard named = guardFor({{"default", "allow"},
                                {"execute",
                                 {{"rules",
                                   {{{"pattern", "PYTHONPATH=src pytest*"}, {"action", "allow"}},
                                    {{"pattern", "PATH=* *"}, {"action", "deny"}}}}}}});
  EXPECT_EQ(named.decideCommand("pytest -q", {{"PYTHONPATH", "src"}}).action, Action::kAllow);
  EXPECT_EQ(named.decideCommand("PYTHONPATH=src pytest -q", {}).action, Action::kAllow);
  // A rule that matches but does not name the variable does not allow it.
  EXPECT_EQ(named.decideCommand("pytest -q", {{"PYTHONPATH", "evil"}}).action, Action::kDeny);
  EXPECT_EQ(named.decideCommand("PATH=/x ls", {}).action, Action::kDeny);
}

// Records what the user would be shown.
class RecordingApprover : public Approver {
 public:
  Result<Answer> approve(const Question& q) override {
    shown = q.shown;
    return Answer::kNo;
  }
  std::string shown;
};

TEST(EnvPolicy, TheApproverIsShownTheWholeLineItsVariablesAndDirectory) {
  const Guard strict = guardFor(*presetJson("strict"));
  const std::string line =
      "echo \"running the unit tests\"" + std::string(220, ' ') + "; echo HIDDEN >&2";
  RecordingApprover approver;
  EXPECT_FALSE(strict.checkCommand(line, {{"DEBUG", "1"}}, "src", &approver).ok());
  EXPECT_EQ(approver.shown, line + "\n\nwith these variables:\n  DEBUG=1\n\nin the directory src");
}

}  // namespace
}  // namespace byd::permissions
