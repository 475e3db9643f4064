#include "permissions/pip_install.h"

#include <algorithm>
#include <array>
#include <cctype>

#include "backends/python/import_names.h"

namespace byd::permissions {
namespace {

// pip install's options that take a value (pip 23/24), long and short.
constexpr std::array<std::string_view, 34> kValued = {"-r",
                                                      "--requirement",
                                                      "-c",
                                                      "--constraint",
                                                      "-e",
                                                      "--editable",
                                                      "-i",
                                                      "--index-url",
                                                      "--extra-index-url",
                                                      "-f",
                                                      "--find-links",
                                                      "-t",
                                                      "--target",
                                                      "--prefix",
                                                      "--root",
                                                      "--src",
                                                      "--upgrade-strategy",
                                                      "--platform",
                                                      "--python-version",
                                                      "--implementation",
                                                      "--abi",
                                                      "--no-binary",
                                                      "--only-binary",
                                                      "--progress-bar",
                                                      "--global-option",
                                                      "-C",
                                                      "--config-settings",
                                                      "--trusted-host",
                                                      "--cert",
                                                      "--client-cert",
                                                      "--cache-dir",
                                                      "--log",
                                                      "--proxy",
                                                      "--report"};
// Of those, the ones whose value says what is installed.
constexpr std::array<std::string_view, 4> kInstallsFrom = {"-r", "--requirement", "-e",
                                                           "--editable"};

std::string_view baseName(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// `prefix` and a number: "pip3.11" for "pip3.".
bool numberedAfter(std::string_view name, std::string_view prefix) {
  if (!name.starts_with(prefix) || name.size() == prefix.size()) return false;
  const std::string_view n = name.substr(prefix.size());
  return std::all_of(n.begin(), n.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool isPip(std::string_view name) {
  return name == "pip" || name == "pip3" || numberedAfter(name, "pip3.");
}

bool isPython(std::string_view name) {
  return name == "python" || name == "python3" || numberedAfter(name, "python3.");
}

bool listed(std::string_view word, auto const& list) {
  return std::find(list.begin(), list.end(), word) != list.end();
}

}  // namespace

std::optional<std::string> requirementName(std::string_view req) {
  // PEP 508: a name of letters, digits, '-', '_' and '.', starting and ending with a letter or
  // digit, then extras, a version or a marker. A path, a URL or an expansion names none.
  size_t end = 0;
  while (end < req.size() && (std::isalnum(static_cast<unsigned char>(req[end])) ||
                              req[end] == '-' || req[end] == '_' || req[end] == '.')) {
    ++end;
  }
  if (end == 0 || !std::isalnum(static_cast<unsigned char>(req[0])) ||
      !std::isalnum(static_cast<unsigned char>(req[end - 1]))) {
    return std::nullopt;
  }
  const std::string_view rest = req.substr(end);
  if (rest.find('/') != std::string_view::npos || rest.find('$') != std::string_view::npos ||
      rest.find('`') != std::string_view::npos) {
    return std::nullopt;  // "pkg @ https://...", "./dir", "$PKG"
  }
  if (!rest.empty() && std::string_view("[<>=!~;@ ").find(rest[0]) == std::string_view::npos) {
    return std::nullopt;  // "numpy*", "pkg.whl:x": not a requirement
  }
  const std::string_view name = req.substr(0, end);
  for (std::string_view ext : {".whl", ".zip", ".tar.gz", ".tgz", ".tar.bz2"}) {
    if (name.ends_with(ext)) return std::nullopt;  // an archive's file name
  }
  return normalizeDistribution(name);
}

std::optional<PipInstall> pipInstallOf(const std::vector<std::string>& words) {
  size_t at = 0;
  if (words.empty()) return std::nullopt;
  const std::string_view first = baseName(words[0]);
  if (isPip(first)) {
    at = 1;
  } else if (isPython(first)) {
    // python -m pip, with interpreter flags before it (-I, -S, -u, ...).
    at = 1;
    while (at < words.size() && words[at] != "-m" && words[at].starts_with("-")) ++at;
    if (at + 1 >= words.size() || words[at] != "-m" || words[at + 1] != "pip") {
      return std::nullopt;
    }
    at += 2;
  } else if (first == "uv" && words.size() > 1 && words[1] == "pip") {
    at = 2;
  } else {
    return std::nullopt;
  }
  // pip's general options may come before the command.
  while (at < words.size() && words[at].starts_with("-")) ++at;
  if (at >= words.size() || words[at] != "install") return std::nullopt;
  PipInstall out;
  for (size_t i = at + 1; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w == "--") continue;
    if (w.starts_with("-")) {
      // --opt=value, --opt value, -X value and -Xvalue.
      const bool attached = w.size() > 2 && w[1] != '-' && listed(w.substr(0, 2), kValued);
      const size_t eq = attached ? 2 : w.find('=');
      const std::string_view opt = std::string_view(w).substr(0, eq);
      if (!listed(opt, kValued)) continue;  // a flag
      std::string value;
      if (attached) {
        value = w.substr(2);
      } else if (eq != std::string::npos) {
        value = w.substr(eq + 1);
      } else if (i + 1 < words.size()) {
        value = words[++i];
      }
      if (listed(opt, kInstallsFrom)) out.unknown.push_back(std::string(opt) + " " + value);
      continue;
    }
    if (auto name = requirementName(w)) {
      out.names.push_back(std::move(*name));
    } else {
      out.unknown.push_back(w);
    }
  }
  return out;
}

}  // namespace byd::permissions
