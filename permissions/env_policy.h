#pragma once
// Environment variables that change what runs rather than what a program works on: a shell's
// start-up file (BASH_ENV), the dynamic linker's preloads (LD_*), git's configuration
// (GIT_CONFIG_*, core.fsmonitor runs a command), an interpreter's start-up code
// (PYTHONSTARTUP, NODE_OPTIONS, PERL5OPT), the program search path, ... Setting one, in the
// `env` of execute or as NAME=value in the line, runs code that no rule judged, so the Guard
// allows it only where a rule names the variable. Pure functions, safe from any thread.

#include <string_view>

namespace byd::permissions {

// Whether setting `name` can change which code runs.
bool changesWhatRuns(std::string_view name);

// The name an assignment word sets: "PATH" for "PATH=/x", "a" for "a[1]=x" and "a+=y".
std::string_view assignedName(std::string_view assignment);

}  // namespace byd::permissions
