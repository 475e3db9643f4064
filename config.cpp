#include "config.h"

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "permissions/presets.h"
#include "schemas/embedded.h"
#include "schemas/validator.h"

namespace byd {
namespace {

Result<nlohmann::json> readJsonFile(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return notFound(what + " '" + path + "' cannot be read");
  std::stringstream ss;
  ss << in.rdbuf();
  auto doc = nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return invalidArgument(what + " '" + path + "' is not valid JSON");
  return doc;
}

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
    auto rs = permissions::Ruleset::fromJson(c.ruleset_inline);
    if (!rs.ok()) return invalidArgument("config ruleset: " + rs.status().message());
    return rs;
  }
  for (std::string_view name : permissions::presetNames()) {
    if (name == c.ruleset) return permissions::Ruleset::fromJson(*permissions::presetJson(name));
  }
  std::error_code ec;
  if (!std::filesystem::is_regular_file(c.ruleset, ec)) {
    return invalidArgument("--ruleset '" + c.ruleset +
                           "' is neither a preset (default, permissive, readonly, strict) nor a "
                           "ruleset file");
  }
  BYD_ASSIGN_OR_RETURN(nlohmann::json doc, readJsonFile(c.ruleset, "ruleset file"));
  auto rs = permissions::Ruleset::fromJson(doc);
  if (!rs.ok())
    return invalidArgument("ruleset file '" + c.ruleset + "': " + rs.status().message());
  return rs;
}

// Checks the HTTP settings and reads the token.
static Status finishHttp(Config& c) {
  if (c.listenPort() < 0) {
    return invalidArgument("--listen '" + c.listen + "' is not HOST:PORT (port 0 to 65535)");
  }
  if (!c.token_file.empty()) {
    std::ifstream in(c.token_file, std::ios::binary);
    if (!in) return invalidArgument("--token-file '" + c.token_file + "' cannot be read");
    std::getline(in, c.token);
    while (!c.token.empty() && (c.token.back() == '\r' || c.token.back() == ' ')) {
      c.token.pop_back();
    }
    if (c.token.empty()) return invalidArgument("--token-file '" + c.token_file + "' is empty");
  } else if (const char* env = getenv("BACKYARD_TOKEN"); env != nullptr && *env != '\0') {
    c.token = env;
  }
  const std::string host = c.listenHost();
  const bool loopback = host == "127.0.0.1" || host == "localhost" || host == "::1";
  if (c.transport == "http" && !loopback && c.token.empty()) {
    return invalidArgument("listening on " + host +
                           ", beyond this machine, needs a token: --token-file FILE or "
                           "BACKYARD_TOKEN");
  }
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

Status applyConfigJson(const nlohmann::json& doc, Config& c) {
  BYD_ASSIGN_OR_RETURN(const nlohmann::json* schema, schemas::embedded("config.schema.json"));
  if (Status s = schemas::validate(*schema, doc, "config"); !s.ok()) {
    return invalidArgument(s.message());
  }
  // Validated: every member present has the right type.
  if (doc.contains("backend")) c.backend = doc["backend"].get<std::string>();
  if (doc.contains("root")) {
    c.root = doc["root"].get<std::string>();
    c.root_given = true;
  }
  if (doc.contains("allow")) c.allow = doc["allow"].get<std::vector<std::string>>();
  if (doc.contains("state_file")) c.state_file = doc["state_file"].get<std::string>();
  if (doc.contains("state_sync")) c.state_sync = doc["state_sync"].get<bool>();
  if (doc.contains("log_level")) c.log_level = doc["log_level"].get<std::string>();
  if (doc.contains("max_message_bytes"))
    c.max_message_bytes = doc["max_message_bytes"].get<size_t>();
  if (doc.contains("max_text_bytes"))
    c.limits.max_text_bytes = doc["max_text_bytes"].get<uint64_t>();
  if (doc.contains("max_read_bytes"))
    c.limits.max_read_bytes = doc["max_read_bytes"].get<uint64_t>();
  if (doc.contains("max_results")) c.limits.max_results = doc["max_results"].get<size_t>();
  if (doc.contains("workers")) c.workers = doc["workers"].get<size_t>();
  if (doc.contains("transport")) c.transport = doc["transport"].get<std::string>();
  if (doc.contains("listen")) c.listen = doc["listen"].get<std::string>();
  if (doc.contains("token_file")) c.token_file = doc["token_file"].get<std::string>();
  if (doc.contains("allow_host")) {
    c.allowed_hosts = doc["allow_host"].get<std::vector<std::string>>();
  }
  if (doc.contains("max_sessions")) c.max_sessions = doc["max_sessions"].get<size_t>();
  if (doc.contains("session_idle_s")) c.session_idle_s = doc["session_idle_s"].get<double>();
  if (doc.contains("workspace_root")) c.workspace_root = doc["workspace_root"].get<std::string>();
  if (doc.contains("read_timeout_s")) c.read_timeout_s = doc["read_timeout_s"].get<double>();
  if (doc.contains("max_connections")) c.max_connections = doc["max_connections"].get<size_t>();
  if (doc.contains("max_connections_per_address")) {
    c.max_connections_per_address = doc["max_connections_per_address"].get<size_t>();
  }
  if (doc.contains("shutdown_grace_s")) {
    c.shutdown_grace_s = doc["shutdown_grace_s"].get<double>();
  }
  if (auto r = doc.find("ruleset"); r != doc.end()) {
    if (r->is_object()) {
      c.ruleset_inline = *r;
    } else {
      c.ruleset = r->get<std::string>();
    }
  }
  if (doc.contains("ask_fallback")) c.ask_fallback = doc["ask_fallback"].get<std::string>();
  if (doc.contains("ask_timeout_s")) c.ask_timeout_s = doc["ask_timeout_s"].get<double>();
  if (doc.contains("sandbox")) c.sandbox = doc["sandbox"].get<std::string>();
  if (doc.contains("sandbox_user")) c.sandbox_user = doc["sandbox_user"].get<std::string>();
  if (doc.contains("max_timeout_s")) c.limits.max_timeout_s = doc["max_timeout_s"].get<int64_t>();
  return okStatus();
}

Result<ParsedCommandLine> parseCommandLine(int argc, char** argv, const std::string& version) {
  ParsedCommandLine out;
  Config flags;
  std::string config_file;
  CLI::App app{"backyard-mcp: an MCP server that gives an agent a console on a workspace"};
  app.set_version_flag("--version", "backyard-mcp " + version);
  app.add_option("--config", config_file, "JSON config file (schemas/config.schema.json)");
  app.add_option("--backend", flags.backend,
                 "Workspace backend: state (in memory), local, or docker (a container per session)")
      ->check(CLI::IsMember({"state", "local", "docker"}));
  app.add_option("--docker-host", flags.docker.host,
                 "Docker: the engine's address, unix:///PATH or tcp://HOST:PORT (else DOCKER_HOST, "
                 "else unix:///var/run/docker.sock)");
  app.add_option("--image", flags.docker.image, "Docker: the image (default python:3.12-slim)");
  app.add_option("--runtime", flags.docker.runtime,
                 "Docker: auto (gVisor when the engine has runsc), runc or runsc")
      ->check(CLI::IsMember({"auto", "runc", "runsc"}));
  app.add_option("--container-name", flags.docker.container_name,
                 "Docker: reattach this container (start it if stopped) and keep it at exit");
  app.add_option("--network", flags.docker.network,
                 "Docker: the container's network (default none)");
  app.add_option("--container-memory", flags.docker.memory_bytes,
                 "Docker: memory limit in bytes, swap included (default 1 GiB)")
      ->check(CLI::Range(int64_t{64} << 20, int64_t{1} << 40));
  app.add_option("--cpus", flags.docker.cpus, "Docker: CPUs (default 1)")
      ->check(CLI::Range(0.01, 1024.0));
  app.add_option("--pids", flags.docker.pids, "Docker: processes at most (default 256)")
      ->check(CLI::Range(int64_t{8}, int64_t{1} << 22));
  app.add_option("--root", flags.root, "Workspace root directory (Local); default: current dir");
  app.add_option("--allow", flags.allow, "Further directory the file tools may use (repeatable)");
  app.add_option("--state-file", flags.state_file,
                 "State: JSON snapshot loaded at start and saved at exit");
  app.add_flag("--state-sync", flags.state_sync, "State: save the snapshot after every write");
  app.add_option("--log-level", flags.log_level, "Log level on stderr")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  app.add_option("--max-message-bytes", flags.max_message_bytes,
                 "Largest JSON-RPC message accepted (default 16 MiB)")
      ->check(CLI::Range(size_t{1024}, size_t{1} << 30));
  app.add_option("--max-text-bytes", flags.limits.max_text_bytes,
                 "A tool's text result is cut here, with a note (default 100 KiB)")
      ->check(CLI::Range(uint64_t{1024}, uint64_t{1} << 30));
  app.add_option("--max-read-bytes", flags.limits.max_read_bytes,
                 "Largest image or file read_file/edit_file loads whole (default 10 MiB)")
      ->check(CLI::Range(uint64_t{1024}, uint64_t{1} << 32));
  app.add_option("--max-results", flags.limits.max_results,
                 "Most entries ls, glob and grep return (default 1000)")
      ->check(CLI::Range(size_t{1}, size_t{1000000}));
  app.add_option("--workers", flags.workers, "Threads running tool calls (default 4)")
      ->check(CLI::Range(size_t{1}, size_t{256}));
  app.add_option("--ruleset", flags.ruleset,
                 "Permission ruleset: default, permissive, readonly, strict, or a JSON file");
  app.add_option("--ask-fallback", flags.ask_fallback,
                 "What 'ask' becomes when the client cannot ask the user: deny (default) or allow")
      ->check(CLI::IsMember({"deny", "allow"}));
  app.add_option("--ask-timeout", flags.ask_timeout_s,
                 "Seconds to wait for the user's answer to an 'ask' (default 120)")
      ->check(CLI::Range(1.0, 3600.0));
  app.add_flag("--print-ruleset", flags.print_ruleset,
               "Print the effective ruleset as JSON and exit");
  app.add_option("--sandbox", flags.sandbox,
                 "How execute runs commands: bwrap (namespaces, seccomp; the default) or none "
                 "(no isolation)")
      ->check(CLI::IsMember({"bwrap", "none"}));
  app.add_option("--sandbox-user", flags.sandbox_user,
                 "Who a root server's commands and kernels run as: a user name or uid, never "
                 "root (default: the workspace's owner, or uid 65533 when that is root)");
  app.add_option("--max-timeout", flags.limits.max_timeout_s,
                 "Longest timeout_s execute accepts, in seconds (default 600)")
      ->check(CLI::Range(int64_t{1}, int64_t{86400}));
  app.add_option("--max-output-bytes", flags.limits.max_output_bytes,
                 "execute cuts stdout and stderr each at this many bytes (default 100 KiB)")
      ->check(CLI::Range(size_t{1024}, size_t{1} << 30));
  app.add_option(
      "--memory-limit", flags.sandbox_limits.memory_bytes,
      "Memory, bytes, of each sandboxed process and of the sandbox as a whole (its commands "
      "and Python kernels together, where a cgroup can be made) (default 1 GiB; 0: none)");
  app.add_option(
      "--process-limit", flags.sandbox_limits.processes,
      "Processes of the sandbox, its commands and kernels together (default 256; 0: none)");
  app.add_option("--file-size-limit", flags.sandbox_limits.file_size_bytes,
                 "Largest file a sandboxed command may write, bytes (default 1 GiB; 0: none)");
  app.add_option("--open-files-limit", flags.sandbox_limits.open_files,
                 "Open files of a sandboxed command (default 1024)");
  app.add_option("--python", flags.python.python,
                 "Interpreter for run_python (default /usr/bin/python3)");
  app.add_option("--python-sessions", flags.python.max_sessions,
                 "run_python sessions per connection (default 8)")
      ->check(CLI::Range(size_t{1}, size_t{256}));
  int64_t idle_minutes = 30;
  app.add_option("--python-idle", idle_minutes,
                 "Minutes after which an unused run_python session is stopped (default 30)")
      ->check(CLI::Range(int64_t{1}, int64_t{10080}));
  app.add_option("--cpu-limit", flags.sandbox_limits.cpu_seconds,
                 "CPU seconds of a sandboxed command (default 0: only the wall-clock timeout)");
  app.add_option("--transport", flags.transport, "stdio (the default) or http")
      ->check(CLI::IsMember({"stdio", "http"}));
  app.add_option("--listen", flags.listen,
                 "HTTP: HOST:PORT to listen on (default 127.0.0.1:8765; port 0 picks a free one)");
  app.add_option("--token-file", flags.token_file,
                 "HTTP: file holding the bearer token clients must send (or BACKYARD_TOKEN)");
  app.add_option("--allow-host", flags.allowed_hosts,
                 "HTTP: a further host name accepted in Host and Origin (repeatable)");
  app.add_option("--max-sessions", flags.max_sessions, "HTTP: sessions at once (default 64)")
      ->check(CLI::Range(size_t{1}, size_t{100000}));
  app.add_option("--session-idle", flags.session_idle_s,
                 "HTTP: seconds after which an unused session is ended (default 1800)")
      ->check(CLI::Range(1.0, 604800.0));
  app.add_option("--read-timeout", flags.read_timeout_s,
                 "HTTP: seconds a client has to send each whole request, headers and body, from "
                 "its first byte (default 30)")
      ->check(CLI::Range(1.0, 3600.0));
  app.add_option("--max-connections", flags.max_connections,
                 "HTTP: connections open at once; more are refused with 503 (default 1024)")
      ->check(CLI::Range(size_t{1}, size_t{100000}));
  app.add_option("--max-connections-per-address", flags.max_connections_per_address,
                 "HTTP: connections open at once from one client address (default 256)")
      ->check(CLI::Range(size_t{1}, size_t{100000}));
  app.add_option("--workspace-root", flags.workspace_root,
                 "HTTP, Local: each session works in a fresh directory made under this one");
  app.add_option("--shutdown-grace", flags.shutdown_grace_s,
                 "HTTP: seconds calls in flight get to finish after SIGTERM (default 10)")
      ->check(CLI::Range(0.0, 3600.0));
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    out.exit_now = true;
    out.exit_code = app.exit(e);
    return out;
  } catch (const CLI::ParseError& e) {
    return invalidArgument(e.what());
  }

  Config& c = out.config;
  if (!config_file.empty()) {
    BYD_ASSIGN_OR_RETURN(nlohmann::json doc, readJsonFile(config_file, "config file"));
    BYD_RETURN_IF_ERROR(applyConfigJson(doc, c));
  }
  // Flags given on the command line win over the file.
  auto given = [&](const char* name) { return app.count(name) > 0; };
  if (given("--backend")) c.backend = flags.backend;
  if (given("--root")) c.root = flags.root;
  if (given("--allow")) c.allow = flags.allow;
  if (given("--state-file")) c.state_file = flags.state_file;
  if (given("--state-sync")) c.state_sync = flags.state_sync;
  if (given("--log-level")) c.log_level = flags.log_level;
  if (given("--max-message-bytes")) c.max_message_bytes = flags.max_message_bytes;
  if (given("--max-text-bytes")) c.limits.max_text_bytes = flags.limits.max_text_bytes;
  if (given("--max-read-bytes")) c.limits.max_read_bytes = flags.limits.max_read_bytes;
  if (given("--max-results")) c.limits.max_results = flags.limits.max_results;
  if (given("--workers")) c.workers = flags.workers;
  if (given("--ruleset")) {
    c.ruleset = flags.ruleset;
    c.ruleset_inline = nullptr;
  }
  if (given("--ask-fallback")) c.ask_fallback = flags.ask_fallback;
  if (given("--ask-timeout")) c.ask_timeout_s = flags.ask_timeout_s;
  c.print_ruleset = flags.print_ruleset;
  if (given("--sandbox")) c.sandbox = flags.sandbox;
  if (given("--sandbox-user")) c.sandbox_user = flags.sandbox_user;
  if (given("--max-timeout")) c.limits.max_timeout_s = flags.limits.max_timeout_s;
  if (given("--max-output-bytes")) c.limits.max_output_bytes = flags.limits.max_output_bytes;
  if (given("--memory-limit")) c.sandbox_limits.memory_bytes = flags.sandbox_limits.memory_bytes;
  if (given("--process-limit")) c.sandbox_limits.processes = flags.sandbox_limits.processes;
  if (given("--file-size-limit")) {
    c.sandbox_limits.file_size_bytes = flags.sandbox_limits.file_size_bytes;
  }
  if (given("--open-files-limit")) c.sandbox_limits.open_files = flags.sandbox_limits.open_files;
  if (given("--cpu-limit")) c.sandbox_limits.cpu_seconds = flags.sandbox_limits.cpu_seconds;
  if (given("--python")) c.python.python = flags.python.python;
  if (given("--python-sessions")) c.python.max_sessions = flags.python.max_sessions;
  if (given("--python-idle")) c.python.idle = std::chrono::minutes(idle_minutes);
  if (given("--transport")) c.transport = flags.transport;
  if (given("--listen")) c.listen = flags.listen;
  if (given("--token-file")) c.token_file = flags.token_file;
  if (given("--allow-host")) c.allowed_hosts = flags.allowed_hosts;
  if (given("--max-sessions")) c.max_sessions = flags.max_sessions;
  if (given("--session-idle")) c.session_idle_s = flags.session_idle_s;
  if (given("--shutdown-grace")) c.shutdown_grace_s = flags.shutdown_grace_s;
  if (given("--workspace-root")) c.workspace_root = flags.workspace_root;
  if (given("--read-timeout")) c.read_timeout_s = flags.read_timeout_s;
  if (given("--max-connections")) c.max_connections = flags.max_connections;
  if (given("--max-connections-per-address")) {
    c.max_connections_per_address = flags.max_connections_per_address;
  }
  if (given("--docker-host")) c.docker.host = flags.docker.host;
  if (c.docker.host.empty()) {
    if (const char* env = getenv("DOCKER_HOST")) c.docker.host = env;
  }
  if (given("--image")) c.docker.image = flags.docker.image;
  if (given("--runtime")) c.docker.runtime = flags.docker.runtime;
  if (given("--container-name")) c.docker.container_name = flags.docker.container_name;
  if (given("--network")) c.docker.network = flags.docker.network;
  if (given("--container-memory")) c.docker.memory_bytes = flags.docker.memory_bytes;
  if (given("--cpus")) c.docker.cpus = flags.docker.cpus;
  if (given("--pids")) c.docker.pids = flags.docker.pids;
  c.docker.python_options = c.python;
  c.root_given = c.root_given || given("--root");
  BYD_RETURN_IF_ERROR(finishHttp(c));

  if (!c.workspace_root.empty()) {
    BYD_RETURN_IF_ERROR(checkDirectory("--workspace-root", c.workspace_root));
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
  if (c.backend != "state" && (!c.state_file.empty() || c.state_sync)) {
    return invalidArgument("--state-file and --state-sync need --backend state");
  }
  return out;
}

}  // namespace byd
