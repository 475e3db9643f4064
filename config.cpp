#include "config.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>

#include "backends/local/package_installer.h"
#include "common/container.h"
#include "common/text.h"
#include "mcp/crypto.h"
#include "permissions/presets.h"
#include "settings.h"

namespace byd {
namespace {

Status checkDirectory(const std::string& what, const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return invalidArgument(what + " '" + path + "' does not exist");
  }
  if (!std::filesystem::is_directory(path, ec)) {
    return invalidArgument(what + " '" + path + "' is not a directory");
  }
  return okStatus();
}

}  // namespace

Result<permissions::Ruleset> loadRuleset(const Config& c) {
  if (!c.ruleset_inline.is_null()) {
    auto doc = permissions::extendPreset(c.ruleset_inline);
    if (!doc.ok()) return invalidArgument("config ruleset: " + doc.status().message());
    auto rs = permissions::Ruleset::fromJson(*doc);
    if (!rs.ok()) return invalidArgument("config ruleset: " + rs.status().message());
    return rs;
  }
  for (std::string_view name : permissions::presetNames()) {
    if (name == c.ruleset) {
      return permissions::Ruleset::fromJson(*permissions::presetJson(name),
                                            permissions::Ruleset::Compile::kOnFirstUse);
    }
  }
  std::error_code ec;
  if (!std::filesystem::is_regular_file(c.ruleset, ec)) {
    return invalidArgument("--ruleset '" + c.ruleset +
                           "' is neither a preset (default, permissive, readonly, strict) nor a "
                           "ruleset file");
  }
  BYD_ASSIGN_OR_RETURN(nlohmann::json file, readJsonFile(c.ruleset, "ruleset file"));
  auto doc = permissions::extendPreset(file);
  if (!doc.ok()) {
    return invalidArgument("ruleset file '" + c.ruleset + "': " + doc.status().message());
  }
  auto rs = permissions::Ruleset::fromJson(*doc);
  if (!rs.ok())
    return invalidArgument("ruleset file '" + c.ruleset + "': " + rs.status().message());
  return rs;
}

// The first line of a token file, without trailing blanks.
static Result<std::string> readToken(const std::string& path, const std::string& flag) {
  const std::optional<std::string> token = firstLineOf(path);
  if (!token) return invalidArgument(flag + " '" + path + "' cannot be read");
  if (token->empty()) return invalidArgument(flag + " '" + path + "' is empty");
  return *token;
}

// --backend remote: where the tools run, and what this server leaves to the remote.
// The first of `keys` whose setting `c` gives a value other than its default, or null.
static const Setting* firstGiven(const Config& c, std::initializer_list<const char*> keys) {
  const Config defaults;
  for (const char* key : keys) {
    const Setting* s = findSetting(key);
    if (s->get(c) != s->get(defaults)) return s;
  }
  return nullptr;
}

// A Kubernetes quantity of bytes, as a PVC asks for: digits and, at most, one unit.
static bool storageQuantity(std::string_view q) {
  size_t digits = 0;
  while (digits < q.size() && std::isdigit(static_cast<unsigned char>(q[digits])) != 0) ++digits;
  if (digits == 0 || digits > 18) return false;
  const std::string_view unit = q.substr(digits);
  for (std::string_view u : {"", "Ki", "Mi", "Gi", "Ti", "Pi", "k", "M", "G", "T", "P"}) {
    if (unit == u) return q != "0";
  }
  return false;
}

// --placement: each HTTP session's agent in a sandbox of its own; the agents' token read.
static Status checkPlacement(Config& c) {
  if (c.backend != "remote") {
    return invalidArgument("--placement " + c.placement +
                           " needs --backend remote: each session's tools run on its agent");
  }
  if (c.transport != "http") {
    return invalidArgument("--placement " + c.placement +
                           " places the sessions of an HTTP front: it needs --transport http");
  }
  if (!c.remote_url.empty()) {
    return invalidArgument("--remote-url names one service for every session; --placement " +
                           c.placement + " places an agent for each: give one of them");
  }
  if (c.agent_token_file.empty()) {
    return invalidArgument("--placement " + c.placement +
                           " needs --agent-token-file, the token its agents take");
  }
  BYD_ASSIGN_OR_RETURN(c.agent_token, readToken(c.agent_token_file, "--agent-token-file"));
  // Each engine's settings, not the other's.
  const Setting* other = c.placement == "kubernetes"
                             ? firstGiven(c, {"swarm_network", "agent_image"})
                             : firstGiven(c, {"kubernetes_api", "kubernetes_token_file",
                                              "kubernetes_ca_file", "kubernetes_namespace",
                                              "kubernetes_warm_pool", "kubernetes_workspace_size"});
  if (other != nullptr) {
    return invalidArgument(std::string(other->flag) + " does not apply to --placement " +
                           c.placement);
  }
  if (!storageQuantity(c.kubernetes_workspace_size)) {
    return invalidArgument("--kubernetes-workspace-size '" + c.kubernetes_workspace_size +
                           "' is no storage quantity (digits and a unit: 1Gi, 500Mi, 2G)");
  }
  if (!c.kubernetes_api.empty() && !c.kubernetes_api.starts_with("http://") &&
      !c.kubernetes_api.starts_with("https://")) {
    return invalidArgument("--kubernetes-api '" + c.kubernetes_api +
                           "' is not an https:// URL (https://HOST:PORT)");
  }
  if (c.kubernetes_api.empty()) {
    if (const Setting* s = firstGiven(c, {"kubernetes_token_file", "kubernetes_ca_file"})) {
      return invalidArgument(std::string(s->flag) +
                             " needs --kubernetes-api: in a pod, the service account's is used");
    }
  }
  // A session's sandbox holds its workspace (--workspace-root and --runtimes are refused for
  // every remote backend, by their own checks).
  if (c.persist_containers) {
    return invalidArgument("--persist-containers does not apply to --placement " + c.placement +
                           ": each session's workspace is in its sandbox, made from the warm "
                           "pool's template");
  }
  return okStatus();
}

static Status checkRemote(Config& c) {
  if (c.placement != "none") {
    BYD_RETURN_IF_ERROR(checkPlacement(c));
  } else if (c.remote_url.empty()) {
    return invalidArgument(
        "--backend remote needs --remote-url, the remote service's endpoint (or, over HTTP, "
        "--placement)");
  } else if (!c.remote_url.starts_with("http://") && !c.remote_url.starts_with("https://")) {
    return invalidArgument("--remote-url '" + c.remote_url +
                           "' is not an http:// or https:// URL (http://HOST:PORT/mcp)");
  } else if (c.transport != "stdio") {
    return invalidArgument(
        "--backend remote with --remote-url serves one client over stdio: it needs --transport "
        "stdio (an HTTP front places an agent for each session: --placement)");
  }
  // The remote judges every call by its own rules, where the files and commands are.
  for (const char* key : {"ruleset", "ask_fallback", "allow", "sandbox", "session_pool"}) {
    if (c.origins.contains(key)) {
      const Setting* s = findSetting(key);
      return invalidArgument(std::string(s != nullptr ? s->flag : key) +
                             " does not apply to --backend remote: the remote service's rules, "
                             "workspace and sandbox apply to every call");
    }
  }
  return okStatus();
}

// Checks the HTTP settings and reads the tokens.
static Status finishHttp(Config& c) {
  if (c.listenPort() < 0) {
    return invalidArgument("--listen '" + c.listen + "' is not HOST:PORT (port 0 to 65535)");
  }
  if (!c.token_file.empty()) {
    BYD_ASSIGN_OR_RETURN(c.token, readToken(c.token_file, "--token-file"));
  } else if (const char* env = getenv("BACKYARD_TOKEN"); env != nullptr && *env != '\0') {
    c.token = env;
  }
  if (!c.tokens_file.empty()) {
    if (c.transport != "http") return invalidArgument("--tokens-file needs --transport http");
    if (!c.token.empty()) {
      return invalidArgument(std::string("--tokens-file names every tenant's token: give it or ") +
                             (c.token_file.empty() ? "BACKYARD_TOKEN" : "--token-file") +
                             ", not both");
    }
  }
  if (!c.admin_token_file.empty()) {
    if (c.transport != "http") return invalidArgument("--admin-token-file needs --transport http");
    BYD_ASSIGN_OR_RETURN(c.admin_token, readToken(c.admin_token_file, "--admin-token-file"));
    if (c.admin_token == c.token) {
      return invalidArgument(
          "--admin-token-file holds the token of /mcp: give the operator a "
          "token of their own");
    }
  }
  if (c.ui && (c.transport != "http" || c.admin_token.empty())) {
    return invalidArgument(
        "--ui needs --transport http and --admin-token-file: the page answers the operator's "
        "token alone");
  }
  const std::string host = c.listenHost();
  const bool loopback = host == "127.0.0.1" || host == "localhost" || host == "::1";
  if (c.transport == "http" && !loopback && c.token.empty() && c.tokens_file.empty()) {
    return invalidArgument("listening on " + host +
                           ", beyond this machine, needs a token: --token-file FILE, "
                           "BACKYARD_TOKEN or --tokens-file FILE");
  }
  return okStatus();
}

Result<nlohmann::json> readJsonFile(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return notFound(what + " '" + path + "' cannot be read");
  std::stringstream ss;
  ss << in.rdbuf();
  auto doc = nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return invalidArgument(what + " '" + path + "' is not valid JSON");
  return doc;
}

const Setting* findSetting(std::string_view key) {
  for (const Setting& s : settingsTable()) {
    if (key == s.key) return &s;
  }
  return nullptr;
}

// A path setting's value from the config file in `dir`: relative paths made relative to `dir`
// (a ruleset's preset name stays a name).
nlohmann::json besideConfigFile(const Setting& s, const nlohmann::json& value,
                                const std::filesystem::path& dir) {
  const auto resolve = [&](const nlohmann::json& v) -> nlohmann::json {
    if (!v.is_string()) return v;
    const std::string text = v.get<std::string>();
    if (text.empty() || text.front() == '/') return v;
    if (s.type == SettingType::kRuleset) {
      for (std::string_view name : permissions::presetNames()) {
        if (name == text) return v;
      }
    }
    std::string out = (dir / text).lexically_normal().string();
    if (out.size() > 1 && out.back() == '/') out.pop_back();  // "dir/." is "dir/" so far
    return out;
  };
  if (!value.is_array()) return resolve(value);
  nlohmann::json out = nlohmann::json::array();
  for (const nlohmann::json& item : value) out.push_back(resolve(item));
  return out;
}

Status applySetting(std::string_view key, const nlohmann::json& value,
                    const std::filesystem::path& dir, const std::string& where, Config& config) {
  const Setting* s = findSetting(key);
  if (s == nullptr) return internalError("no setting " + std::string(key));
  BYD_RETURN_IF_ERROR(checkSettingJson(*s, value, where));
  s->set(config, s->path ? besideConfigFile(*s, value, dir) : value);
  return okStatus();
}

std::string Config::listenHost() const {
  const size_t colon = listen.rfind(':');
  std::string host = colon == std::string::npos ? listen : listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return host;
}

int Config::listenPort() const {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 >= listen.size()) return -1;
  const std::string port = listen.substr(colon + 1);
  if (port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos) return -1;
  const int value = std::stoi(port);
  return value <= 65535 ? value : -1;
}

namespace {

// The config file's settings, over the defaults.
Status applyConfigFile(const std::string& path, Config& c, SettingOrigins& origins) {
  BYD_ASSIGN_OR_RETURN(nlohmann::json doc, readJsonFile(path, "config file"));
  const std::string source = "config file " + path;
  if (!doc.is_object()) return invalidArgument(source + ": not a JSON object");
  const std::filesystem::path dir = std::filesystem::absolute(path).parent_path();
  for (const auto& [key, value] : doc.items()) {
    if (std::ranges::find(kConfigFileAnnotations, key) != std::end(kConfigFileAnnotations)) {
      if (!value.is_string()) return invalidArgument(source + ": " + key + ": not a string");
      continue;
    }
    const Setting* s = findSetting(key);
    if (s == nullptr) return invalidArgument(source + ": unknown setting '" + key + "'");
    BYD_RETURN_IF_ERROR(checkSettingJson(*s, value, source + ": " + key));
    s->set(c, s->path ? besideConfigFile(*s, value, dir) : value);
    origins[key] = source;
  }
  return okStatus();
}

// BACKYARD_<KEY> variables, over the config file (an empty one counts as unset).
Status applyEnvironment(Config& c, SettingOrigins& origins) {
  for (const Setting& s : settingsTable()) {
    const std::string name = s.envName();
    const char* text = getenv(name.c_str());
    if (text == nullptr || *text == '\0') continue;
    BYD_ASSIGN_OR_RETURN(nlohmann::json value,
                         parseSettingText(s, text, name + "=" + std::string(text)));
    s.set(c, value);
    origins[s.key] = "environment " + name;
  }
  return okStatus();
}

}  // namespace

Result<ParsedCommandLine> parseCommandLine(int argc, char** argv, const std::string& version) {
  ParsedCommandLine out;
  std::string config_file;
  bool print_schema = false, print_table = false;
  CLI::App app{"backyard-mcp: an MCP server that gives an agent a console on a workspace"};
  app.set_version_flag("--version", "backyard-mcp " + version);
  app.add_option("--config", config_file,
                 "JSON config file of settings (schemas/config.schema.json) [BACKYARD_CONFIG]")
      ->type_name("FILE");
  // Each setting's flag, from the table; the values are kept as text and parsed as the
  // environment's are, so that both give the same errors.
  std::map<std::string, std::vector<std::string>> given;
  std::map<std::string, bool> switched;
  for (const Setting& s : settingsTable()) {
    if (s.type == SettingType::kBool) {
      app.add_flag(s.flag, switched[s.key], flagHelp(s));
      continue;
    }
    CLI::Option* o = app.add_option(s.flag, given[s.key], flagHelp(s))->type_name(s.value_name);
    if (s.type != SettingType::kList) o->expected(1);
  }
  app.add_flag("--print-ruleset", out.config.print_ruleset,
               "Print the effective ruleset as JSON and exit");
  app.add_flag("--print-config", out.print_config,
               "Print the effective settings as JSON, each with where it came from, and exit");
  app.add_flag("--print-config-schema", print_schema,
               "Print the config file's JSON schema (made from the settings) and exit");
  app.add_flag("--print-settings-table", print_table,
               "Print the README's table of settings (Markdown) and exit");
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    out.exit_now = true;
    out.exit_code = app.exit(e);
    return out;
  } catch (const CLI::ParseError& e) {
    return invalidArgument(e.what());
  }
  if (print_schema || print_table) {
    printf("%s",
           print_schema ? (configSchema().dump(2) + "\n").c_str() : settingsMarkdown().c_str());
    out.exit_now = true;
    return out;
  }

  // Defaults, then the config file, then the environment, then the flags.
  Config& c = out.config;
  if (config_file.empty()) {
    if (const char* env = getenv("BACKYARD_CONFIG"); env != nullptr) config_file = env;
  }
  if (!config_file.empty()) BYD_RETURN_IF_ERROR(applyConfigFile(config_file, c, out.origins));
  BYD_RETURN_IF_ERROR(applyEnvironment(c, out.origins));
  for (const Setting& s : settingsTable()) {
    if (app.count(s.flag) == 0) continue;
    nlohmann::json value;
    if (s.type == SettingType::kBool) {
      value = switched[s.key];
    } else if (s.type == SettingType::kList) {
      value = given[s.key];
    } else {
      const std::string& text = given[s.key].back();
      BYD_ASSIGN_OR_RETURN(value, parseSettingText(s, text, std::string(s.flag) + "=" + text));
    }
    s.set(c, value);
    out.origins[s.key] = std::string("flag ") + s.flag;
  }
  c.origins = out.origins;
  if (c.docker.host.empty()) {
    if (const char* env = getenv("DOCKER_HOST")) c.docker.host = env;
  }
  BYD_RETURN_IF_ERROR(parsePackageIndex(c.python.package_index).status());
  if (c.python.packages_dir.empty()) c.python.packages_dir = defaultPackagesDir();
  c.docker.python_options = c.python;
  BYD_RETURN_IF_ERROR(finishHttp(c));

  if (!c.workspace_root.empty()) {
    BYD_RETURN_IF_ERROR(checkDirectory("--workspace-root", c.workspace_root));
    // One spelling of it, so that the directories made in it are known by name.
    c.workspace_root = std::filesystem::canonical(c.workspace_root).string();
    if (c.transport != "http" || (c.backend != "local" && c.backend != "docker")) {
      return invalidArgument(
          "--workspace-root needs --transport http and the Local or Docker backend");
    }
  }
  if (c.backend == "docker" && !c.allow.empty()) {
    return invalidArgument("--allow is for the Local backend: a container sees its workspace only");
  }
  if (c.backend == "docker" && !c.docker.container_name.empty() && c.transport == "http") {
    return invalidArgument("--container-name keeps one container: it needs --transport stdio");
  }
  if (c.backend == "local" || (c.backend == "docker" && c.root_given)) {
    BYD_RETURN_IF_ERROR(checkDirectory("root", c.root));
    for (const std::string& dir : c.allow)
      BYD_RETURN_IF_ERROR(checkDirectory("--allow directory", dir));
  }
  if (c.sandbox == "container" && c.backend == "local") {
    if (const std::string seen = containerEvidence(); seen.empty()) {
      return invalidArgument(
          "--sandbox container: this server does not run in a container (no /.dockerenv, "
          "/run/.containerenv, KUBERNETES_SERVICE_HOST or container= in its environment), so "
          "nothing would isolate its commands; use --sandbox bwrap, or --sandbox none to run "
          "them as plain processes");
    }
  }
  if (c.backend == "remote") BYD_RETURN_IF_ERROR(checkRemote(c));
  if (c.backend != "remote" && !c.remote_url.empty()) {
    return invalidArgument("--remote-url needs --backend remote");
  }
  if (c.backend != "remote" && c.placement != "none") BYD_RETURN_IF_ERROR(checkPlacement(c));
  if (c.placement == "none") {
    if (const Setting* s = firstGiven(
            c, {"kubernetes_api", "kubernetes_token_file", "kubernetes_ca_file",
                "kubernetes_namespace", "kubernetes_warm_pool", "kubernetes_workspace_size",
                "swarm_network", "agent_image", "agent_port", "agent_token_file"})) {
      return invalidArgument(std::string(s->flag) + " needs --placement");
    }
  }
  if (c.backend != "state" && (!c.state_file.empty() || c.state_sync)) {
    return invalidArgument("--state-file and --state-sync need --backend state");
  }
  if (!c.runtimes_file.empty()) {
    BYD_ASSIGN_OR_RETURN(c.runtimes, loadRuntimes(c));
  }
  if (!c.tokens_file.empty()) {
    BYD_ASSIGN_OR_RETURN(c.tenants, loadTenants(c));
    if (!c.admin_token.empty()) {
      BYD_ASSIGN_OR_RETURN(const std::string admin, mcp::sha256Hex(c.admin_token));
      for (const TenantSpec& t : c.tenants) {
        if (t.token_sha256 == admin) {
          return invalidArgument("--admin-token-file holds the token of tenant '" + t.name +
                                 "': give the operator a token of their own");
        }
      }
    }
  }
  if (c.session_pool > 0 && (c.transport != "http" || c.backend == "state")) {
    return invalidArgument(
        "--session-pool needs --transport http and a backend with sandboxes or containers "
        "(local or docker), whose sessions it starts ahead");
  }
  if (c.persist_containers && (c.transport != "http" || c.backend != "docker")) {
    return invalidArgument("--persist-containers needs --transport http and --backend docker");
  }
  if (c.persist_containers && c.workspace_root.empty() &&
      std::ranges::none_of(c.tenants,
                           [](const TenantSpec& t) { return !t.workspace_root.empty(); })) {
    return invalidArgument(
        "--persist-containers needs a workspace root (--workspace-root, or a tenant's "
        "workspace_root): a kept container works in a directory that outlives it");
  }
  if (c.workspace_ttl_s > 0) {
    const bool stored =
        !c.workspace_root.empty() || std::ranges::any_of(c.tenants, [](const TenantSpec& t) {
          return !t.workspace_root.empty();
        });
    if (c.transport != "http" || (!stored && c.placement == "none")) {
      return invalidArgument(
          "--workspace-ttl needs --transport http and a workspace root (--workspace-root, or "
          "a tenant's workspace_root) whose directories it deletes, or --placement, whose "
          "named sessions' kept workspaces it deletes");
    }
  }
  return out;
}

}  // namespace byd
