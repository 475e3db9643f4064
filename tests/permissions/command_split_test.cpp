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

// Constructs of bash's grammar: every simple command inside is reported, in the order bash
// would first meet it.
const CertainCase kConstructs[] = {
    {"cat > x.py <<'EOF'\nimport os\n$(rm -rf /)\nEOF\npython3 x.py", {"cat", "python3 x.py"}},
    {"python3 - <<EOF\nprint('$(whoami)')\nEOF", {"whoami", "python3 -"}},
    {"cat <<-END\n\techo $(date)\n\tEND\necho after", {"date", "cat", "echo after"}},
    {"cat <<A <<'B'\n$(one)\nA\n$(two)\nB", {"one", "cat"}},
    {"x=$(cat <<E\n)\nE\n); echo \"$x\"", {"cat", "echo $x"}},
    {"tr a-z A-Z <<< \"$s\"", {"tr a-z A-Z"}},
    // A heredoc's body starts after the line's first newline outside substitutions and
    // arithmetic (a case the fuzzer found).
    {"cat <<E; echo $((1 +\n2)) $(echo a\necho b)\nbody $(date)\nE\necho done",
     {"date", "cat", "echo a", "echo b", "echo $((1 +\n2)) $(...)", "echo done"}},
    {"for i in 1 2 3; do echo $i; done", {"echo $i"}},
    {"for ((i=0; i<$(nproc); i++)); do make -j$i; done", {"nproc", "make -j$i"}},
    {"for f; do rm \"$f\"; done", {"rm $f"}},
    {"select x in a b; do break; done", {"break"}},
    {"case $1 in a|b) make a;; (c*) make c;& *) make all;;& esac",
     {"make a", "make c", "make all"}},
    {"f() { cat x; }; f", {"cat x", "f"}},
    {"function g { ls; } > /dev/null; g", {"ls", "g"}},
    {"function h() ( pwd )", {"pwd"}},
    {"{ a; b; } 2>&1 | tee log", {"a", "b", "tee log"}},
    {"[[ -f x && $(id) =~ ^(root|admin)$ ]] && make", {"id", "make"}},
    {"(( n = $(wc -l < f) + 1 )); echo $((n * 2))", {"wc -l", "echo $((n * 2))"}},
    {"echo {1..3} {a,b}.txt", {"echo {1..3} {a,b}.txt"}},
    {"a=(1 $(seq 3) 3); declare -A m=([k]=$(date)); echo \"${a[@]}\"",
     {"seq 3", "date", "declare -A m=([k]=$(date))", "echo ${a[@]}"}},
    {"diff <(sort a) <(sort b)", {"sort a", "sort b", "diff $(...) $(...)"}},
    {"tee >(wc -l) < f", {"wc -l", "tee $(...)"}},
    {"exec 3>out.log; echo hi >&3; exec 3>&-", {"exec", "echo hi", "exec"}},
    {"trap 'rm -f \"$tmp\"' EXIT", {"rm -f $tmp", "trap rm -f \"$tmp\" EXIT"}},
    {"time ( make; make test )", {"make", "make test"}},
    {"coproc worker { cat; }", {"cat"}},
    {"while read -r l; do echo \"$l\"; done < in.txt", {"read -r l", "echo $l"}},
    {"until false; do :; done", {"false", ":"}},
    {"if a; then b; elif c; then d; else e; fi", {"a", "b", "c", "d", "e"}},
    {"echo ${x:-$(touch p)}", {"touch p", "echo ${x:-$(touch p)}"}},
    {"eval 'make && make install'", {"make", "make install"}},
    {"alias ll='ls -l'", {"ls -l", "alias ll=ls -l"}},
    {"echo $'\\x72\\x6d'", {"echo rm"}},
    {"$'\\x72m' -rf x", {"rm -rf x"}},
    {"echo `echo \\`date\\``", {"date", "echo $(...)", "echo $(...)"}},
};

TEST(CommandSplit, ReportsTheCommandsOfEveryConstruct) {
  for (const CertainCase& c : kConstructs) {
    const SplitResult r = splitCommandLine(c.line);
    EXPECT_FALSE(r.error) << c.line << ": " << r.error->message;
    EXPECT_TRUE(r.certain) << c.line << ": " << r.reason;
    EXPECT_EQ(texts(r), c.commands) << c.line;
    for (const SimpleCommand& command : r.commands) {
      EXPECT_EQ(command.unknown, "") << c.line << ": " << command.text();
    }
  }
}

std::vector<std::string> files(const SplitResult& r) {
  std::vector<std::string> out;
  for (const FileAccess& f : r.files) {
    out.push_back(std::string(f.write ? "write " : "read ") + f.path + " @" +
                  std::to_string(f.offset));
  }
  return out;
}

struct FileCase {
  const char* line;
  std::vector<std::string> files;
};

const FileCase kFileCases[] = {
    {"echo x > f", {"write f @7"}},
    {"echo x >> log 2> err 1>|out", {"write log @7", "write err @14", "write out @21"}},
    {"cat < in.txt <> rw &> both &>> more",
     {"read in.txt @4", "write rw @13", "write both @19", "write more @27"}},
    {"ls >& all", {"write all @3"}},
    {"while read l; do echo \"$l\"; done < .env", {"read .env @33"}},
    {"{ cat; } > \"out dir/f\"", {"write out dir/f @9"}},
    {"f() { cat; } > log", {"write log @13"}},
    {"exec 3>file {fd}<in", {"write file @5", "read in @12"}},
    {"x=$(cat < .env)", {"read .env @8"}},
    {"cat <<EOF\n$(echo x > f)\nEOF", {"write f @19"}},
    {"bash -c 'echo x > f'", {"write f @8"}},
    {"ls > $OUT", {"write $OUT @3"}},
    // Not files: descriptors, devices, heredocs, here-strings, process substitutions.
    {"ls >/dev/null 2>&1 <&- >&2 2>/dev/stderr </dev/stdin >/dev/fd/3 >/dev/tty 3>&1-", {}},
    {"cat <<< x <<E\nE\n", {}},
    {"tee >(wc) < <(ls)", {}},
};

TEST(CommandSplit, ReportsEveryRedirectionToAFile) {
  for (const FileCase& c : kFileCases) {
    const SplitResult r = splitCommandLine(c.line);
    ASSERT_FALSE(r.error) << c.line << ": " << r.error->message;
    EXPECT_EQ(files(r), c.files) << c.line;
  }
  EXPECT_TRUE(splitCommandLine("ls > $OUT").files.front().expands);
  EXPECT_FALSE(splitCommandLine("ls > out").files.front().expands);
}

TEST(CommandSplit, ReportsWhereEachCommandStarts) {
  const SplitResult r = splitCommandLine("a; if b\nthen  c | d; fi && $(e)");
  ASSERT_FALSE(r.error);
  std::vector<std::pair<std::string, uint32_t>> got;
  for (const SimpleCommand& c : r.commands) got.emplace_back(c.text(), c.offset);
  const std::vector<std::pair<std::string, uint32_t>> want = {{"a", 0},  {"b", 6},  {"c", 14},
                                                              {"d", 18}, {"e", 29}, {"$(...)", 27}};
  EXPECT_EQ(got, want);
}

struct PositionCase {
  const char* line;
  std::vector<std::pair<std::string, uint32_t>> commands;  // text, offset
  std::vector<std::string> files;
};

// Where each command and redirection starts, in every construct. A command inside a backtick
// substitution or a literal script (trap, eval, sh -c) is placed at the word that holds it.
const PositionCase kPositionCases[] = {
    {"cat > x.py <<'EOF'\nimport os\nEOF\npython3 x.py",
     {{"cat", 0}, {"python3 x.py", 33}},
     {"write x.py @4"}},
    {"python3 - <<EOF\nprint('$(whoami)')\nEOF", {{"whoami", 25}, {"python3 -", 0}}, {}},
    {"for i in 1 2; do echo $i; done", {{"echo $i", 17}}, {}},
    {"for ((i=0; i<$(nproc); i++)); do make; done", {{"nproc", 15}, {"make", 33}}, {}},
    {"case $1 in a|b) make a;; *) make all;; esac", {{"make a", 16}, {"make all", 28}}, {}},
    {"f() { cat x; }; f", {{"cat x", 6}, {"f", 16}}, {}},
    {"[[ -f x && $(id) == r* ]] && make", {{"id", 13}, {"make", 29}}, {}},
    {"(( n = $(wc -l < f) )); echo $((n * 2))",
     {{"wc -l", 9}, {"echo $((n * 2))", 24}},
     {"read f @15"}},
    {"a=(1 $(seq 3)); echo ${a[@]}", {{"seq 3", 7}, {"echo ${a[@]}", 16}}, {}},
    {"diff <(sort a) <(sort b)", {{"sort a", 7}, {"sort b", 17}, {"diff $(...) $(...)", 0}}, {}},
    {"trap 'rm -f t' EXIT", {{"rm -f t", 5}, {"trap rm -f t EXIT", 0}}, {}},
    {"sudo env X=1 make -j2", {{"make -j2", 13}}, {}},
    {"time ( make; make test )", {{"make", 7}, {"make test", 13}}, {}},
    {"coproc worker { cat; }", {{"cat", 16}}, {}},
    {"while read -r l; do echo \"$l\"; done < in.txt",
     {{"read -r l", 6}, {"echo $l", 20}},
     {"read in.txt @36"}},
    {"echo ${x:-$(pwd)} `date`", {{"pwd", 12}, {"date", 18}, {"echo ${x:-$(pwd)} $(...)", 0}}, {}},
};

TEST(CommandSplit, ReportsPositionsInEveryConstruct) {
  for (const PositionCase& c : kPositionCases) {
    const SplitResult r = splitCommandLine(c.line);
    ASSERT_FALSE(r.error) << c.line;
    std::vector<std::pair<std::string, uint32_t>> got;
    for (const SimpleCommand& command : r.commands)
      got.emplace_back(command.text(), command.offset);
    EXPECT_EQ(got, c.commands) << c.line;
    EXPECT_EQ(files(r), c.files) << c.line;
  }
}

struct UnknownCase {
  const char* line;
  const char* command;  // the command that is unknown
  const char* unknown;  // why
};

const UnknownCase kUnknownCases[] = {
    {"$CMD arg", "$CMD arg", "its name '$CMD' is an expansion"},
    {"\"$(which rm)\" x", "$(...) x", "its name '$(...)' comes from a command's output"},
    {"`echo rm` -rf /", "$(...) -rf /", "its name '$(...)' comes from a command's output"},
    {"*.sh", "*.sh", "its name '*.sh' is a glob pattern"},
    {"{rm,-rf,/}", "{rm,-rf,/}", "its name '{rm,-rf,/}' is a brace expansion"},
    {"eval \"$x\"", "eval $x", "eval runs '$x', an expansion"},
    {"eval 'if'", "eval if",
     "eval's script does not parse (line 1, column 3: unexpected end of file)"},
    {"bash -c \"$SCRIPT\"", "bash -c $SCRIPT", "the script of -c, '$SCRIPT', is an expansion"},
    {"bash --rcfile x -c 'a'", "bash --rcfile x -c a",
     "the shell option '--rcfile' is not one the rules understand"},
    {"bash -c", "bash -c", "the shell's -c has no script"},
    {"trap \"$cleanup\" EXIT", "trap $cleanup EXIT", "trap runs '$cleanup', an expansion"},
    {"sudo -s rm x", "sudo -s rm x", "an option of sudo is not one the rules understand"},
    {"env -S 'rm -rf /'", "env -S rm -rf /", "an option of env is not one the rules understand"},
    {"find . -exec {} \\;", "{}", "find runs the files it finds"},
};

TEST(CommandSplit, NamesWhatIsKnownOnlyWhenTheLineRuns) {
  for (const UnknownCase& c : kUnknownCases) {
    const SplitResult r = splitCommandLine(c.line);
    ASSERT_FALSE(r.error) << c.line;
    const auto it = std::find_if(r.commands.begin(), r.commands.end(),
                                 [&](const SimpleCommand& s) { return !s.unknown.empty(); });
    ASSERT_NE(it, r.commands.end()) << c.line;
    EXPECT_EQ(it->text(), c.command) << c.line;
    EXPECT_EQ(it->unknown, c.unknown) << c.line;
  }
}

struct ErrorCase {
  const char* line;
  const char* error;  // position: message
};

const ErrorCase kErrorCases[] = {
    {"if true; fi", "line 1, column 10: expected 'then' but found 'fi'"},
    {"echo 'open", "line 1, column 6: the quote ' is not closed"},
    {"echo \"open", "line 1, column 6: the quote \" is not closed"},
    {"echo `open", "line 1, column 6: the substitution ` is not closed"},
    {"echo $(open", "line 1, column 6: the substitution $( is not closed"},
    {"echo ${x", "line 1, column 6: the expansion ${ is not closed"},
    {"(a", "line 1, column 3: expected ')' but found end of file"},
    {"a)", "line 1, column 2: unexpected ')'"},
    {"{ a; ", "line 1, column 6: expected '}' but found end of file"},
    {"{ echo }", "line 1, column 9: expected '}' but found end of file"},
    {"a && ", "line 1, column 6: unexpected end of file"},
    {"| sh", "line 1, column 1: unexpected '|'"},
    {"a ;; b", "line 1, column 3: unexpected ';;'"},
    {"a & ;", "line 1, column 5: unexpected ';'"},
    {"echo a (b)", "line 1, column 8: unexpected '('"},
    {"echo x=(1)", "line 1, column 8: unexpected '('"},
    {"f (b)", "line 1, column 4: expected ')' of a function definition but found 'b'"},
    {"ls >", "line 1, column 5: the redirection > needs a target, but found end of file"},
    {"f() echo",
     "line 1, column 5: expected the function's body (a compound command) but "
     "found 'echo'"},
    {"for x in a b c do; done", "line 1, column 20: expected 'do' but found 'done'"},
    {"case x in a) ;; b esac",
     "line 1, column 19: expected ')' after the pattern but found "
     "'esac'"},
    {"x\n  then y", "line 2, column 3: unexpected 'then'"},
    {"[[ a b ]]", "line 1, column 6: expected a conditional binary operator but found 'b'"},
    {"[[ -f ]]",
     "line 1, column 7: the conditional operator -f needs an operand, but found "
     "']]'"},
    {"{ }", "line 1, column 3: unexpected '}'"},
    {"( )", "line 1, column 3: unexpected ')'"},
};

TEST(CommandSplit, RefusesWhatBashRefusesWithThePosition) {
  for (const ErrorCase& c : kErrorCases) {
    const SplitResult r = splitCommandLine(c.line);
    ASSERT_TRUE(r.error) << c.line;
    EXPECT_FALSE(r.certain);
    EXPECT_EQ(bash::describePosition(c.line, r.error->offset) + ": " + r.error->message, c.error)
        << c.line;
  }
}

TEST(CommandSplit, TextBashParsesOnlyWhenItRunsMakesTheLineUncertain) {
  // bash -n accepts these: a backtick substitution and a heredoc's body are parsed when they
  // run, and ${x@P} runs the substitutions in a variable's value. What they run is unknown
  // until then.
  for (const char* line : {"echo `if`", "cat <<E\n$(if)\nE", "x='$(rm -rf ~)'; echo ${x@P}",
                           "echo \"${y:-${x@P}}\""}) {
    const SplitResult r = splitCommandLine(line);
    EXPECT_FALSE(r.error) << line;
    EXPECT_FALSE(r.certain) << line;
    EXPECT_TRUE(r.reason.find("unexpected") != std::string::npos ||
                r.reason.find("prompt string") != std::string::npos)
        << r.reason;
  }
}

TEST(CommandSplit, KeepsQuotedWordsWhole) {
  const SplitResult r = splitCommandLine("echo \"a; b\" 'c && d' \"\" $'x\\ty'");
  ASSERT_TRUE(r.certain) << r.reason;
  ASSERT_EQ(r.commands.size(), 1u);
  EXPECT_EQ(r.commands[0].words, (std::vector<std::string>{"echo", "a; b", "c && d", "", "x\ty"}));
}

TEST(CommandSplit, RecognisesAForkBombByItsShape) {
  for (const char* line : {":(){ :|:& };:", "bomb() { bomb | bomb & }; bomb", "f() { f & f; }; f",
                           "function b { { b; } | b; }"}) {
    const SplitResult r = splitCommandLine(line);
    EXPECT_FALSE(r.fork_bomb.empty()) << line;
  }
  EXPECT_EQ(splitCommandLine(":(){ :|:& };:").fork_bomb, ":");
  // `:` is a no-op; recursion alone, or a pipeline of other commands, is no bomb.
  for (const char* line : {":", ": > f", "while :; do :; done", "f() { f; }", "f() { g | h & }",
                           "f() { echo; }; f | f &"}) {
    EXPECT_EQ(splitCommandLine(line).fork_bomb, "") << line;
  }
}

TEST(CommandSplit, ReadsDeepArithmeticWithoutRecursion) {
  // `((` ... `))` is arithmetic, however many parentheses it holds, as bash reads it.
  const SplitResult r = splitCommandLine(repeat("(", 10000) + "a" + repeat(")", 10000));
  EXPECT_FALSE(r.error);
  EXPECT_TRUE(r.commands.empty());
}

TEST(CommandSplit, AllowsModestNesting) {
  const std::string line = repeat("echo $(", 10) + "touch p" + repeat(")", 10);
  const SplitResult r = splitCommandLine(line);
  EXPECT_TRUE(r.certain) << r.reason;
  ASSERT_EQ(r.commands.size(), 11u);
  EXPECT_EQ(r.commands[0].text(), "touch p");
}

TEST(CommandSplit, RefusesDeepNestingWithoutCrashing) {
  const std::string hostile[] = {
      repeat("( ", 10000) + "a", repeat("$(", 10000),    repeat("{ ", 10000), repeat("${", 10000),
      repeat("$[", 10000),       repeat("\"$(", 10000),  repeat("<(", 10000), repeat("$((", 10000),
      repeat("if ", 10000),      repeat("[[ ( ", 10000),
  };
  for (const std::string& line : hostile) {
    const SplitResult r = splitCommandLine(line);
    ASSERT_TRUE(r.error) << line.substr(0, 20);
  }
  EXPECT_EQ(splitCommandLine(repeat("( ", 10000) + "a" + repeat(" )", 10000)).error->message,
            "nested more than 100 levels deep");
  EXPECT_EQ(splitCommandLine(repeat("$(", 10000)).error->message,
            "nested more than 100 levels deep");
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

TEST(CommandSplit, NestedShellScriptsAreFollowedToADepth) {
  const SplitResult shallow = splitCommandLine(wrapInShells("touch p", 8));
  EXPECT_TRUE(shallow.certain) << shallow.reason;
  EXPECT_EQ(texts(shallow), std::vector<std::string>{"touch p"});
  const SplitResult deep = splitCommandLine(wrapInShells("touch p", 9));
  ASSERT_EQ(deep.commands.size(), 1u);
  EXPECT_EQ(deep.commands[0].unknown, "the script of -c is nested in more than 8 scripts");
}

TEST(CommandSplit, HandlesLongFlatLines) {
  const SplitResult r = splitCommandLine(repeat("a;", 20000));
  EXPECT_TRUE(r.certain) << r.reason;
  EXPECT_EQ(r.commands.size(), 20000u);
}

TEST(CommandSplit, SurvivesRandomInput) {
  // Shell metacharacters in random order: the parser must never crash or hang (ASan/UBSan);
  // the fuzzer (tests/bash/fuzz) goes further.
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
