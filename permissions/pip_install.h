#pragma once
// What a `pip install` command line installs, for the ruleset's `install` operation: the
// distributions it names (`pip install numpy 'requests[socks]>=2'`), and what it installs that
// only pip knows when it runs (a requirements file, a path, a URL, an expansion). Recognized:
// pip, pip3, pip3.N, python/python3/python3.N -m pip, and uv pip, with `install`; the words
// are a simple command's, after quote removal and wrappers (command_split.h).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace byd::permissions {

struct PipInstall {
  std::vector<std::string> names;    // normalized distribution names
  std::vector<std::string> unknown;  // what names no distribution before pip runs ("-r req.txt")
};

// What `words` installs, or nullopt when it is not a pip install.
std::optional<PipInstall> pipInstallOf(const std::vector<std::string>& words);

// The distribution a requirement names ("requests[socks]>=2.0; python_version>'3'" is
// "requests"), normalized; nullopt when it names none (a path, a URL, an expansion).
std::optional<std::string> requirementName(std::string_view requirement);

}  // namespace byd::permissions
