#include "permissions/presets.h"

#include <array>
#include <string>

#include "permissions/ruleset.h"

namespace byd::permissions {
namespace {

using nlohmann::json;

constexpr std::array<std::string_view, 4> kPresetNames = {"default", "permissive", "readonly",
                                                          "strict"};

constexpr std::string_view kSecretReason = "secrets are never read or written";

// Secret files at any depth: .env, .env.*, *.pem, *.key, id_rsa*, .ssh/, .aws/, .gnupg/,
// .netrc, credentials*, *secret*. A directory pattern also covers everything below it.
json secretPathRules() {
  json rules = json::array();
  for (const char* p : {"**/.env", "**/.env.*", "**/*.pem", "**/*.key", "**/id_rsa*", "**/.ssh",
                        "**/.ssh/**", "**/.aws", "**/.aws/**", "**/.gnupg", "**/.gnupg/**",
                        "**/.netrc", "**/credentials*", "**/*secret*", "**/*secret*/**"}) {
    rules.push_back({{"pattern", p},
                     {"action", "deny"},
                     {"description", kSecretReason},
                     {"ignore_case", true}});
  }
  return rules;
}

// A command any of whose words is a path naming a secret.
json secretCommandRule() {
  return {
      {"regex",
       "(?:.* )?(?:[^ ]*/)?(?:\\.env(?:\\.[^ /]*)?|[^ /]*\\.pem|[^ /]*\\.key|id_rsa[^ /]*|"
       "\\.netrc|credentials[^ /]*|[^ /]*secret[^ /]*|\\.ssh|\\.aws|\\.gnupg)(?:/[^ ]*)?(?: .*)?"},
      {"action", "deny"},
      {"description", kSecretReason},
      {"ignore_case", true}};
}

// Python code is judged by its text, which cannot hold against code that builds a name; until
// the kernel enforces the file rules for run_python, this denies what names a secret file
// outright: a string literal that is such a path (".env", 'keys/server.pem', "~/.ssh/id_rsa").
// The standard library's `secrets`, an attribute `.key` and prose in a string are not paths.
json secretPythonRule() {
  return {
      {"regex",
       ".*[\"'](?:[^\"'\\s]*/)?(?:\\.env(?:\\.[^\"'\\s/]*)?|[^\"'\\s/]*\\.pem|[^\"'\\s/]*\\.key|"
       "id_rsa[^\"'\\s/]*|\\.netrc|credentials[^\"'\\s/]*|[^\"'\\s/]*secret[^\"'\\s/]*|\\.ssh|"
       "\\.aws|\\.gnupg)(?:/[^\"'\\s]*)?[\"'].*"},
      {"action", "deny"},
      {"description", kSecretReason},
      {"ignore_case", true}};
}

json deny(const char* regex, const char* description) {
  return {{"regex", regex}, {"action", "deny"}, {"description", description}};
}

json dangerousCommandRules() {
  return json::array({
      deny("rm(?: .*)? (?:/|/\\*|~|~/|~/\\*|\\$HOME|\\$HOME/|\\$HOME/\\*)(?: .*)?",
           "removing / or the home directory is never allowed"),
      deny("mkfs(?:\\.[^ ]+)?(?: .*)?", "making file systems is never allowed"),
      deny("dd(?: .*)? of=/dev/[^ ]+(?: .*)?", "dd onto a device is never allowed"),
      deny("chmod (?:.* )?(?:-[^ ]*R[^ ]*|--recursive) (?:.* )?(?:/|/\\*)(?: .*)?",
           "changing the mode of / recursively is never allowed"),
      deny("(?:shutdown|reboot|halt|poweroff)(?: .*)?|(?:systemctl|init|telinit) "
           "(?:poweroff|reboot|halt|0|6)(?: .*)?",
           "shutting the machine down is never allowed"),
      deny("(?:.* )?(?:of=)?/dev/(?:sd|hd|vd|xvd|nvme|mmcblk)[^ ]*(?: .*)?",
           "writing to a disk device is never allowed"),
  });
}

json systemPathRules() {
  json rules = json::array();
  for (const char* p : {"/etc/**", "/usr/**", "/bin/**", "/sbin/**", "/lib/**", "/lib64/**",
                        "/boot/**", "/dev/**", "/proc/**", "/sys/**", "/var/lib/**"}) {
    rules.push_back(
        {{"pattern", p}, {"action", "deny"}, {"description", "system paths are never written"}});
  }
  return rules;
}

// What deleting or moving away would lose for good: the repository's history.
json protectedPathRules() {
  json rules = json::array();
  for (const char* p : {"**/.git", "**/.git/**"}) {
    rules.push_back({{"pattern", p},
                     {"action", "deny"},
                     {"description", "the repository's history is never moved or deleted"},
                     {"ignore_case", true}});
  }
  return rules;
}

json concat(json a, const json& b) {
  for (const json& rule : b) a.push_back(rule);
  return a;
}

json section(const char* fallback, json rules) {
  return {{"default", fallback}, {"rules", std::move(rules)}};
}

// Path operations share their rules; `path_default` and `write_default` are their defaults.
json build(const char* name, const char* description, const char* global, const char* read,
           const char* write, const char* run, const char* install, json write_extra) {
  const json secrets = secretPathRules();
  return {{"name", name},
          {"description", description},
          {"default", global},
          {"read", section(read, secrets)},
          {"ls", section(read, secrets)},
          {"glob", section(read, secrets)},
          {"grep", section(read, secrets)},
          {"write", section(write, concat(secrets, write_extra))},
          {"edit", section(write, concat(secrets, write_extra))},
          {"mkdir", section(write, concat(secrets, write_extra))},
          {"move", section(write, concat(concat(secrets, protectedPathRules()), write_extra))},
          {"delete", section(write, concat(concat(secrets, protectedPathRules()), write_extra))},
          {"execute",
           section(run, concat(json::array({secretCommandRule()}), dangerousCommandRules()))},
          {"python", section(run, json::array({secretPythonRule()}))},
          {"network", section("deny", json::array())},
          {"install", section(install, json::array())}};
}

}  // namespace

std::span<const std::string_view> presetNames() { return kPresetNames; }

Result<nlohmann::json> presetJson(std::string_view name) {
  if (name == "default") {
    return build("default", "Reading is allowed; writing, editing and running ask first.", "ask",
                 "allow", "ask", "ask", "ask", json::array());
  }
  if (name == "permissive") {
    return build("permissive",
                 "Everything is allowed except secrets, writes to system paths and dangerous "
                 "commands.",
                 "allow", "allow", "allow", "allow", "allow", systemPathRules());
  }
  if (name == "readonly") {
    return build("readonly",
                 "A code-review bot: read, ls, glob and grep only; nothing is written or run.",
                 "deny", "allow", "deny", "deny", "deny", json::array());
  }
  if (name == "strict") {
    return build("strict", "Everything asks first; secrets and dangerous commands are denied.",
                 "ask", "ask", "ask", "ask", "deny", json::array());
  }
  return notFound("no ruleset preset '" + std::string(name) +
                  "' (presets: default, permissive, readonly, strict)");
}

Result<nlohmann::json> extendPreset(const nlohmann::json& doc) {
  if (!doc.is_object() || !doc.contains("extends")) return doc;
  const json& base_name = doc["extends"];
  if (!base_name.is_string()) return invalidArgument("extends: not a preset's name");
  auto base = presetJson(base_name.get<std::string>());
  if (!base.ok()) return invalidArgument("extends: " + base.status().message());
  json out = std::move(*base);
  out["name"] = doc.value("name", out.value("name", "") + " (extended)");
  // mkdir, move and delete change files as write does: a file's write section speaks for
  // them too, unless it has a section of their own.
  json own = doc;
  if (const auto write = doc.find("write"); write != doc.end()) {
    for (const char* op : {"mkdir", "move", "delete"}) {
      if (!own.contains(op)) own[op] = *write;
    }
  }
  for (const auto& [key, value] : own.items()) {
    if (key == "extends" || key == "name") continue;
    const auto op = parseOperation(key);
    if (!op || !value.is_object() || !out.contains(key)) {
      out[key] = value;  // the schema judges it
      continue;
    }
    json& merged = out[key];
    for (const auto& [field, v] : value.items()) {
      if (field == "rules" && v.is_array() && merged.contains("rules")) {
        for (const json& rule : v) merged["rules"].push_back(rule);
      } else {
        merged[field] = v;
      }
    }
  }
  return out;
}

}  // namespace byd::permissions
