// The install operation: what a pip install line installs, and how the install rules judge it
// from execute, in every preset and in a ruleset of one's own.

#include "permissions/pip_install.h"

#include <gtest/gtest.h>

#include "backends/python/import_names.h"
#include "permissions/guard.h"
#include "permissions/presets.h"

namespace byd::permissions {
namespace {

using nlohmann::json;
using Words = std::vector<std::string>;

Guard guardFor(const json& doc) {
  auto merged = extendPreset(doc);
  EXPECT_TRUE(merged.ok()) << merged.status().message();
  auto rs = Ruleset::fromJson(*merged);
  EXPECT_TRUE(rs.ok()) << rs.status().message();
  return Guard(std::move(*rs), AskFallback::kDeny);
}

Guard preset(const char* name) {
  auto doc = presetJson(name);
  EXPECT_TRUE(doc.ok());
  return guardFor(*doc);
}

TEST(PipInstall, NamesTheDistributionsOfEverySpelling) {
  const std::vector<std::pair<Words, Words>> cases = {
      {{"pip", "install", "numpy"}, {"numpy"}},
      {{"pip3", "install", "-U", "Scikit_Learn>=1.3", "requests[socks]==2.31"},
       {"scikit-learn", "requests"}},
      {{"/usr/bin/pip3.11", "install", "--user", "PyYAML"}, {"pyyaml"}},
      {{"python3", "-m", "pip", "install", "--no-cache-dir", "zope.interface"}, {"zope-interface"}},
      {{"python", "-I", "-m", "pip", "-q", "install", "--index-url", "http://x/simple", "a"},
       {"a"}},
      {{"uv", "pip", "install", "polars", "--target=/tmp/t"}, {"polars"}},
      {{"pip", "install", "typing-extensions; python_version<'3.11'"}, {"typing-extensions"}},
  };
  for (const auto& [words, names] : cases) {
    auto got = pipInstallOf(words);
    ASSERT_TRUE(got.has_value()) << words[0];
    EXPECT_EQ(got->names, names) << words[0] << " " << words.back();
    EXPECT_TRUE(got->unknown.empty()) << words.back();
  }
}

TEST(PipInstall, WhatOnlyPipKnowsIsNamedAsUnknown) {
  auto got = pipInstallOf({"pip", "install", "-r", "requirements.txt", "-rdev.txt", ".", "./pkg",
                           "https://x/p.whl", "p-1.0-py3-none-any.whl", "$PKG", "ok", "-e",
                           "git+https://x/y", "--editable=../z"});
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->names, Words{"ok"});
  EXPECT_EQ(got->unknown,
            (Words{"-r requirements.txt", "-r dev.txt", ".", "./pkg", "https://x/p.whl",
                   "p-1.0-py3-none-any.whl", "$PKG", "-e git+https://x/y", "--editable ../z"}));
}

TEST(PipInstall, OtherCommandsAreNotInstalls) {
  for (const Words& w : std::vector<Words>{{"pip", "list"},
                                           {"pip", "download", "numpy"},
                                           {"python3", "-c", "import pip"},
                                           {"python3", "-m", "venv", "install"},
                                           {"pipx", "install", "black"},
                                           {"uv", "add", "numpy"},
                                           {"echo", "pip", "install", "x"},
                                           {}}) {
    EXPECT_FALSE(pipInstallOf(w).has_value()) << (w.empty() ? "" : w[0]);
  }
  EXPECT_EQ(normalizeDistribution("Foo__Bar.baz-Qux"), "foo-bar-baz-qux");
}

TEST(InstallRules, EachPresetJudgesPipInstallLines) {
  // default asks (so does its execute rule), permissive allows, readonly and strict deny.
  EXPECT_EQ(preset("default").decideCommand("pip install numpy", {}).action, Action::kAsk);
  EXPECT_EQ(preset("permissive").decideCommand("pip install numpy", {}).action, Action::kAllow);
  EXPECT_EQ(preset("permissive").decideCommand("pip install -r req.txt", {}).action,
            Action::kAllow);
  EXPECT_EQ(preset("readonly").decideCommand("pip install numpy", {}).action, Action::kDeny);
  const Decision strict = preset("strict").decideCommand("cd x && pip3 install numpy", {});
  EXPECT_EQ(strict.action, Action::kDeny);
  EXPECT_NE(strict.description.find("installs numpy"), std::string::npos) << strict.description;
  for (const char* name : {"default", "permissive", "readonly", "strict"}) {
    EXPECT_EQ(preset(name).decide(Operation::kInstall, "numpy").action,
              std::string(name) == "permissive" ? Action::kAllow
              : std::string(name) == "default"  ? Action::kAsk
                                                : Action::kDeny)
        << name;
  }
}

TEST(InstallRules, ARulesetsOwnRulesDecideAndNoSectionDenies) {
  const json own_rules = json::array(
      {{{"pattern", "numpy"}, {"action", "allow"}}, {{"pattern", "scikit-*"}, {"action", "ask"}}});
  const Guard own = guardFor(
      {{"extends", "permissive"}, {"install", {{"default", "deny"}, {"rules", own_rules}}}});
  EXPECT_EQ(own.decideCommand("pip install NumPy", {}).action, Action::kAllow);
  EXPECT_EQ(own.decideCommand("pip install numpy scikit_learn", {}).action, Action::kAsk);
  const Decision d = own.decideCommand("pip install numpy torch", {});
  EXPECT_EQ(d.action, Action::kDeny);
  EXPECT_NE(d.description.find("installs torch"), std::string::npos) << d.description;
  // Some names allowed, others not: what pip alone knows asks.
  EXPECT_EQ(own.decideCommand("pip install -r req.txt", {}).action, Action::kAsk);
  // A ruleset with no install section installs nothing, whatever its global default.
  const Guard none = guardFor({{"name", "none"},
                               {"default", "allow"},
                               {"execute", {{"default", "allow"}, {"rules", json::array()}}}});
  EXPECT_EQ(none.decideCommand("pip install numpy", {}).action, Action::kDeny);
  EXPECT_EQ(none.decideCommand("pip install -r req.txt", {}).action, Action::kDeny);
  EXPECT_EQ(none.decideCommand("pip list", {}).action, Action::kAllow);
}

}  // namespace
}  // namespace byd::permissions
