#include "permissions/env_policy.h"

#include <algorithm>
#include <iterator>
#include <string>

namespace byd::permissions {
namespace {

// Listed in the README (Permissions: variables that change what runs); keep the two equal.
constexpr std::string_view kNames[] = {
    // Shells: start-up files, hooks run before each prompt or command, options. (Not IFS:
    // shells reset it at start, and within a line it splits only expansions, and a command
    // whose name is an expansion is judged unknown whatever IFS is.)
    "BASH_ENV", "ENV", "PROMPT_COMMAND", "SHELLOPTS", "BASHOPTS", "PS4", "PATH", "HOME", "CDPATH",
    "GLOBIGNORE", "BASH_XTRACEFD", "ZDOTDIR", "INPUTRC", "BASH_LOADABLES_PATH",
    // The C library: character-set and locale modules it loads.
    "GCONV_PATH", "LOCPATH", "NLSPATH", "HOSTALIASES", "RESOLV_HOST_CONF",
    // git: configuration, hooks, helpers it runs, the repository it works on.
    "GIT_EXEC_PATH", "GIT_ASKPASS", "SSH_ASKPASS", "SUDO_ASKPASS", "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR", "GIT_PAGER", "GIT_EXTERNAL_DIFF", "GIT_TEMPLATE_DIR",
    "GIT_PROXY_COMMAND", "GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "XDG_CONFIG_HOME",
    // Programs that others start: editors, pagers, browsers, compilers for make.
    "EDITOR", "VISUAL", "PAGER", "MANPAGER", "LESSOPEN", "LESSCLOSE", "BROWSER", "CC", "CXX", "CPP",
    "LD", "MAKEFLAGS", "MAKEFILES", "MFLAGS",
    // Interpreters: start-up code, module search paths, options that load code.
    "PYTHONSTARTUP", "PYTHONPATH", "PYTHONHOME", "PYTHONUSERBASE", "PYTHONBREAKPOINT",
    "PYTHONWARNINGS", "PYTHONPLATLIBDIR", "PYTHONEXECUTABLE", "PYTHONPYCACHEPREFIX", "NODE_OPTIONS",
    "NODE_PATH", "NODE_REPL_EXTERNAL_MODULE", "PERL5OPT", "PERL5LIB", "PERLLIB", "PERL5DB",
    "RUBYOPT", "RUBYLIB", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH",
    "TCLLIBPATH", "R_PROFILE", "R_PROFILE_USER"};

// Whole families: exported shell functions, the dynamic linker (LD_PRELOAD, LD_AUDIT, ...),
// git's configuration and ssh command, Lua's start-up code, npm's configuration.
constexpr std::string_view kPrefixes[] = {"BASH_FUNC_", "LD_",      "GIT_CONFIG", "GIT_SSH",
                                          "LUA_INIT",   "LUA_PATH", "LUA_CPATH",  "npm_config_"};

}  // namespace

bool changesWhatRuns(std::string_view name) {
  if (std::find(std::begin(kNames), std::end(kNames), name) != std::end(kNames)) return true;
  // npm reads its settings in any case (NPM_CONFIG_SCRIPT_SHELL as npm_config_script_shell).
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return std::any_of(std::begin(kPrefixes), std::end(kPrefixes), [&](std::string_view prefix) {
    return name.starts_with(prefix) || std::string_view(lower).starts_with(prefix);
  });
}

std::string_view assignedName(std::string_view assignment) {
  const size_t end = assignment.find_first_of("=[+");
  return assignment.substr(0, end);
}

}  // namespace byd::permissions
