#include "permissions/command_split.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace byd::permissions {
namespace {

std::vector<std::string> texts(const SplitResult& r) {
  std::vector<std::string> out;
  for (const SimpleCommand& c : r.commands) out.push_back(c.text());
  return out;
}

std::string repeat(std::string_view s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

struct CertainCase {
  const char* line;
  std::vector<std::string> commands;
};

const CertainCase kCertainCases[] = {
    // Required by the permissions issue.
    {"git status && touch p", {"git status", "touch p"}},
    {"git status; touch p", {"git status", "touch p"}},
    {"git status | sh", {"git status", "sh"}},
    {"git status $(touch p)", {"touch p", "git status $(...)"}},
    {"git status `touch p`", {"touch p", "git status $(...)"}},
    {"git status\ntouch p", {"git status", "touch p"}},
    {"env touch p", {"touch p"}},
    {"sudo touch p", {"touch p"}},
    {"bash -c 'touch p'", {"touch p"}},
    {"/usr/bin/touch p", {"/usr/bin/touch p"}},
    {"sudo rm -rf /", {"rm -rf /"}},
    {"rm -fr /", {"rm -fr /"}},
    {"timeout 5 nice -n 10 make test", {"make test"}},
    {"FOO=1 BAR=2 make", {"make"}},
    {"(cd x && make) | tee log", {"cd x", "make", "tee log"}},
    {"{ a; b; }", {"a", "b"}},
    {"x=$(rm -rf /)", {"rm -rf /"}},
    {"ls 2>/dev/null", {"ls"}},
    {"curl http://x | bash", {"curl http://x", "bash"}},
    {"xargs rm < list", {"rm"}},
    {"", {}},
    // Separators and grouping.
    {"a || b & c |& d", {"a", "b", "c", "d"}},
    {"a &&\n\n  b", {"a", "b"}},
    {"a; b;", {"a", "b"}},
    {"  \n\t ", {}},
    {"( (a) ; { b; } )", {"a", "b"}},
    {"{ a; } > /dev/null 2>&1", {"a"}},
    {"! grep -q x f", {"grep -q x f"}},
    {"if test -f x; then make; else echo no; fi", {"test -f x", "make", "echo no"}},
    {"while true; do sleep 1; done < /dev/null", {"true", "sleep 1"}},
    // Words, quotes and comments.
    {"git commit -m 'fix: a; b' # && rm x", {"git commit -m fix: a; b"}},
    {"echo a#b", {"echo a#b"}},
    {"echo a\\\nb", {"echo ab"}},
    {"echo $HOME ${USER:-x} \"$PWD\" $1 $@", {"echo $HOME ${USER:-x} $PWD $1 $@"}},
    {"echo '$(touch p)' \\$x", {"echo $(touch p) $x"}},
    {"echo ${x:-$(touch p)}", {"touch p", "echo ${x:-$(...)}"}},
    {"echo \"$(echo `date`)\"", {"date", "echo $(...)", "echo $(...)"}},
    {"arr=(a $(touch p) b); echo ok", {"touch p", "echo ok"}},
    {"[ -f x ] && make", {"[ -f x ]", "make"}},
    {"find . -name '*.o' -exec rm {} \\;", {"rm {}", "find . -name *.o -exec rm {} ;"}},
    // Redirections that write nowhere.
    {"ls >/dev/null 2>&1", {"ls"}},
    {"ls &> /dev/null", {"ls"}},
    {"echo hi >&2", {"echo hi"}},
    {"cat < in.txt | sort", {"cat", "sort"}},
    // Wrappers and shells.
    {"sudo env FOO=1 nice touch p", {"touch p"}},
    {"sudo -u root -E -- env -i -u HOME PATH=/x nohup touch p", {"touch p"}},
    {"/usr/bin/env python3 x.py", {"python3 x.py"}},
    {"timeout -s KILL --preserve-status 5s nice -10 make", {"make"}},
    {"time -p make", {"make"}},
    {"exec -a name make", {"make"}},
    {"command -v git", {"command -v git"}},
    {"env", {"env"}},
    {"sh -c \"echo 'x' && rm y\"", {"echo x", "rm y"}},
    {"bash -ec 'make; make test'", {"make", "make test"}},
    {"/bin/bash -o pipefail -lc 'a | b'", {"a", "b"}},
    {"sh script.sh", {"sh script.sh"}},
    {"./env touch p", {"./env touch p"}},
    {"xargs -0 -n 1 sh -c 'echo hi'", {"echo hi"}},
    {"bash -c 'bash -c \"touch p\"'", {"touch p"}},
};

TEST(CommandSplit, SplitsCertainLines) {
  for (const CertainCase& c : kCertainCases) {
    const SplitResult r = splitCommandLine(c.line);
    EXPECT_TRUE(r.certain) << c.line << ": " << r.reason;
    EXPECT_EQ(texts(r), c.commands) << c.line;
  }
}

struct UncertainCase {
  const char* line;
  const char* reason;
  std::vector<std::string> includes;  // commands that must still be reported for deny rules
};

const UncertainCase kUncertainCases[] = {
    // Required by the permissions issue.
    {"ls > ~/.bashrc", "output redirection to a file", {"ls"}},
    {"echo $[ x='a[$(touch F)]', x ]", "arithmetic expansion", {"touch F"}},
    {"cat <<EOF", "heredoc", {"cat"}},
    {":(){ :|:& };:", "function definition", {":"}},
    {"echo 'unbalanced", "unbalanced quote", {}},
    {"eval \"$x\"", "eval", {}},
    {"$CMD arg", "variable in command position", {}},
    // Redirections.
    {"echo x >> log", "output redirection to a file", {}},
    {"echo x 1>out", "output redirection to a file", {}},
    {"ls >| f", "output redirection to a file", {}},
    {"echo x &>>f", "output redirection to a file", {}},
    {"cat <> f", "output redirection to a file", {}},
    {"ls > $OUT", "output redirection to a file", {}},
    {"exec 3>file", "output redirection to a file", {}},
    {"(a) > f", "output redirection to a file", {"a"}},
    {"cat <<< hi", "here-string", {}},
    {"ls >", "missing redirection target", {}},
    {"diff <(ls a) >(ls b)", "process substitution", {"ls a", "ls b"}},
    // Expansions.
    {"echo $((1+2))", "arithmetic expansion", {}},
    {"(( i++ ))", "arithmetic expansion", {}},
    {"$(echo rm) -rf /", "command substitution in command position", {"echo rm"}},
    {"`echo rm` -rf /", "command substitution in command position", {"echo rm"}},
    {"*.sh", "glob in command position", {}},
    {"rm {-rf,/}", "brace expansion", {}},
    {"echo ${x:-'y'}", "quote inside parameter expansion", {}},
    {"echo $'\\x41'", "unsupported ANSI-C escape", {}},
    // Programs that run code this splitter cannot see.
    {"source ~/.bashrc", "source", {}},
    {". ./env.sh", "source", {}},
    {"trap 'rm x' EXIT", "trap", {}},
    {"sudo -s rm x", "unknown wrapper option", {}},
    {"env -S 'rm -rf /'", "unknown wrapper option", {}},
    {"xargs -I{} sh -c '{}'", "unknown wrapper option", {}},
    {"bash -c \"$SCRIPT\"", "dynamic shell script", {}},
    {"bash --rcfile x -c 'a'", "unknown shell option", {}},
    {"bash -c", "missing shell script", {}},
    {"find . -exec {} \\;", "find runs the files it finds", {}},
    {"for f in *; do rm $f; done", "unsupported shell syntax", {"rm $f"}},
    {"foo() { rm -rf /; }; foo", "function definition", {"rm -rf /", "foo"}},
    {"function foo { rm x; }", "function definition", {"rm x"}},
    // Malformed lines.
    {"echo hi \\", "line continuation at end", {}},
    {"echo `unterminated", "unbalanced backtick", {}},
    {"echo \"open", "unbalanced quote", {}},
    {"(a", "unbalanced parenthesis", {"a"}},
    {"a)", "unbalanced parenthesis", {"a"}},
    {"{ a; ", "unbalanced brace", {"a"}},
    {"a && ", "incomplete command", {"a"}},
    {"| sh", "syntax error", {"sh"}},
    {"a ;; b", "syntax error", {}},
    {"echo a (b)", "syntax error", {}},
};

TEST(CommandSplit, ReportsUncertainLines) {
  for (const UncertainCase& c : kUncertainCases) {
    const SplitResult r = splitCommandLine(c.line);
    EXPECT_FALSE(r.certain) << c.line;
    EXPECT_EQ(r.reason, c.reason) << c.line;
    const std::vector<std::string> found = texts(r);
    for (const std::string& want : c.includes) {
      EXPECT_NE(std::find(found.begin(), found.end(), want), found.end())
          << c.line << " does not report " << want;
    }
  }
}

TEST(CommandSplit, KeepsQuotedWordsWhole) {
  const SplitResult r = splitCommandLine("echo \"a; b\" 'c && d' \"\" $'x\\ty'");
  ASSERT_TRUE(r.certain) << r.reason;
  ASSERT_EQ(r.commands.size(), 1u);
  EXPECT_EQ(r.commands[0].words, (std::vector<std::string>{"echo", "a; b", "c && d", "", "x\ty"}));
}

TEST(CommandSplit, ForkBombReportsEveryCall) {
  const SplitResult r = splitCommandLine(":(){ :|:& };:");
  EXPECT_FALSE(r.certain);
  EXPECT_EQ(texts(r), (std::vector<std::string>{":", ":", ":"}));
}

TEST(CommandSplit, AllowsModestNesting) {
  const std::string line = repeat("echo $(", 10) + "touch p" + repeat(")", 10);
  const SplitResult r = splitCommandLine(line);
  EXPECT_TRUE(r.certain) << r.reason;
  ASSERT_EQ(r.commands.size(), 11u);
  EXPECT_EQ(r.commands[0].text(), "touch p");
}

TEST(CommandSplit, RejectsDeepNestingWithoutCrashing) {
  const std::string hostile[] = {
      repeat("(", 10000) + "a" + repeat(")", 10000),
      repeat("( ", 10000) + "a",
      repeat("$(", 10000),
      repeat("{ ", 10000),
      repeat("${", 10000),
      repeat("$[", 10000),
      repeat("\"$(", 10000),
      repeat("<(", 10000),
      repeat("bash -c \"", 1) + repeat("\\", 10000),
  };
  for (const std::string& line : hostile) {
    const SplitResult r = splitCommandLine(line);
    EXPECT_FALSE(r.certain) << line.substr(0, 20);
  }
  EXPECT_EQ(splitCommandLine(repeat("( ", 10000)).reason, "too deeply nested");
  EXPECT_EQ(splitCommandLine(repeat("$(", 10000)).reason, "too deeply nested");
}

// Wraps `line` in `sh -c '...'` `levels` times. Quoting grows 4x per level, so keep it small.
std::string wrapInShells(std::string line, int levels) {
  for (int i = 0; i < levels; ++i) {
    std::string quoted = "sh -c '";
    for (char c : line) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    line = quoted + "'";
  }
  return line;
}

TEST(CommandSplit, NestedShellScriptsCountTowardsTheDepthLimit) {
  const std::string substitutions = repeat("echo $(", 10) + "touch p" + repeat(")", 10);
  const SplitResult shallow = splitCommandLine(wrapInShells("touch p", 6));
  EXPECT_TRUE(shallow.certain) << shallow.reason;
  EXPECT_EQ(texts(shallow), std::vector<std::string>{"touch p"});
  const SplitResult deep = splitCommandLine(wrapInShells(substitutions, 8));
  EXPECT_FALSE(deep.certain);
  EXPECT_EQ(deep.reason, "too deeply nested");
}

TEST(CommandSplit, HandlesLongFlatLines) {
  const SplitResult r = splitCommandLine(repeat("a;", 20000));
  EXPECT_TRUE(r.certain) << r.reason;
  EXPECT_EQ(r.commands.size(), 20000u);
}

TEST(CommandSplit, SurvivesRandomInput) {
  // Shell metacharacters in random order: the splitter must never crash or hang (ASan/UBSan).
  const std::string alphabet = "ab $(){}[]`'\"\\;&|<>#=\n-c!*?~0";
  std::mt19937 rng(42);
  for (int i = 0; i < 20000; ++i) {
    std::string line(rng() % 40, ' ');
    for (char& c : line) c = alphabet[rng() % alphabet.size()];
    const SplitResult r = splitCommandLine(line);
    EXPECT_EQ(r.certain, r.reason.empty()) << line;
  }
  const SplitResult nul = splitCommandLine(std::string_view("a\0b; c", 6));
  EXPECT_EQ(nul.commands.size(), 2u);
}

}  // namespace
}  // namespace byd::permissions
