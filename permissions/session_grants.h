#pragma once
// What a user allowed "for the rest of this session" when asked: an operation and what it
// covers (a directory's contents, one path, the commands a pattern matches, or any code). A
// grant only turns an "ask" into allow; a rule that denies still denies. One per MCP session;
// safe to use from several threads at once.

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "permissions/command_split.h"
#include "permissions/ruleset.h"

namespace re2 {
class RE2;
}

namespace byd::permissions {

struct SessionGrant {
  enum class Kind { kUnder, kExact, kCommands, kAnyCode };
  Operation op = Operation::kRead;
  Kind kind = Kind::kExact;
  std::string text;  // the directory key, the path key, or the command pattern

  // What one "yes for this session" covers for `target`: the target's directory and all below
  // it for a path in a directory, the path itself at the workspace root, and any code for
  // run_python. Commands are offered per simple command (forCommand).
  static SessionGrant forTarget(Operation op, std::string_view target);
  // For a simple command: its first word, and its second when that is a plain word (a
  // subcommand, "git commit"), then "*" ("git commit*"). None for a word a pattern cannot
  // name literally (one with '*' or '?').
  static std::optional<SessionGrant> forCommand(const SimpleCommand& command);
  // "write under 'src/**'", "execute of commands matching 'git commit*'".
  std::string describe() const;
};

class SessionGrants {
 public:
  SessionGrants();
  ~SessionGrants();
  SessionGrants(const SessionGrants&) = delete;
  SessionGrants& operator=(const SessionGrants&) = delete;

  // For execute, `target` is one simple command's text (SimpleCommand::text()).
  bool covers(Operation op, std::string_view target) const;
  void add(const SessionGrant& grant);
  std::vector<SessionGrant> all() const;

  // What the user answered about reaching a network target ("host:port"), which holds for
  // the rest of the session, yes or no.
  std::optional<bool> networkAnswer(const std::string& target) const;
  void setNetworkAnswer(const std::string& target, bool allowed);

 private:
  struct Entry {
    SessionGrant grant;
    std::shared_ptr<const re2::RE2> re;  // kCommands
  };
  mutable std::mutex mu_;
  std::vector<Entry> entries_;
  std::map<std::string, bool> network_;
};

}  // namespace byd::permissions
