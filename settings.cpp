#include "settings.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "common/text.h"
#include "config.h"

namespace byd {
namespace {

using nlohmann::json;

// A setting that is one member of Config, as it is.
#define BYD_MEMBER(expr) \
  [](const Config& c) -> json { return c.expr; }, [](Config& c, const json& v) { v.get_to(c.expr); }

constexpr double kMaxBytes = static_cast<double>(uint64_t{1} << 50);

std::vector<Setting> makeTable() {
  using T = SettingType;
  return {
      {"backend",
       "--backend",
       T::kChoice,
       "NAME",
       "the workspace: a directory on this machine (local), an in-memory tree (state), a "
       "container per session (docker), or another backyard-mcp's, reached over HTTP (remote: "
       "see --remote-url)",
       {"state", "local", "docker", "remote"},
       0,
       0,
       nullptr,
       BYD_MEMBER(backend)},
      {"root",
       "--root",
       T::kString,
       "DIR",
       "Local: the workspace root, which must exist (default: the current directory); Docker: "
       "the directory mounted at /workspace (default: a temporary one)",
       {},
       0,
       0,
       "see meaning",
       [](const Config& c) -> json { return c.root; },
       [](Config& c, const json& v) {
         v.get_to(c.root);
         c.root_given = true;
       },
       /*path=*/true},
      {"allow",
       "--allow",
       T::kList,
       "DIR",
       "Local: a further directory the file tools may read and write, by absolute path "
       "(repeatable)",
       {},
       0,
       0,
       nullptr,
       BYD_MEMBER(allow),
       /*path=*/true},
      {"state_file",
       "--state-file",
       T::kString,
       "FILE",
       "State: a JSON snapshot loaded at start if it exists and saved atomically at exit",
       {},
       0,
       0,
       nullptr,
       BYD_MEMBER(state_file),
       /*path=*/true},
      {"state_sync",
       "--state-sync",
       T::kBool,
       "",
       "State: also save the snapshot after every write, before the write is answered",
       {},
       0,
       0,
       nullptr,
       BYD_MEMBER(state_sync)},
      {"write_sync",
       "--write-sync",
       T::kBool,
       "",
       "Local and Docker: also fsync each written file before it takes the old one's place, "
       "and its directory after, so an answered write survives a power loss (every write is "
       "atomic without it: readers and crashes see the old file or the new one)",
       {},
       0,
       0,
       nullptr,
       BYD_MEMBER(write_sync)},
      {"structured_content",
       "--structured-content",
       T::kChoice,
       "on|off",
       "on: the file tools, execute and run_python declare an outputSchema and answer "
       "structuredContent beside their text (MCP 2025-06-18 and later); off: the text alone, "
       "for clients that give the model the text (an answer half the size: a large read "
       "is sent once, not twice)",
       {"on", "off"},
       0,
       0,
       nullptr,
       BYD_MEMBER(structured_content)},
      {"log_level",
       "--log-level",
       T::kChoice,
       "LEVEL",
       "how much goes to stderr (one line per request at info, bodies at debug)",
       {"trace", "debug", "info", "warn", "error", "off"},
       0,
       0,
       nullptr,
       BYD_MEMBER(log_level)},
      {"audit_log",
       "--audit-log",
       T::kString,
       "FILE",
       "append a JSON line for every tool call to FILE (made 0600): time, tenant, session, tool, "
       "its arguments with secrets redacted, the permission decision and its rule, duration, "
       "outcome; fsynced within a second, reopened on SIGHUP",
       {},
       0,
       0,
       nullptr,
       BYD_MEMBER(audit_log),
       /*path=*/true},
      {"max_message_bytes",
       "--max-message-bytes",
       T::kInt,
       "BYTES",
       "a JSON-RPC message larger than this is refused with an error and skipped",
       {},
       1024,
       1 << 30,
       "16 MiB",
       BYD_MEMBER(max_message_bytes)},
      {"max_text_bytes",
       "--max-text-bytes",
       T::kInt,
       "BYTES",
       "a tool's text result is cut here, with a note saying so",
       {},
       1024,
       1 << 30,
       "100 KiB",
       BYD_MEMBER(limits.max_text_bytes)},
      {"max_read_bytes",
       "--max-read-bytes",
       T::kInt,
       "BYTES",
       "the largest image read_file returns and the largest file edit_file loads",
       {},
       1024,
       static_cast<double>(uint64_t{1} << 32),
       "10 MiB",
       BYD_MEMBER(limits.max_read_bytes)},
      {"max_results",
       "--max-results",
       T::kInt,
       "N",
       "the most entries ls, glob and grep return, with a note when more exist",
       {},
       1,
       1000000,
       nullptr,
       BYD_MEMBER(limits.max_results)},
      {"workers",
       "--workers",
       T::kInt,
       "N",
       "most threads running one session's tool calls (one stays; more start while calls overlap)",
       {},
       1,
       256,
       nullptr,
       BYD_MEMBER(workers)},
      {"ruleset",
       "--ruleset",
       T::kRuleset,
       "NAME|FILE",
       "the permission ruleset: a preset (default, permissive, readonly, strict) or a JSON file; "
       "in the config file also the ruleset itself",
       {},
       0,
       0,
       nullptr,
       [](const Config& c) -> json {
         return c.ruleset_inline.is_null() ? json(c.ruleset) : c.ruleset_inline;
       },
       [](Config& c, const json& v) {
         if (v.is_object()) {
           c.ruleset_inline = v;
         } else {
           v.get_to(c.ruleset);
           c.ruleset_inline = nullptr;
         }
       },
       /*path=*/true},
      {"ask_fallback",
       "--ask-fallback",
       T::kChoice,
       "deny|allow",
       "what ask becomes when the client cannot ask the user (no elicitation, or no answer)",
       {"deny", "allow"},
       0,
       0,
       nullptr,
       BYD_MEMBER(ask_fallback)},
      {"ask_timeout_s",
       "--ask-timeout",
       T::kNumber,
       "SECONDS",
       "how long an ask waits for the user's answer",
       {},
       1,
       3600,
       nullptr,
       BYD_MEMBER(ask_timeout_s)},
      {"sandbox",
       "--sandbox",
       T::kChoice,
       "bwrap|container|none",
       "how execute and run_python isolate what they run: bwrap, a sandbox of their own; "
       "container, none nested, where the container or pod this server runs in is the "
       "boundary (refused outside one); none, plain processes with this server's rights "
       "(logged as a warning and said in instructions)",
       {"bwrap", "container", "none"},
       0,
       0,
       nullptr,
       BYD_MEMBER(sandbox)},
      {"sandbox_user",
       "--sandbox-user",
       T::kString,
       "USER",
       "who a root server's commands and Python kernels are on the host, and a container's "
       "user: a user name or uid, never root (default: the workspace's owner, or the dedicated "
       "uid 65533 when root owns it)",
       {},
       0,
       0,
       "see meaning",
       BYD_MEMBER(sandbox_user)},
      {"max_timeout_s",
       "--max-timeout",
       T::kInt,
       "SECONDS",
       "the longest timeout_s that execute and run_python accept: a longer one is refused with "
       "an error naming this limit, and a call without timeout_s gets its default cut to it",
       {},
       1,
       86400,
       nullptr,
       BYD_MEMBER(limits.max_timeout_s)},
      {"max_output_bytes",
       "--max-output-bytes",
       T::kInt,
       "BYTES",
       "execute keeps this much of stdout and of stderr: a stream up to it whole, a longer one "
       "as its first and last halves of it",
       {},
       1024,
       1 << 30,
       "100 KiB",
       BYD_MEMBER(limits.max_output_bytes)},
      {"memory_limit",
       "--memory-limit",
       T::kInt,
       "BYTES",
       "memory of the sandbox as a whole (a cgroup where possible) and of each process in it "
       "(RLIMIT_AS); 0: none",
       {},
       0,
       kMaxBytes,
       "1 GiB",
       BYD_MEMBER(sandbox_limits.memory_bytes)},
      {"process_limit",
       "--process-limit",
       T::kInt,
       "N",
       "processes of the sandbox, its commands and kernels together (cgroup pids; RLIMIT_NPROC "
       "where there is none); 0: none",
       {},
       0,
       1 << 22,
       nullptr,
       BYD_MEMBER(sandbox_limits.processes)},
      {"file_size_limit",
       "--file-size-limit",
       T::kInt,
       "BYTES",
       "the largest file a command may write (RLIMIT_FSIZE); 0: none",
       {},
       0,
       kMaxBytes,
       "1 GiB",
       BYD_MEMBER(sandbox_limits.file_size_bytes)},
      {"open_files_limit",
       "--open-files-limit",
       T::kInt,
       "N",
       "open files of a command (RLIMIT_NOFILE)",
       {},
       16,
       1 << 20,
       nullptr,
       BYD_MEMBER(sandbox_limits.open_files)},
      {"cpu_limit",
       "--cpu-limit",
       T::kInt,
       "SECONDS",
       "CPU time of a command (RLIMIT_CPU), besides the wall-clock timeout; 0: none",
       {},
       0,
       1 << 30,
       nullptr,
       BYD_MEMBER(sandbox_limits.cpu_seconds)},
      {"python",
       "--python",
       T::kString,
       "PATH",
       "the interpreter of run_python sessions",
       {},
       0,
       0,
       nullptr,
       BYD_MEMBER(python.python)},
      {"python_sessions",
       "--python-sessions",
       T::kInt,
       "N",
       "run_python sessions per connection",
       {},
       1,
       256,
       nullptr,
       BYD_MEMBER(python.max_sessions)},
      {"python_idle",
       "--python-idle",
       T::kInt,
       "MINUTES",
       "an unused run_python session is stopped after this long",
       {},
       1,
       10080,
       nullptr,
       [](const Config& c) -> json {
         return std::chrono::duration_cast<std::chrono::minutes>(c.python.idle).count();
       },
       [](Config& c, const json& v) { c.python.idle = std::chrono::minutes(v.get<int64_t>()); }},
      {"python_new_sessions",
       "--python-new-sessions",
       T::kChoice,
       "sandbox|fork",
       "how a new run_python session starts: sandbox (a kernel in namespaces, or a container, "
       "of its own, from a spare started ahead) or fork (a fork of one template kernel, a few "
       "ms, in a sandbox or container the connection's sessions share: they see each other's "
       "/tmp and processes)",
       {"sandbox", "fork"},
       0,
       0,
       nullptr,
       [](const Config& c) -> json { return c.python.fork_sessions ? "fork" : "sandbox"; },
       [](Config& c, const json& v) { c.python.fork_sessions = v.get<std::string>() == "fork"; }},
      {"python_preload",
       "--python-preload",
       T::kString,
       "MODULES",
       "modules (comma-separated) the template kernel of isolated runs imports before its "
       "first run, so a run that imports them costs nothing",
       {},
       0,
       0,
       nullptr,
       BYD_MEMBER(python.preload)},
      {"package_index",
       "--package-index",
       T::kString,
       "URL",
       "where run_python installs missing packages from: a PEP 503 simple index, the only host "
       "the installer may reach",
       {},
       0,
       0,
       nullptr,
       BYD_MEMBER(python.package_index)},
      {"python_packages",
       "--python-packages",
       T::kString,
       "DIR",
       "the directory of packages installed on demand, read-only to commands and kernels",
       {},
       0,
       0,
       "$XDG_CACHE_HOME/backyard-mcp/python-packages",
       BYD_MEMBER(python.packages_dir),
       /*path=*/true},
      {"transport",
       "--transport",
       T::kChoice,
       "stdio|http",
       "serve MCP over stdin/stdout, or over HTTP",
       {"stdio", "http"},
       0,
       0,
       nullptr,
       BYD_MEMBER(transport)},
      {"listen",
       "--listen",
       T::kString,
       "HOST:PORT",
       "HTTP: where to listen; port 0 picks a free one (the address is printed on stderr)",
       {},
       0,
       0,
       nullptr,
       BYD_MEMBER(listen)},
      {"remote_url",
       "--remote-url",
       T::kString,
       "URL",
       "--backend remote: the MCP endpoint (http://HOST:PORT/mcp) of the backyard-mcp service "
       "whose workspace, commands and rules this server's tools use; --token-file holds the "
       "token it is sent",
       {},
       0,
       0,
       nullptr,
       BYD_MEMBER(remote_url)},
      {"placement",
       "--placement",
       T::kChoice,
       "ENGINE",
       "HTTP with --backend remote: each session gets an agent of its own in a sandbox the "
       "engine makes for it and removes when the session ends (kubernetes: a SandboxClaim of "
       "agent-sandbox from --kubernetes-warm-pool; docker-swarm: a service of --agent-image on "
       "--swarm-network, through the Swarm manager at --docker-host), not the one service at "
       "--remote-url (none)",
       {"none", "kubernetes", "docker-swarm"},
       0,
       0,
       nullptr,
       BYD_MEMBER(placement)},
      {"kubernetes_api",
       "--kubernetes-api",
       T::kString,
       "URL",
       "--placement kubernetes: the API server (https://HOST:PORT), reached with "
       "--kubernetes-token-file and --kubernetes-ca-file (default: the pod's own, with its "
       "service account's token and CA)",
       {},
       0,
       0,
       "the pod's",
       BYD_MEMBER(kubernetes_api)},
      {"kubernetes_token_file",
       "--kubernetes-token-file",
       T::kString,
       "FILE",
       "--placement kubernetes with --kubernetes-api: a file holding the bearer token sent to "
       "the API server, read again for each request",
       {},
       0,
       0,
       nullptr,
       BYD_MEMBER(kubernetes_token_file),
       /*path=*/true},
      {"kubernetes_ca_file",
       "--kubernetes-ca-file",
       T::kString,
       "FILE",
       "--placement kubernetes with --kubernetes-api: the CA the API server's certificate is "
       "checked against (default: the system's)",
       {},
       0,
       0,
       nullptr,
       BYD_MEMBER(kubernetes_ca_file),
       /*path=*/true},
      {"kubernetes_namespace",
       "--kubernetes-namespace",
       T::kString,
       "NAME",
       "--placement kubernetes: the namespace of the sessions' SandboxClaims (default: the "
       "pod's own)",
       {},
       0,
       0,
       "the pod's",
       BYD_MEMBER(kubernetes_namespace)},
      {"kubernetes_warm_pool",
       "--kubernetes-warm-pool",
       T::kString,
       "NAME",
       "--placement kubernetes: the SandboxWarmPool each session's SandboxClaim is checked "
       "out of (deploy/kubernetes/warm-pool.yaml)",
       {},
       0,
       0,
       nullptr,
       BYD_MEMBER(kubernetes_warm_pool)},
      {"kubernetes_workspace_size",
       "--kubernetes-workspace-size",
       T::kString,
       "QUANTITY",
       "--placement kubernetes: the size of the PVC a named session's claim asks for, its "
       "workspace kept between its sessions (a Kubernetes quantity: 1Gi, 500Mi)",
       {},
       0,
       0,
       nullptr,
       BYD_MEMBER(kubernetes_workspace_size)},
      {"swarm_network",
       "--swarm-network",
       T::kString,
       "NAME",
       "--placement docker-swarm: the overlay network the agents' services join, made internal "
       "(no route out) and attachable when missing; the front must be attached to it (its "
       "container on that network) to reach them by name",
       {},
       0,
       0,
       nullptr,
       BYD_MEMBER(swarm_network)},
      {"agent_image",
       "--agent-image",
       T::kString,
       "IMAGE",
       "--placement docker-swarm: the agent's image (deploy/agent/Dockerfile), which every node "
       "must have or pull; its limits are --container-memory, --cpus and --pids",
       {},
       0,
       0,
       nullptr,
       BYD_MEMBER(agent_image)},
      {"agent_port",
       "--agent-port",
       T::kInt,
       "PORT",
       "--placement: the port a placed agent listens on in its sandbox (its MCP endpoint is "
       "/mcp there)",
       {},
       1,
       65535,
       nullptr,
       BYD_MEMBER(agent_port)},
      {"agent_token_file",
       "--agent-token-file",
       T::kString,
       "FILE",
       "--placement: a file holding the token every placed agent takes (the Secret its "
       "sandboxes mount), sent to each",
       {},
       0,
       0,
       nullptr,
       BYD_MEMBER(agent_token_file),
       /*path=*/true},
      {"token_file",
       "--token-file",
       T::kString,
       "FILE",
       "HTTP: a file holding the bearer token every /mcp request must carry (else the variable "
       "BACKYARD_TOKEN); required when listening beyond loopback. With --backend remote over "
       "stdio: the token sent to the remote service",
       {},
       0,
       0,
       nullptr,
       BYD_MEMBER(token_file),
       /*path=*/true},
      {"admin_token_file",
       "--admin-token-file",
       T::kString,
       "FILE",
       "HTTP: a file holding the operator's token, never a tenant's: it reads /metrics from "
       "anywhere (without it, /metrics answers loopback clients alone)",
       {},
       0,
       0,
       nullptr,
       BYD_MEMBER(admin_token_file),
       /*path=*/true},
      {"ui",
       "--ui",
       T::kBool,
       "",
       "HTTP: serve the operator's page at /ui (sessions, a terminal, a notebook and files in "
       "each, runtimes and policy), for the --admin-token-file token",
       {},
       0,
       0,
       nullptr,
       BYD_MEMBER(ui)},
      {"tokens_file",
       "--tokens-file",
       T::kString,
       "FILE",
       "HTTP: the tenants, a JSON file mapping each bearer token (or \"sha256:\" and its "
       "SHA-256) to a tenant: its name, session cap, ruleset, workspace root and limits; each "
       "tenant sees only its own sessions. Refused when users other than its owner may read it",
       {},
       0,
       0,
       nullptr,
       BYD_MEMBER(tokens_file),
       /*path=*/true},
      {"allow_host",
       "--allow-host",
       T::kList,
       "NAME",
       "HTTP: a further host name accepted in Host and Origin beside the loopback ones "
       "(repeatable); one that begins with a dot (.svc.cluster.local) accepts every name "
       "beneath it",
       {},
       0,
       0,
       nullptr,
       BYD_MEMBER(allowed_hosts)},
      {"max_sessions",
       "--max-sessions",
       T::kInt,
       "N",
       "HTTP: sessions at once; beyond, initialize gets 429 with Retry-After",
       {},
       1,
       100000,
       nullptr,
       BYD_MEMBER(max_sessions)},
      {"session_idle_s",
       "--session-idle",
       T::kNumber,
       "SECONDS",
       "HTTP: an unused session is ended (with its sandbox and kernels) after this long",
       {},
       1,
       604800,
       nullptr,
       BYD_MEMBER(session_idle_s)},
      {"shutdown_grace_s",
       "--shutdown-grace",
       T::kNumber,
       "SECONDS",
       "HTTP: how long calls in flight may run on after SIGTERM",
       {},
       0,
       3600,
       nullptr,
       BYD_MEMBER(shutdown_grace_s)},
      {"read_timeout_s",
       "--read-timeout",
       T::kNumber,
       "SECONDS",
       "HTTP: how long a client may take to send each whole request (headers and body), from "
       "its first byte",
       {},
       1,
       3600,
       nullptr,
       BYD_MEMBER(read_timeout_s)},
      {"max_connections",
       "--max-connections",
       T::kInt,
       "N",
       "HTTP: connections open at once; beyond, a new one is answered 503 at once",
       {},
       1,
       100000,
       nullptr,
       BYD_MEMBER(max_connections)},
      {"max_connections_per_address",
       "--max-connections-per-address",
       T::kInt,
       "N",
       "HTTP: connections open at once from one client address; beyond, 503 at once",
       {},
       1,
       100000,
       nullptr,
       BYD_MEMBER(max_connections_per_address)},
      {"workspace_root",
       "--workspace-root",
       T::kString,
       "DIR",
       "HTTP, Local or Docker: each session works in a fresh directory DIR/session-XXXXXX (kept "
       "after the session) instead of sharing the root",
       {},
       0,
       0,
       nullptr,
       BYD_MEMBER(workspace_root),
       /*path=*/true},
      {"workspace_ttl_s",
       "--workspace-ttl",
       T::kNumber,
       "SECONDS",
       "HTTP, with workspace roots: a session's directory (and its kept container) unopened for "
       "this long is deleted for good (--placement: a named session's volume or claim); 0 "
       "keeps them",
       {},
       0,
       315360000,
       nullptr,
       BYD_MEMBER(workspace_ttl_s)},
      {"persist_containers",
       "--persist-containers",
       T::kBool,
       "",
       "HTTP, Docker: a named session's container is stopped when the session is reaped, not "
       "removed, and started again when the session comes back: what was installed survives",
       {},
       0,
       0,
       nullptr,
       BYD_MEMBER(persist_containers)},
      {"session_pool",
       "--session-pool",
       T::kInt,
       "N",
       "HTTP, Local or Docker: N sessions kept ready for each tenant, their sandbox (or "
       "container) and Python kernel started ahead, made from start and again as each is "
       "taken, so that a new session's first call waits for nothing; 0 starts nothing before a "
       "session uses it",
       {},
       0,
       256,
       nullptr,
       BYD_MEMBER(session_pool)},
      {"docker_host",
       "--docker-host",
       T::kString,
       "ADDRESS",
       "Docker: the engine's address, unix:///PATH or tcp://HOST:PORT (else DOCKER_HOST, else "
       "unix:///var/run/docker.sock)",
       {},
       0,
       0,
       nullptr,
       BYD_MEMBER(docker.host)},
      {"image",
       "--image",
       T::kString,
       "IMAGE",
       "Docker: the image of the containers",
       {},
       0,
       0,
       nullptr,
       BYD_MEMBER(docker.image)},
      {"runtimes",
       "--runtimes",
       T::kString,
       "FILE",
       "Docker: the runtimes a session may ask for by name, a JSON file: each an image, or a "
       "base image and Debian, pip and npm packages built on first use, with its own limits "
       "and network rules (--placement docker-swarm: an agent image every node has, and "
       "limits, its sessions on the nodes labelled io.backyard-mcp.runtime.NAME=true)",
       {},
       0,
       0,
       nullptr,
       BYD_MEMBER(runtimes_file),
       /*path=*/true},
      {"runtime",
       "--runtime",
       T::kChoice,
       "NAME",
       "Docker: auto (gVisor when the engine has runsc), runc or runsc",
       {"auto", "runc", "runsc"},
       0,
       0,
       nullptr,
       BYD_MEMBER(docker.runtime)},
      {"container_name",
       "--container-name",
       T::kString,
       "NAME",
       "Docker, stdio: reattach this container (start it if stopped) and keep it at exit",
       {},
       0,
       0,
       nullptr,
       BYD_MEMBER(docker.container_name)},
      {"network",
       "--network",
       T::kString,
       "NAME",
       "Docker: the containers' network",
       {},
       0,
       0,
       nullptr,
       BYD_MEMBER(docker.network)},
      {"container_memory",
       "--container-memory",
       T::kInt,
       "BYTES",
       "Docker: memory of each container, swap included",
       {},
       static_cast<double>(int64_t{64} << 20),
       static_cast<double>(int64_t{1} << 40),
       "1 GiB",
       BYD_MEMBER(docker.memory_bytes)},
      {"cpus",
       "--cpus",
       T::kNumber,
       "N",
       "Docker: CPUs of each container",
       {},
       0.01,
       1024,
       nullptr,
       BYD_MEMBER(docker.cpus)},
      {"pids",
       "--pids",
       T::kInt,
       "N",
       "Docker: processes of each container",
       {},
       8,
       1 << 22,
       nullptr,
       BYD_MEMBER(docker.pids)},
  };
}

#undef BYD_MEMBER

std::string typeWord(SettingType t) {
  switch (t) {
    case SettingType::kInt:
      return "an integer";
    case SettingType::kNumber:
      return "a number";
    case SettingType::kBool:
      return "true or false";
    case SettingType::kList:
      return "an array of strings";
    case SettingType::kRuleset:
      return "a string or a ruleset object";
    default:
      return "a string";
  }
}

std::string numberText(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
  return json(v).dump();
}

Status checkRange(const Setting& s, double v, const std::string& source) {
  if (v < s.min || v > s.max) {
    return invalidArgument(source + ": out of range (" + numberText(s.min) + " to " +
                           numberText(s.max) + ")");
  }
  return okStatus();
}

Status checkChoice(const Setting& s, const std::string& v, const std::string& source) {
  if (s.type != SettingType::kChoice) return okStatus();
  std::string all;
  for (const char* c : s.choices) {
    if (v == c) return okStatus();
    all += (all.empty() ? "" : ", ") + std::string(c);
  }
  return invalidArgument(source + ": not one of " + all);
}

enum class Shown { kHelp, kMarkdown };

// A setting's default as --help (plain; nothing for lists and flags) or the README's table
// (code spans, "none", "on"/"off") shows it.
std::string shownDefault(const Setting& s, Shown style) {
  static const Config defaults;
  if (s.shown_default != nullptr) return s.shown_default;
  const json d = s.get(defaults);
  const bool md = style == Shown::kMarkdown;
  if (d.is_string()) {
    const std::string& text = d.get_ref<const std::string&>();
    return !md ? text : text.empty() ? "none" : "`" + text + "`";
  }
  if (d.is_boolean()) return !md ? "" : d.get<bool>() ? "on" : "off";
  if (d.is_array()) return !md ? "" : d.empty() ? "none" : "`" + d.dump() + "`";
  if (!md && d.is_number_float() && d.get<double>() == static_cast<double>(d.get<int64_t>())) {
    return std::to_string(d.get<int64_t>());
  }
  return d.dump();
}

std::string escapePipes(std::string text) {
  for (size_t at = 0; (at = text.find('|', at)) != std::string::npos; at += 2) {
    text.replace(at, 1, "\\|");
  }
  return text;
}

}  // namespace

std::string Setting::envName() const {
  std::string out = "BACKYARD_";
  for (const char* p = key; *p != '\0'; ++p) {
    out += static_cast<char>(std::toupper(static_cast<unsigned char>(*p)));
  }
  return out;
}

const std::vector<Setting>& settingsTable() {
  static const std::vector<Setting> table = makeTable();
  return table;
}

Result<json> parseSettingText(const Setting& s, const std::string& text,
                              const std::string& source) {
  switch (s.type) {
    case SettingType::kInt: {
      int64_t v = 0;
      const char* end = text.data() + text.size();
      auto [ptr, ec] = std::from_chars(text.data(), end, v);
      if (text.empty() || ec != std::errc() || ptr != end) {
        return invalidArgument(source + ": not an integer");
      }
      BYD_RETURN_IF_ERROR(checkRange(s, static_cast<double>(v), source));
      return json(v);
    }
    case SettingType::kNumber: {
      char* end = nullptr;
      errno = 0;
      const double v = text.empty() ? 0 : strtod(text.c_str(), &end);
      if (text.empty() || errno != 0 || end != text.c_str() + text.size() || !std::isfinite(v)) {
        return invalidArgument(source + ": not a number");
      }
      BYD_RETURN_IF_ERROR(checkRange(s, v, source));
      return json(v);
    }
    case SettingType::kBool:
      if (text == "true" || text == "1" || text == "yes") return json(true);
      if (text == "false" || text == "0" || text == "no") return json(false);
      return invalidArgument(source + ": not true or false");
    case SettingType::kList: {
      json list = json::array();
      for (const std::string& part : splitList(text, ',')) list.push_back(part);
      return list;
    }
    default:
      BYD_RETURN_IF_ERROR(checkChoice(s, text, source));
      return json(text);
  }
}

Status checkSettingJson(const Setting& s, const json& v, const std::string& source) {
  bool ok = false;
  switch (s.type) {
    case SettingType::kInt:
      ok = v.is_number_integer();
      break;
    case SettingType::kNumber:
      ok = v.is_number();
      break;
    case SettingType::kBool:
      ok = v.is_boolean();
      break;
    case SettingType::kList:
      ok = v.is_array() &&
           std::all_of(v.begin(), v.end(), [](const json& e) { return e.is_string(); });
      break;
    case SettingType::kRuleset:
      ok = v.is_string() || v.is_object();
      break;
    default:
      ok = v.is_string();
  }
  if (!ok) return invalidArgument(source + ": not " + typeWord(s.type));
  if (s.type == SettingType::kInt || s.type == SettingType::kNumber) {
    return checkRange(s, v.get<double>(), source);
  }
  if (s.type == SettingType::kChoice) return checkChoice(s, v.get<std::string>(), source);
  return okStatus();
}

json configSchema() {
  json properties = json::object();
  const Config defaults;
  for (const Setting& s : settingsTable()) {
    json p = {{"description",
               std::string(s.help) + (s.path ? "; a relative path is relative to this file" : "")}};
    switch (s.type) {
      case SettingType::kInt:
        p["type"] = "integer";
        break;
      case SettingType::kNumber:
        p["type"] = "number";
        break;
      case SettingType::kBool:
        p["type"] = "boolean";
        break;
      case SettingType::kList:
        p["type"] = "array";
        p["items"] = {{"type", "string"}};
        break;
      case SettingType::kRuleset:
        p["type"] = json::array({"string", "object"});
        break;
      default:
        p["type"] = "string";
    }
    if (s.type == SettingType::kChoice) p["enum"] = s.choices;
    if (s.type == SettingType::kInt || s.type == SettingType::kNumber) {
      p["minimum"] = s.type == SettingType::kInt ? json(static_cast<int64_t>(s.min)) : json(s.min);
      p["maximum"] = s.type == SettingType::kInt ? json(static_cast<int64_t>(s.max)) : json(s.max);
    }
    p["default"] = s.get(defaults);
    properties[s.key] = p;
  }
  for (const char* key : kConfigFileAnnotations) {
    properties[key] = {{"type", "string"},
                       {"description", "for people and editors; the server ignores it"}};
  }
  return {{"$schema", "https://json-schema.org/draft/2020-12/schema"},
          {"title", "backyard-mcp configuration"},
          {"description",
           "The server's settings, as a --config file holds them: the same settings as the "
           "flags and the BACKYARD_* environment variables (generated from the settings table). "
           "A relative path in it is relative to the directory that holds the file."},
          {"type", "object"},
          {"additionalProperties", false},
          {"properties", properties}};
}

std::string settingsMarkdown() {
  std::string out = "| flag | config key, environment | default | meaning |\n|---|---|---|---|\n";
  for (const Setting& s : settingsTable()) {
    std::string flag = std::string("`") + s.flag;
    if (s.type != SettingType::kBool) flag += std::string(" ") + s.value_name;
    flag += "`";
    if (s.type == SettingType::kList) flag += " (repeatable)";
    out += "| " + escapePipes(flag) + " | `" + s.key + "`, `" + s.envName() + "` | " +
           shownDefault(s, Shown::kMarkdown) + " | " + escapePipes(s.help) + " |\n";
  }
  return out;
}

std::string flagHelp(const Setting& s) {
  const std::string shown = shownDefault(s, Shown::kHelp);
  std::string help = s.help;
  if (!help.empty()) help[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(help[0])));
  // A help text that says its default itself is not told it again.
  if (!shown.empty() && help.find("(default") == std::string::npos) {
    help += " (default " + shown + ")";
  }
  return help + " [" + s.envName() + "]";
}

json describeSettings(const Config& config, const SettingOrigins& origins) {
  json out = json::object();
  for (const Setting& s : settingsTable()) {
    auto it = origins.find(s.key);
    out[s.key] = {{"value", s.get(config)},
                  {"from", it == origins.end() ? std::string("default") : it->second}};
  }
  return out;
}

}  // namespace byd
