#pragma once
// The one table of the server's settings. Each setting is declared here once — its JSON key in
// the config file, its flag, its environment variable (BACKYARD_ and the key in capitals), its
// type, range, default (the Config struct's) and help text — and everything else is derived
// from the table: the flags and --help, the config file's reader, the environment, the config
// file's JSON schema (schemas/config.schema.json, held equal by a test), the README's table of
// settings (held equal by a test) and --print-config. Precedence: flag, then environment, then
// config file, then default.

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace byd {

struct Config;

enum class SettingType {
  kString,   // any text
  kChoice,   // one of `choices`
  kBool,     // a flag without a value; true/false (1/0, yes/no) in the environment
  kInt,      // a whole number in [min, max]
  kNumber,   // a number in [min, max]
  kList,     // strings: a repeated flag, a JSON array, a comma-separated variable
  kRuleset,  // a preset name or a file; in the config file also the ruleset itself
};

struct Setting {
  const char* key;   // in the config file; BACKYARD_<KEY> in the environment
  const char* flag;  // on the command line
  SettingType type;
  const char* value_name;  // in --help: DIR, N, SECONDS, ...
  const char* help;
  std::vector<const char*> choices;     // kChoice
  double min = 0, max = 0;              // kInt, kNumber
  const char* shown_default = nullptr;  // for --help and the README, when the value is not it
  nlohmann::json (*get)(const Config&) = nullptr;
  void (*set)(Config&, const nlohmann::json&) = nullptr;
  // Names a file or directory (a ruleset: when it is no preset). In the config file a relative
  // one is relative to the file's directory, not to the current directory.
  bool path = false;

  std::string envName() const;
};

// Keys a config file may hold beside the settings, which the server ignores.
inline constexpr const char* kConfigFileAnnotations[] = {"$schema", "$comment"};

// Every setting, in the order --help and the README list them.
const std::vector<Setting>& settingsTable();

// Where a setting's effective value came from: "default", "config file PATH",
// "environment BACKYARD_X", "flag --x".
using SettingOrigins = std::map<std::string, std::string>;

// A raw value from a flag or the environment, as the setting's JSON value; `source` names it
// in the error ("BACKYARD_MAX_SESSIONS=abc: not an integer").
Result<nlohmann::json> parseSettingText(const Setting& s, const std::string& text,
                                        const std::string& source);
// A value from the config file, checked against the setting's type and range.
Status checkSettingJson(const Setting& s, const nlohmann::json& value, const std::string& source);

// The config file's JSON schema, made from the table.
nlohmann::json configSchema();
// The README's table of settings (Markdown), made from the table.
std::string settingsMarkdown();
// The help line of a setting's flag: its meaning, default and variable.
std::string flagHelp(const Setting& s);
// Every setting's effective value and where it came from, as --print-config prints them.
nlohmann::json describeSettings(const Config& config, const SettingOrigins& origins);

}  // namespace byd
