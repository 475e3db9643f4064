#include "permissions/ruleset.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "permissions/presets.h"

namespace byd::permissions {
namespace {

using nlohmann::json;

Ruleset load(const json& doc) {
  auto r = Ruleset::fromJson(doc);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? std::move(*r) : Ruleset::fromJson({{"default", "deny"}}).value();
}

TEST(Ruleset, FirstMatchingRuleWinsThenOperationDefaultThenGlobal) {
  Ruleset rs = load({{"default", "deny"},
                     {"read",
                      {{"default", "ask"},
                       {"rules",
                        {{{"pattern", "src/secret.txt"}, {"action", "deny"}, {"description", "no"}},
                         {{"pattern", "src/**"}, {"action", "allow"}},
                         {{"pattern", "src/*.txt"}, {"action", "deny"}}}}}}});
  EXPECT_EQ(rs.decide(Operation::kRead, "src/secret.txt").action, Action::kDeny);
  EXPECT_EQ(rs.decide(Operation::kRead, "src/secret.txt").description, "no");
  EXPECT_EQ(rs.decide(Operation::kRead, "src/secret.txt").source, "read rule 1 (src/secret.txt)");
  // Rule 2 comes before rule 3, so src/a.txt is allowed.
  EXPECT_EQ(rs.decide(Operation::kRead, "src/a.txt").action, Action::kAllow);
  EXPECT_EQ(rs.decide(Operation::kRead, "other.txt").action, Action::kAsk);
  EXPECT_EQ(rs.decide(Operation::kRead, "other.txt").source, "read default");
  EXPECT_EQ(rs.decide(Operation::kWrite, "src/a.txt").action, Action::kDeny);
  EXPECT_EQ(rs.decide(Operation::kWrite, "src/a.txt").source, "global default");
}

TEST(Ruleset, GlobStarDoesNotCrossSlash) {
  Ruleset rs = load(
      {{"default", "deny"}, {"read", {{"rules", {{{"pattern", "*.py"}, {"action", "allow"}}}}}}});
  EXPECT_EQ(rs.decide(Operation::kRead, "a.py").action, Action::kAllow);
  EXPECT_EQ(rs.decide(Operation::kRead, "pkg/a.py").action, Action::kDeny);
}

TEST(Ruleset, RegexIsFullyAnchored) {
  Ruleset rs =
      load({{"default", "allow"},
            {"read", {{"rules", {{{"regex", "logs/[0-9]+\\.log"}, {"action", "deny"}}}}}}});
  EXPECT_EQ(rs.decide(Operation::kRead, "logs/12.log").action, Action::kDeny);
  EXPECT_EQ(rs.decide(Operation::kRead, "old/logs/12.log").action, Action::kAllow);
  EXPECT_EQ(rs.decide(Operation::kRead, "logs/12.log.bak").action, Action::kAllow);
}

TEST(Ruleset, SeveralRegexesAreEachFullyAnchored) {
  Ruleset rs = load({{"default", "allow"},
                     {"read",
                      {{"rules",
                        {{{"regex", "logs/[0-9]+\\.log"}, {"action", "deny"}},
                         {{"regex", "tmp/.*"}, {"action", "ask"}},
                         {{"regex", ".*\\.bak"}, {"action", "deny"}}}}}}});
  EXPECT_EQ(rs.decide(Operation::kRead, "logs/12.log").action, Action::kDeny);
  EXPECT_EQ(rs.decide(Operation::kRead, "old/logs/12.log").action, Action::kAllow);
  EXPECT_EQ(rs.decide(Operation::kRead, "a/tmp/x").action, Action::kAllow);
  EXPECT_EQ(rs.decide(Operation::kRead, "tmp/x.bak").action, Action::kAsk);
  EXPECT_EQ(rs.decide(Operation::kRead, "tmp/x.bak").source, "read rule 2 (tmp/.*)");
  EXPECT_EQ(rs.decide(Operation::kRead, "x.bak").source, "read rule 3 (.*\\.bak)");
}

// Many globs are matched in one pass; the answer must be the first rule whose glob, alone,
// matches the path, with globs alone or mixed with a regex (which are matched one by one).
TEST(Ruleset, ManyRulesDecideAsTheFirstMatchingRuleAlone) {
  const std::vector<std::string> patterns = {
      "**/.env",  "**/*.pem", "src/**",      "src/*.txt", "*.md",    "**/.ssh/**", "docs/{a,b}/*",
      "**/test?", "[a-c]*/x", "**/*secret*", "deep/**/z", "**/.git", "b/**",       "**"};
  const std::vector<std::string> paths = {
      ".env",        "a/.env",  "a/b.pem",   "src/x.txt", "src/a/b.txt", "README.md",
      "a/README.md", ".ssh/k",  "h/.ssh/id", "docs/a/q",  "docs/c/q",    "test1",
      "x/testab",    "apple/x", "d/x",       "my_secret", "deep/z",      "deep/1/2/z",
      "r/.git",      "b/q",     "zzz",       "",          "caf\xC3\xA9", "\xFF/x"};
  for (const bool mixed : {false, true}) {
    json rules = json::array();
    std::vector<GlobMatcher> globs;
    for (size_t i = 0; i < patterns.size(); ++i) {
      rules.push_back({{"pattern", patterns[i]}, {"action", i % 2 ? "allow" : "deny"}});
      globs.push_back(GlobMatcher::compile(patterns[i]).value());
    }
    if (mixed) rules.push_back({{"regex", "never"}, {"action", "ask"}});
    Ruleset rs = load({{"default", "ask"}, {"read", {{"rules", rules}}}});
    for (const std::string& path : paths) {
      size_t first = 0;
      while (first < globs.size() && !globs[first].matches(path)) ++first;
      const Decision d = rs.decide(Operation::kRead, path);
      if (first == globs.size()) {
        EXPECT_EQ(d.source, "read default") << path;
      } else {
        EXPECT_EQ(d.source, "read rule " + std::to_string(first + 1) + " (" + patterns[first] + ")")
            << path << (mixed ? " (mixed)" : "");
      }
    }
  }
}

TEST(Ruleset, PythonRegexRules) {
  Ruleset rs = load({{"default", "allow"},
                     {"python",
                      {{"rules",
                        {{{"regex", ".*import socket.*"},
                          {"action", "deny"},
                          {"description", "no network"}}}}}}});
  EXPECT_EQ(rs.decide(Operation::kPython, "x = 1\nimport socket\ny = 2").action, Action::kDeny);
  EXPECT_EQ(rs.decide(Operation::kPython, "import os").action, Action::kAllow);
}

TEST(Ruleset, CommandPatternsMatchOnWordBoundaries) {
  Ruleset rs = load({{"default", "deny"},
                     {"execute",
                      {{"rules",
                        {{{"pattern", "git log*"}, {"action", "allow"}},
                         {{"pattern", "npm run *"}, {"action", "allow"}}}}}}});
  EXPECT_EQ(rs.decide(Operation::kExecute, "git log").action, Action::kAllow);
  EXPECT_EQ(rs.decide(Operation::kExecute, "git log --oneline -5").action, Action::kAllow);
  EXPECT_EQ(rs.decide(Operation::kExecute, "git logout").action, Action::kDeny);
  EXPECT_EQ(rs.decide(Operation::kExecute, "npm run build/x").action, Action::kAllow);
  EXPECT_EQ(rs.decide(Operation::kExecute, "npm run").action, Action::kDeny);
}

TEST(CommandPattern, Translation) {
  EXPECT_EQ(commandPatternToRegex("git status*"), "git\\ status(?: .*)?");
  EXPECT_EQ(commandPatternToRegex("ls *"), "ls\\ .*");
  EXPECT_EQ(commandPatternToRegex("a?c"), "a.c");
}

struct BadRuleset {
  json doc;
  std::string message;
};

class RulesetErrors : public ::testing::TestWithParam<BadRuleset> {};

TEST_P(RulesetErrors, NameThePlace) {
  auto r = Ruleset::fromJson(GetParam().doc);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(GetParam().message), std::string::npos)
      << r.status().message();
}

INSTANTIATE_TEST_SUITE_P(
    All, RulesetErrors,
    ::testing::Values(
        BadRuleset{{{"default", "deny"},
                    {"read", {{"rules", {{{"pattern", "src/[ab"}, {"action", "deny"}}}}}}},
                   "read.rules[0].pattern: invalid glob \"src/[ab\": unclosed '['"},
        BadRuleset{
            {{"default", "deny"}, {"read", {{"rules", {{{"regex", "(x"}, {"action", "deny"}}}}}}},
            "read.rules[0].regex: invalid regex '(x': missing )"},
        BadRuleset{{{"default", "deny"}, {"remove", {{"default", "allow"}}}},
                   "remove: unknown property"},
        BadRuleset{{{"default", "maybe"}}, "ruleset.default: must be one of"},
        BadRuleset{{{"default", "deny"},
                    {"write", {{"rules", {{{"pattern", "x"}, {"action", "perhaps"}}}}}}},
                   "ruleset.write.rules[0].action: must be one of"},
        BadRuleset{{{"default", "deny"}, {"write", {{"rules", {{{"action", "allow"}}}}}}},
                   "write.rules[0]: a rule needs exactly one of \"pattern\" or \"regex\""},
        BadRuleset{{{"read", {{"default", "allow"}}}}, "default: required property is missing"}));

TEST(Presets, AllLoad) {
  for (std::string_view name : presetNames()) {
    auto doc = presetJson(name);
    ASSERT_TRUE(doc.ok()) << name;
    auto rs = Ruleset::fromJson(*doc);
    EXPECT_TRUE(rs.ok()) << name << ": " << rs.status().message();
  }
  EXPECT_EQ(presetJson("lax").status().message(),
            "no ruleset preset 'lax' (presets: default, permissive, readonly, strict)");
}

// As the server loads them: each operation compiled on first use (AllLoad compiles them whole).
Ruleset preset(std::string_view name) {
  return Ruleset::fromJson(*presetJson(name), Ruleset::Compile::kOnFirstUse).value();
}

TEST(Ruleset, CompiledOnFirstUseDecidesAsCompiledAtLoad) {
  const nlohmann::json doc = {
      {"default", "deny"},
      {"read", {{"default", "allow"}, {"rules", {{{"pattern", "**/*.key"}, {"action", "deny"}}}}}},
      {"execute",
       {{"default", "ask"},
        {"rules",
         {{{"pattern", "git status*"}, {"action", "allow"}},
          {{"regex", "rm .*"}, {"action", "deny"}}}}}}};
  const Ruleset now = Ruleset::fromJson(doc).value();
  const Ruleset later = Ruleset::fromJson(doc, Ruleset::Compile::kOnFirstUse).value();
  const Ruleset copy = later;  // copies share what is compiled
  for (auto [op, target] :
       std::vector<std::pair<Operation, std::string>>{{Operation::kRead, "a/b.key"},
                                                      {Operation::kRead, "a/b.txt"},
                                                      {Operation::kExecute, "git status -s"},
                                                      {Operation::kExecute, "git statusx"},
                                                      {Operation::kExecute, "rm -rf x"},
                                                      {Operation::kWrite, "x"}}) {
    const Decision a = now.decide(op, target), b = copy.decide(op, target);
    EXPECT_EQ(a.action, b.action) << target;
    EXPECT_EQ(a.source, b.source) << target;
  }
  EXPECT_TRUE(later.compileAll().ok());
}

TEST(Ruleset, ARuleThatDoesNotCompileLaterDeniesItsOperationAndSaysWhy) {
  const nlohmann::json doc = {
      {"default", "allow"},
      {"execute", {{"rules", {{{"regex", "(unclosed"}, {"action", "allow"}}}}}}};
  EXPECT_FALSE(Ruleset::fromJson(doc).ok());  // at load, the error shows at once
  const Ruleset later = Ruleset::fromJson(doc, Ruleset::Compile::kOnFirstUse).value();
  EXPECT_EQ(later.decide(Operation::kRead, "x").action, Action::kAllow);  // other operations work
  const Decision d = later.decide(Operation::kExecute, "ls");
  EXPECT_EQ(d.action, Action::kDeny);
  EXPECT_NE(d.source.find("execute.rules[0].regex: invalid regex"), std::string::npos) << d.source;
  EXPECT_NE(later.compileAll().message().find("execute.rules[0]"), std::string::npos);
}

// action() is decide() without the reasons, for a listing's every entry: the same verdict for
// a rule, a protected path, an operation's default, a section left out, the global default and
// rules that did not compile.
TEST(Ruleset, ActionAloneIsTheDecisionsAction) {
  std::vector<Ruleset> sets;
  for (std::string_view name : presetNames()) sets.push_back(preset(name));
  sets.push_back(
      Ruleset::fromJson({{"default", "allow"},
                         {"execute", {{"rules", {{{"regex", "(unclosed"}, {"action", "allow"}}}}}}},
                        Ruleset::Compile::kOnFirstUse)
          .value());
  sets.push_back(load({{"default", "ask"},
                       {"read", {{"rules", {{{"pattern", "src/**"}, {"action", "deny"}}}}}},
                       {"write", {{"default", "allow"}}}}));
  const std::vector<Operation> ops = {Operation::kRead,    Operation::kWrite,  Operation::kEdit,
                                      Operation::kLs,      Operation::kGlob,   Operation::kGrep,
                                      Operation::kExecute, Operation::kPython, Operation::kNetwork,
                                      Operation::kInstall};
  size_t deny = 0, other = 0;
  for (const Ruleset& rs : sets) {
    for (Operation op : ops) {
      for (const char* target : {"src/a.txt", "README.md", ".env", ".git/hooks/pre-commit",
                                 "deploy/key.pem", "ls -la", "example.com:443", "1+1", ""}) {
        const Action a = rs.action(op, target);
        EXPECT_EQ(a, rs.decide(op, target).action) << operationName(op) << " " << target;
        ++(a == Action::kDeny ? deny : other);
      }
    }
  }
  EXPECT_GT(deny, 0u);  // both kinds of verdict were compared
  EXPECT_GT(other, 0u);
}

TEST(Presets, SecretsAreDeniedEverywhereInEveryPreset) {
  for (std::string_view name : presetNames()) {
    Ruleset rs = preset(name);
    for (const char* path :
         {".env", "app/.env", ".env.local", "deploy/key.pem", "tls/server.key", "id_rsa",
          "home/.ssh/id_ed25519", ".ssh", ".aws/credentials", ".gnupg/pubring.kbx", ".netrc",
          "config/credentials.json", "my_secret_notes.txt", "secrets/db.yaml"}) {
      for (Operation op : {Operation::kRead, Operation::kWrite, Operation::kEdit, Operation::kLs,
                           Operation::kGlob, Operation::kGrep}) {
        EXPECT_EQ(rs.decide(op, path).action, Action::kDeny)
            << name << " " << operationName(op) << " " << path;
      }
    }
    EXPECT_EQ(rs.decide(Operation::kExecute, "cat .env").action, Action::kDeny) << name;
    EXPECT_EQ(rs.decide(Operation::kExecute, "cat ~/.ssh/id_rsa").action, Action::kDeny) << name;
    EXPECT_EQ(rs.decide(Operation::kPython, "open('.env').read()").action, Action::kDeny) << name;
  }
}

TEST(Presets, Default) {
  Ruleset rs = preset("default");
  EXPECT_EQ(rs.decide(Operation::kRead, "src/main.py").action, Action::kAllow);
  EXPECT_EQ(rs.decide(Operation::kLs, "src").action, Action::kAllow);
  EXPECT_EQ(rs.decide(Operation::kGrep, "").action, Action::kAllow);
  EXPECT_EQ(rs.decide(Operation::kWrite, "src/main.py").action, Action::kAsk);
  EXPECT_EQ(rs.decide(Operation::kEdit, "src/main.py").action, Action::kAsk);
  EXPECT_EQ(rs.decide(Operation::kExecute, "make").action, Action::kAsk);
  EXPECT_EQ(rs.decide(Operation::kPython, "print(1)").action, Action::kAsk);
  EXPECT_EQ(rs.decide(Operation::kExecute, "rm -rf /").action, Action::kDeny);
}

TEST(Presets, Permissive) {
  Ruleset rs = preset("permissive");
  EXPECT_EQ(rs.decide(Operation::kWrite, "src/main.py").action, Action::kAllow);
  EXPECT_EQ(rs.decide(Operation::kExecute, "make test").action, Action::kAllow);
  EXPECT_EQ(rs.decide(Operation::kWrite, "/etc/passwd").action, Action::kDeny);
  for (const char* cmd : {"rm -rf /", "rm -fr /", "rm -r -f /", "rm -rf /*", "rm -rf ~",
                          "rm -rf ~/", "rm --recursive --force /", "mkfs.ext4 /dev/sda1",
                          "mkfs /dev/sdb", "dd if=/dev/zero of=/dev/sda", "chmod -R 777 /",
                          "shutdown -h now", "reboot", "cp image.iso /dev/sdb"}) {
    EXPECT_EQ(rs.decide(Operation::kExecute, cmd).action, Action::kDeny) << cmd;
  }
  EXPECT_EQ(rs.decide(Operation::kExecute, "rm -rf build/").action, Action::kAllow);
  EXPECT_EQ(rs.decide(Operation::kExecute, "dd if=a of=b").action, Action::kAllow);
  // `:` is a no-op; a fork bomb is known by its shape (Guard), not by its name.
  EXPECT_EQ(rs.decide(Operation::kExecute, ":").action, Action::kAllow);
}

TEST(Presets, ReadonlyDeniesEveryChange) {
  Ruleset rs = preset("readonly");
  EXPECT_EQ(rs.decide(Operation::kRead, "src/main.py").action, Action::kAllow);
  for (Operation op :
       {Operation::kWrite, Operation::kEdit, Operation::kExecute, Operation::kPython}) {
    EXPECT_TRUE(rs.alwaysDenied(op)) << operationName(op);
  }
  for (Operation op : {Operation::kRead, Operation::kLs, Operation::kGlob, Operation::kGrep}) {
    EXPECT_FALSE(rs.alwaysDenied(op)) << operationName(op);
  }
}

TEST(Presets, StrictAsksForEverything) {
  Ruleset rs = preset("strict");
  for (Operation op :
       {Operation::kRead, Operation::kWrite, Operation::kEdit, Operation::kLs, Operation::kGlob,
        Operation::kGrep, Operation::kExecute, Operation::kPython}) {
    EXPECT_EQ(rs.decide(op, "x").action, Action::kAsk) << operationName(op);
  }
  EXPECT_EQ(rs.decide(Operation::kRead, ".env").action, Action::kDeny);
}

}  // namespace
}  // namespace byd::permissions

namespace byd::permissions {
namespace {

TEST(Ruleset, IgnoreCaseRules) {
  Ruleset rs =
      load({{"default", "allow"},
            {"read",
             {{"rules",
               {{{"pattern", "**/*.LOG"}, {"action", "deny"}, {"ignore_case", true}},
                {{"regex", "keep/[a-z]+"}, {"action", "deny"}, {"ignore_case", true}},
                {{"pattern", "exact.TXT"}, {"action", "deny"}}}}}},
            {"execute",
             {{"rules", {{{"pattern", "rm -rf*"}, {"action", "deny"}, {"ignore_case", true}}}}}}});
  EXPECT_EQ(rs.decide(Operation::kRead, "a/b.log").action, Action::kDeny);
  EXPECT_EQ(rs.decide(Operation::kRead, "KEEP/Abc").action, Action::kDeny);
  EXPECT_EQ(rs.decide(Operation::kRead, "exact.txt").action, Action::kAllow);  // case kept
  EXPECT_EQ(rs.decide(Operation::kRead, "exact.TXT").action, Action::kDeny);
  EXPECT_EQ(rs.decide(Operation::kExecute, "RM -RF x").action, Action::kDeny);
  EXPECT_FALSE(
      Ruleset::fromJson(
          {{"default", "allow"},
           {"read", {{"rules", {{{"pattern", "x"}, {"action", "deny"}, {"ignore_case", "yes"}}}}}}})
          .ok());
}

// A case-insensitive filesystem (ext4 casefold, macOS) resolves these to the real secrets.
TEST(Presets, SecretsAreDeniedInAnyCase) {
  for (const char* name : {"default", "permissive", "readonly", "strict"}) {
    Ruleset rs = load(*presetJson(name));
    for (const char* path : {".ENV", "app/.Env.Local", "ID_RSA", "Credentials.txt",
                             "keys/Server.PEM", ".SSH/config", "My_Secrets.yaml"}) {
      EXPECT_EQ(rs.decide(Operation::kRead, path).action, Action::kDeny) << name << " " << path;
      EXPECT_EQ(rs.decide(Operation::kGrep, path).action, Action::kDeny) << name << " " << path;
    }
    EXPECT_EQ(rs.decide(Operation::kExecute, "cat .ENV").action, Action::kDeny) << name;
    EXPECT_EQ(rs.decide(Operation::kPython, "open('ID_RSA').read()").action, Action::kDeny) << name;
  }
}

// A ruleset document that extends a preset, as the server loads a file of one's own.
Ruleset extended(const nlohmann::json& doc) {
  auto whole = extendPreset(doc);
  EXPECT_TRUE(whole.ok()) << whole.status().message();
  auto rs = Ruleset::fromJson(*whole);
  EXPECT_TRUE(rs.ok()) << rs.status().message();
  return std::move(rs).value();
}

TEST(Presets, PythonIsRefusedSecretPathsButNotTheStandardLibraryOrWords) {
  for (const char* name : {"default", "permissive", "readonly", "strict"}) {
    const Ruleset rs = preset(name);
    for (const char* code :
         {"open('.env').read()", "open(\".env.local\")", "Path('keys/Server.PEM').read_text()",
          "x = 1\nprint(open('/home/u/.ssh/id_rsa').read())", "open(\"config/credentials.json\")",
          "os.listdir('.aws')"}) {
      EXPECT_EQ(rs.decide(Operation::kPython, code).action, Action::kDeny) << name << ": " << code;
    }
    for (const char* code :
         {"import secrets\nprint(secrets.token_hex(8))", "print(d.key)", "k = item.key()",
          "print('my secret plan')", "x = {'key': 1}", "name = 'API_KEY'"}) {
      // No rule decides it: the preset's default does (readonly's denies every cell).
      const Decision d = rs.decide(Operation::kPython, code);
      EXPECT_EQ(d.source.find("rule"), std::string::npos)
          << name << ": " << code << ": " << d.source;
    }
  }
}

TEST(Presets, AFileThatExtendsAPresetKeepsItsDenialsAndAddsItsOwnRules) {
  const Ruleset rs =
      extended({{"extends", "readonly"},
                {"name", "review-and-test"},
                {"execute", {{"rules", {{{"pattern", "npm test*"}, {"action", "allow"}}}}}}});
  EXPECT_EQ(rs.name(), "review-and-test");
  EXPECT_EQ(rs.decide(Operation::kExecute, "npm test").action, Action::kAllow);
  EXPECT_EQ(rs.decide(Operation::kExecute, "make").action, Action::kDeny);  // readonly's default
  EXPECT_EQ(rs.decide(Operation::kRead, "src/a.py").action, Action::kAllow);
  EXPECT_EQ(rs.decide(Operation::kRead, ".env").action, Action::kDeny);
  EXPECT_EQ(rs.decide(Operation::kWrite, "a.txt").action, Action::kDeny);
  EXPECT_FALSE(rs.alwaysDenied(Operation::kExecute));
}

TEST(Presets, TheFileCannotAllowWhatThePresetAlwaysDenies) {
  const Ruleset rs = extended(
      {{"extends", "default"},
       {"write", {{"default", "allow"}, {"rules", {{{"pattern", "**"}, {"action", "allow"}}}}}},
       {"execute", {{"rules", {{{"pattern", "*"}, {"action", "allow"}}}}}}});
  EXPECT_EQ(rs.decide(Operation::kWrite, "src/a.py").action, Action::kAllow);  // its default won
  EXPECT_EQ(rs.decide(Operation::kWrite, "config/.env").action, Action::kDeny);
  EXPECT_EQ(rs.decide(Operation::kExecute, "cat .env").action, Action::kDeny);
  EXPECT_EQ(rs.decide(Operation::kExecute, "mkfs.ext4 /dev/sda").action, Action::kDeny);
  EXPECT_EQ(rs.decide(Operation::kExecute, "ls").action, Action::kAllow);
  EXPECT_EQ(rs.decide(Operation::kEdit, "a.txt").action, Action::kAsk);  // the preset's default
  EXPECT_EQ(rs.name(), "default (extended)");
}

TEST(Presets, ExtendingNamesOnlyAPreset) {
  EXPECT_EQ(extendPreset({{"extends", "lax"}}).status().message(),
            "extends: no ruleset preset 'lax' (presets: default, permissive, readonly, strict)");
  EXPECT_FALSE(extendPreset({{"extends", 3}}).ok());
  const nlohmann::json plain = {{"default", "deny"}};
  EXPECT_EQ(extendPreset(plain).value(), plain);  // without "extends": as it is
}

}  // namespace
}  // namespace byd::permissions
