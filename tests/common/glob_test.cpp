#include "common/glob.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace byd {
namespace {

struct MatchCase {
  const char* pattern;
  std::string path;
  bool expected;
};

const MatchCase kCases[] = {
    // Literals and anchoring.
    {"foo.txt", "foo.txt", true},
    {"foo.txt", "a/foo.txt", false},
    {"foo.txt", "foo.txt.bak", false},
    {"a/b/c", "a/b/c", true},
    {"./src/x.c", "src/x.c", true},
    // RE2 metacharacters are literal.
    {"a+b(c)|d$^.txt", "a+b(c)|d$^.txt", true},
    {"a.c", "abc", false},
    // `*`
    {"*.py", "main.py", true},
    {"*.py", "src/main.py", false},
    {"*.py", ".py", true},
    {"*", ".bashrc", true},
    {"src/*.c", "src/a.c", true},
    {"src/*.c", "src/sub/a.c", false},
    {"*/x", "a/x", true},
    {"*/x", "x", false},
    {"a*b*c", "abc", true},
    {"a*b*c", "aXXbYYc", true},
    // `?`
    {"?.c", "a.c", true},
    {"?.c", "ab.c", false},
    {"a?b", "a/b", false},
    {"?", "\xc3\xa9", true},         // one two-byte character
    {"??", "\xc3\xa9", false},       // ...is not two characters
    {"???", "\xe6\x97\xa5", false},  // three-byte character
    {"?", "\xe6\x97\xa5", true},
    {"?", "\xff", true},  // a byte that is not UTF-8 still counts as one
    // `**`
    {"**/x", "x", true},
    {"**/x", "a/b/x", true},
    {"**/x", "a/bx", false},
    {"**/*.py", "a/b/c.py", true},
    {"**/*.py", "c.py", true},
    {"a/**", "a/b", true},
    {"a/**", "a/b/c/d", true},
    {"a/**", "a", false},
    {"a/**", "ab/c", false},
    {"a/**/b", "a/b", true},
    {"a/**/b", "a/x/y/b", true},
    {"a/**/b", "a/xb", false},
    {"**", "anything/at/all", true},
    {"a/**/**/b", "a/b", true},
    {"a**b", "aXb", true},  // not a whole component: acts like `*`
    {"a**b", "a/b", false},
    {"**.txt", "x.txt", true},
    {"**.txt", "d/x.txt", false},
    {"**/.git/**", "sub/.git/config", true},
    // Character classes.
    {"[abc].c", "b.c", true},
    {"[abc].c", "d.c", false},
    {"[a-z]x", "qx", true},
    {"[a-z]x", "Qx", false},
    {"[!a]x", "bx", true},
    {"[!a]x", "ax", false},
    {"[^a]x", "bx", true},
    {"[^a]x", "ax", false},
    {"a[!b]c", "a/c", false},  // negation never matches '/'
    {"a[/]c", "a/c", false},
    {"[]]", "]", true},
    {"[!]]", "a", true},
    {"[!]]", "]", false},
    {"[a-]", "-", true},
    {"[\\]]", "]", true},
    {"[*?]", "*", true},
    {"[*?]", "x", false},
    {"[\xc3\xa0-\xc3\xbf]", "\xc3\xa9", true},   // [à-ÿ] matches é
    {"[\xc3\xa0-\xc3\xbf]", "\xc3\x89", false},  // ...not É
    {"[!\xc3\xa9]", "\xc3\xa9", false},
    {"[!\xc3\xa9]", "\xc3\xa8", true},
    {"[!\xc3\xa9]", "\xe6\x97\xa5", true},
    // Braces.
    {"*.{c,h}", "x.h", true},
    {"*.{c,h}", "x.cpp", false},
    {"{a,b/c}/d", "b/c/d", true},
    {"{a,b/c}/d", "b/d", false},
    {"x{a,{b,c}d}", "xcd", true},
    {"x{a,{b,c}d}", "xc", false},
    {"{*.md,docs/**}", "docs/a/b.txt", true},
    {"{*.md,docs/**}", "README.md", true},
    {"{**/,}x", "a/x", true},
    {"a{,.bak}", "a", true},
    {"a{,.bak}", "a.bak", true},
    {"a}b,c", "a}b,c", true},  // unmatched '}' and ',' are literal
    // Escapes.
    {"\\*", "*", true},
    {"\\*", "x", false},
    {"a\\?", "a?", true},
    {"\\{a,b\\}", "{a,b}", true},
    {"\\[x]", "[x]", true},
    // Bytes that are not UTF-8, and other odd bytes.
    {"*", "caf\xe9", true},
    {"caf*", "caf\xe9\xff", true},
    {"caf\xe9", "caf\xe9", true},
    {"*.txt", "line\nbreak.txt", true},
    {"**/x", "a\nb/x", true},
    {"a b/*", "a b/c d", true},
};

TEST(GlobTest, MatchTable) {
  for (const MatchCase& c : kCases) {
    auto glob = GlobMatcher::compile(c.pattern);
    ASSERT_TRUE(glob.ok()) << c.pattern << ": " << glob.status().toString();
    EXPECT_EQ(glob->matches(c.path), c.expected) << "pattern " << c.pattern << " path " << c.path;
  }
}

TEST(GlobTest, IgnoreCase) {
  auto glob = GlobMatcher::compile("SRC/*.[ch]", /*ignore_case=*/true);
  ASSERT_TRUE(glob.ok());
  EXPECT_TRUE(glob->matches("src/main.C"));
  EXPECT_TRUE(glob->matches("Src/x.h"));
  EXPECT_FALSE(glob->matches("src/x.o"));
  auto negated = GlobMatcher::compile("[!a]", true);
  ASSERT_TRUE(negated.ok());
  EXPECT_FALSE(negated->matches("A"));
  EXPECT_TRUE(negated->matches("b"));
  // Only ASCII folds: Latin-1 folding would pair UTF-8 lead bytes (0xc3 and 0xe3).
  auto accent = GlobMatcher::compile("\xc3\xa9", true);
  ASSERT_TRUE(accent.ok());
  EXPECT_TRUE(accent->matches("\xc3\xa9"));
  EXPECT_FALSE(accent->matches("\xe3\xa9"));
  auto exact = GlobMatcher::compile("SRC/*.c");
  ASSERT_TRUE(exact.ok());
  EXPECT_FALSE(exact->matches("src/a.c"));
}

TEST(GlobTest, CompileErrors) {
  auto message = [](std::string_view pattern) {
    auto glob = GlobMatcher::compile(pattern);
    EXPECT_FALSE(glob.ok()) << pattern;
    EXPECT_EQ(glob.status().code(), Code::kInvalidArgument);
    return glob.status().message();
  };
  EXPECT_EQ(message(""), "invalid glob \"\": empty pattern");
  EXPECT_EQ(message("./"), "invalid glob \"./\": empty pattern");
  EXPECT_EQ(message("src/[ab"), "invalid glob \"src/[ab\": unclosed '[' at position 4");
  EXPECT_EQ(message("[]"), "invalid glob \"[]\": unclosed '[' at position 0");
  EXPECT_EQ(message("a{b,c"), "invalid glob \"a{b,c\": unclosed '{' at position 1");
  EXPECT_EQ(message("{a,{b}"), "invalid glob \"{a,{b}\": unclosed '{' at position 0");
  EXPECT_EQ(message("abc\\"), "invalid glob \"abc\\\": trailing backslash at position 3");
  EXPECT_EQ(message("./x\\"), "invalid glob \"./x\\\": trailing backslash at position 3");
  EXPECT_EQ(message("[z-a]"), "invalid glob \"[z-a]\": invalid range in '[' at position 1");
  EXPECT_EQ(message(std::string(40, '{')), "invalid glob \"" + std::string(40, '{') +
                                               "\": braces nested too deeply at position 32");
}

TEST(GlobTest, HostilePatterns) {
  // Every `?` and class expands to a UTF-8 automaton; huge patterns are refused up front.
  auto huge = GlobMatcher::compile(std::string(5000, '?'));
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().message(), "invalid glob \"" + std::string(100, '?') +
                                         "...\": longer than 4096 bytes at position 0");
  auto accents = GlobMatcher::compile(std::string(99, 'a') + "\xc3\xa9" + std::string(5000, 'b'));
  ASSERT_FALSE(accents.ok());
  EXPECT_EQ(accents.status().message(), "invalid glob \"" + std::string(99, 'a') +
                                            "...\": longer than 4096 bytes at position 0");
  std::string many;
  for (int i = 0; i < 100; ++i) many += "[!\xc3\xa9\xe6\x97\xa5]";
  auto glob = GlobMatcher::compile(many);
  ASSERT_TRUE(glob.ok()) << glob.status().toString();
  EXPECT_FALSE(glob->matches(std::string(100, 'a') + "a"));
  EXPECT_TRUE(glob->matches(std::string(100, 'a')));
}

TEST(GlobTest, LiteralPrefix) {
  auto prefix = [](std::string_view pattern, bool ignore_case = false) {
    auto glob = GlobMatcher::compile(pattern, ignore_case);
    EXPECT_TRUE(glob.ok()) << pattern;
    return glob.ok() ? glob->literalPrefix() : "<error>";
  };
  EXPECT_EQ(prefix("src/lib/**/*.c"), "src/lib");
  EXPECT_EQ(prefix("**/*.py"), "");
  EXPECT_EQ(prefix("*.py"), "");
  EXPECT_EQ(prefix("src/main.c"), "src");  // the last component names the entry, not a dir
  EXPECT_EQ(prefix("a/b/c/"), "a/b/c");
  EXPECT_EQ(prefix("a/b?/c"), "a");
  EXPECT_EQ(prefix("a/{b,c}/d"), "a");
  EXPECT_EQ(prefix("a/[bc]/d"), "a");
  EXPECT_EQ(prefix("./docs/*.md"), "docs");
  EXPECT_EQ(prefix("we\\*ird/x/*"), "we*ird/x");
  EXPECT_EQ(prefix("a/../b/*"), "a");
  EXPECT_EQ(prefix("src/*.c", /*ignore_case=*/true), "");
}

TEST(GlobTest, CouldMatchBelow) {
  struct Case {
    const char* pattern;
    const char* dir;
    bool expected;
  };
  const Case cases[] = {
      {"src/lib/**/*.c", "src", true},
      {"src/lib/**/*.c", "src/lib", true},
      {"src/lib/**/*.c", "src/lib/x/y", true},
      {"src/lib/**/*.c", "docs", false},
      {"src/lib/**/*.c", "src/other", false},
      {"**/*.py", "any/where", true},
      {"*.py", "sub", false},
      {"*.py", "x.py", false},
      {"*/*.py", "a", true},
      {"*/*.py", "a/b", false},
      {"a/**", "a", true},
      {"a/**", "a/b/c", true},
      {"a/**", "b", false},
      {"a/**/b", "a/x", true},
      {"{src,lib}/*.c", "lib", true},
      {"{src,lib}/*.c", "test", false},
      {"[st]rc/x", "trc", true},
      {"[st]rc/x", "arc", false},
      {"x", "", true},
      // Braces crossing components fall back to the literal prefix, conservatively.
      {"a/{b/c,d}/e", "a/q", true},
      {"a/{b/c,d}/e", "z", false},
      {"{a/b,c}", "zzz", true},
  };
  for (const Case& c : cases) {
    auto glob = GlobMatcher::compile(c.pattern);
    ASSERT_TRUE(glob.ok()) << c.pattern;
    EXPECT_EQ(glob->couldMatchBelow(c.dir), c.expected) << c.pattern << " below " << c.dir;
  }
}

TEST(GlobTest, LiteralEndingAgreesWithTheRegex) {
  // matches() turns most paths away by the literal end of the pattern before running the
  // regex: it must answer as the regex alone does, wherever the pattern's end lies.
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const MatchCase& c : kCases) pairs.emplace_back(c.pattern, c.path);
  const char* patterns[] = {"**/x",    "**/*.txt", "src/main.c", "a/**",     "{a,b}/x.txt",
                            "*.{c,h}", "x\\*",     "a/",         "**/a.b/c", "a?c"};
  const char* paths[] = {"x",   "a/x", "b.txt", "d/b.txt", "src/main.c", "a/b", "a/x.txt", "m.c",
                         "m.h", "x*",  "a/",    "a.b/c",   "q/a.b/c",    "abc", "b/x.txt"};
  for (const char* pattern : patterns) {
    for (const char* path : paths) pairs.emplace_back(pattern, path);
  }
  for (const auto& [pattern, path] : pairs) {
    auto glob = GlobMatcher::compile(pattern);
    ASSERT_TRUE(glob.ok()) << pattern;
    const RE2 re(glob->regex(), GlobMatcher::regexOptions());
    EXPECT_EQ(glob->matches(path), RE2::FullMatch(path, re)) << pattern << " on " << path;
  }
  EXPECT_TRUE(GlobMatcher::compile("**/x")->matches("x"));
  EXPECT_TRUE(GlobMatcher::compile("**/*.txt")->matches("d/b.txt"));
  EXPECT_FALSE(GlobMatcher::compile("**/*.txt")->matches("d/b.txt.bak"));
}

TEST(GlobTest, PruningIsConsistentWithMatching) {
  // Whenever a path matches, every ancestor directory must survive pruning.
  const char* patterns[] = {"src/lib/**/*.c", "**/x", "a/*/b", "{a,b/c}/**", "*/**/z"};
  const char* paths[] = {"src/lib/a/b/c.c", "x", "q/r/x", "a/k/b", "b/c/d/e", "m/n/z", "m/z"};
  for (const char* pattern : patterns) {
    auto glob = GlobMatcher::compile(pattern);
    ASSERT_TRUE(glob.ok());
    for (std::string path : paths) {
      if (!glob->matches(path)) continue;
      for (size_t slash = path.find('/'); slash != std::string::npos;
           slash = path.find('/', slash + 1)) {
        EXPECT_TRUE(glob->couldMatchBelow(path.substr(0, slash))) << pattern << " " << path;
      }
    }
  }
}

TEST(GlobTest, LongPathAndPathologicalPattern) {
  // Backtracking matchers go exponential here; RE2 must not. Not timed, only run.
  auto glob = GlobMatcher::compile("*a*a*a*a*a*a*a*a*a*a*b");
  ASSERT_TRUE(glob.ok());
  EXPECT_FALSE(glob->matches(std::string(100000, 'a')));
  auto deep = GlobMatcher::compile("**/**/**/**/x");
  ASSERT_TRUE(deep.ok());
  std::string path;
  for (int i = 0; i < 5000; ++i) path += "d/";
  EXPECT_TRUE(deep->matches(path + "x"));
  EXPECT_FALSE(deep->matches(path + "y"));
}

TEST(GlobTest, CopiesShareStateAcrossThreads) {
  auto glob = GlobMatcher::compile("**/*.{c,h}");
  ASSERT_TRUE(glob.ok());
  const GlobMatcher copy = *glob;
  EXPECT_EQ(copy.pattern(), "**/*.{c,h}");
  std::vector<std::thread> threads;
  std::vector<int> hits(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i) hits[t] += copy.matches("a/b/" + std::to_string(i) + ".c");
    });
  }
  for (auto& thread : threads) thread.join();
  for (int h : hits) EXPECT_EQ(h, 500);
}

}  // namespace
}  // namespace byd
