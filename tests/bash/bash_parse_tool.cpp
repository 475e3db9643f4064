// Reads JSON lines {"src": "..."} on stdin and writes, for each, what the permission rules see of
// it: {"ok": true, "commands": [{"words": [...], "offset": N, "unknown": "...", "via":
// ["sudo"]}], "files":
// [{"access": "read"|"write", "path": "...", "offset": N}], "certain": bool} or {"ok": false,
// "error": "line L, column C: ..."}. tests/bash/differential.py compares it with bash itself.

#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "permissions/command_split.h"

int main() {
  using nlohmann::json;
  using namespace byd::permissions;
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    const std::string src = json::parse(line).at("src").get<std::string>();
    const SplitResult r = splitCommandLine(src);
    json out;
    if (r.error) {
      out = {{"ok", false},
             {"error", bash::describePosition(src, r.error->offset) + ": " + r.error->message}};
    } else {
      json commands = json::array();
      for (const SimpleCommand& c : r.commands) {
        json one = {{"words", c.words}, {"offset", c.offset}};
        if (!c.unknown.empty()) one["unknown"] = c.unknown;
        if (!c.via.empty()) one["via"] = c.via;
        commands.push_back(std::move(one));
      }
      json files = json::array();
      for (const FileAccess& f : r.files) {
        files.push_back(
            {{"access", f.write ? "write" : "read"}, {"path", f.path}, {"offset", f.offset}});
      }
      out = {{"ok", true}, {"commands", commands}, {"files", files}, {"certain", r.certain}};
      if (!r.certain) out["reason"] = r.reason;
      if (!r.fork_bomb.empty()) out["fork_bomb"] = r.fork_bomb;
    }
    std::cout << out.dump(-1, ' ', false, json::error_handler_t::replace) << '\n';
  }
  return 0;
}
