#pragma once
// Start-up configuration: the settings (declared once, in settings.cpp's table) from their
// defaults, then the --config JSON file, then BACKYARD_* environment variables, then flags, each
// over the one before; then the checks that span settings. Parsed once in main() before any
// thread starts.

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/docker/docker_backend.h"
#include "backends/local/python_sessions.h"
#include "backends/local/sandbox.h"
#include "common/result.h"
#include "permissions/ruleset.h"
#include "settings.h"
#include "tools/tool.h"

namespace byd {

// A tenant of the HTTP server, from the tokens file (see tenants.cpp).
struct TenantSpec {
  std::string name;
  std::string token_sha256;                     // lowercase hex; the token itself is not kept
  size_t max_sessions = 0;                      // at most this many sessions open at once
  std::optional<permissions::Ruleset> ruleset;  // none: the server's
  std::optional<Limits> limits;                 // none: the server's
  std::string workspace_root;                   // its sessions' directories go here; "": the root
  // The runtimes it may use; none: every one. Asking for none, it gets the first of these.
  std::optional<std::vector<std::string>> runtimes;
};

// A runtime of the Docker backend, from the runtimes file (see runtimes.cpp): the image its
// sessions' containers run, given or built on demand, and its own limits and network rules.
struct RuntimeSpec {
  std::string name;
  std::string description;
  std::string image;                          // given, or the tag of `recipe`
  std::optional<docker::ImageRecipe> recipe;  // set: built on first use
  std::optional<int64_t> memory_bytes;        // --container-memory
  std::optional<double> cpus;                 // --cpus
  std::optional<int64_t> pids;                // --pids
  std::optional<int64_t> max_timeout_s;       // the ceiling of a call's timeout_s
  nlohmann::json network;  // a ruleset's "network" section, in place of the ruleset's; null: none
};

struct Config {
  std::string backend = "local";
  std::string root = ".";
  std::vector<std::string> allow;
  std::string state_file;
  bool state_sync = false;
  // "on": tools declare outputSchema and answer structuredContent beside their text; "off":
  // the text alone (see --structured-content).
  std::string structured_content = "on";
  bool write_sync = false;  // fsync written files and their directories (see --write-sync)
  std::string log_level = "info";
  size_t max_message_bytes = 16 * 1024 * 1024;
  size_t workers = 4;
  Limits limits;
  std::string ruleset = "default";  // a preset name or a ruleset file
  nlohmann::json ruleset_inline;    // the ruleset itself, when the config file holds it
  std::string ask_fallback = "deny";
  double ask_timeout_s = 120;
  bool print_ruleset = false;
  std::string audit_log;                       // a JSON line per tool call
  bool ui = false;                             // HTTP: the operator's page at /ui
  std::map<std::string, std::string> origins;  // where each setting not at its default came from
  std::string sandbox = "bwrap";               // or "container", "none"
  std::string sandbox_user;                    // see SandboxOptions::user
  SandboxLimits sandbox_limits;
  PythonOptions python;
  // HTTP transport.
  std::string transport = "stdio";  // or "http"
  std::string listen = "127.0.0.1:8765";
  std::string remote_url;  // --backend remote: the remote's MCP endpoint
  // --backend remote over HTTP: each session's agent is placed by an engine ("kubernetes",
  // "docker-swarm"), not found at --remote-url ("none").
  std::string placement = "none";
  std::string kubernetes_api;         // the API server ("": the pod's own)
  std::string kubernetes_token_file;  // with kubernetes_api: its bearer token ("": none)
  std::string kubernetes_ca_file;     // with kubernetes_api: its CA ("": the system's)
  std::string kubernetes_namespace;   // where claims are made ("": the pod's own)
  std::string kubernetes_warm_pool = "backyard-agents";
  std::string kubernetes_workspace_size = "1Gi";
  std::string swarm_network = "backyard-agents";         // docker-swarm: the agents' network
  std::string agent_image = "backyard-mcp/agent:local";  // docker-swarm: the agents' image
  int agent_port = 8080;                   // where a placed agent listens in its sandbox
  std::string agent_token_file;            // the token placed agents take
  std::string agent_token;                 // read from agent_token_file
  std::string token_file;                  // the bearer token (else BACKYARD_TOKEN)
  std::string token;                       // read from token_file or the environment
  std::string tokens_file;                 // the tenants, each known by its token
  std::string admin_token_file;            // the operator's token (/metrics)
  std::string admin_token;                 // read from admin_token_file
  std::vector<TenantSpec> tenants;         // read from tokens_file
  std::string runtimes_file;               // Docker: the runtimes sessions may pick
  std::vector<RuntimeSpec> runtimes;       // read from runtimes_file
  std::vector<std::string> allowed_hosts;  // Host/Origin names accepted beside loopback ones
  size_t max_sessions = 64;
  double session_idle_s = 1800;
  double shutdown_grace_s = 10;
  double read_timeout_s = 30;  // HTTP: for a client to send its whole request
  size_t max_connections = 1024;
  size_t max_connections_per_address = 256;
  std::string workspace_root;  // HTTP + Local/Docker: each session works in a fresh directory here
  double workspace_ttl_s = 0;  // session directories unopened this long are deleted (0: never)
  bool persist_containers = false;  // a named session's container is stopped, not removed
  size_t session_pool = 0;          // HTTP: sessions kept ready (started ahead) for each tenant
  DockerOptions docker;             // --backend docker
  bool root_given = false;          // --root (or "root" in the file) was set, not defaulted
  // "HOST:PORT" of `listen`, split; "[::1]:0" gives "::1" and 0.
  std::string listenHost() const;
  int listenPort() const;
};

// What main() should do after parsing.
struct ParsedCommandLine {
  Config config;
  SettingOrigins origins;     // where each setting that is not its default came from
  bool print_config = false;  // --print-config
  bool exit_now = false;      // --help or --version was printed
  int exit_code = 0;
};

// Parses flags, the environment and the config file. Errors (bad flag, unknown config key,
// wrong type or range from any source, missing root) come back as InvalidArgument naming the
// source and the setting; main() prints them and exits 2.
Result<ParsedCommandLine> parseCommandLine(int argc, char** argv, const std::string& version);

// The effective ruleset: inline, a preset by name, or a file. Errors name the file and rule.
Result<permissions::Ruleset> loadRuleset(const Config& config);

// The tenants of `config.tokens_file` (tenants.cpp), checked against the other settings.
// Errors name the file, the tenant and the key, never a token.
Result<std::vector<TenantSpec>> loadTenants(const Config& config);

// The runtimes of `config.runtimes_file` (runtimes.cpp). Errors name the file, the runtime and
// the key.
Result<std::vector<RuntimeSpec>> loadRuntimes(const Config& config);
// The runtime named `name`, or null.
const RuntimeSpec* findRuntime(const Config& config, std::string_view name);

// For the files that hold settings (the config file, the tokens file): the setting with this
// key, or null; and a path setting's value with a relative path made relative to `dir` (a
// ruleset's preset name stays a name).
const Setting* findSetting(std::string_view key);
nlohmann::json besideConfigFile(const Setting& s, const nlohmann::json& value,
                                const std::filesystem::path& dir);
Result<nlohmann::json> readJsonFile(const std::string& path, const std::string& what);
// A setting's value from such a file in `dir`, checked as the setting is (errors say `where`),
// into `config`.
Status applySetting(std::string_view key, const nlohmann::json& value,
                    const std::filesystem::path& dir, const std::string& where, Config& config);

}  // namespace byd
