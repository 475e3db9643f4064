#pragma once
// Where a session's stack is made, from the settings: its backend (State; Local with its sandbox
// and Python kernels; Docker), the directory it works in, and what a client is told about it
// (the description, the tools offered, the instructions) and the options of its dispatcher.
// stdio makes one stack; HTTP makes the first at start (which checks the configuration and
// serves the first session), then one for each further session and one for the stateless
// requests, through next().

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "backends/backend.h"
#include "backends/state/state_backend.h"
#include "common/metrics.h"
#include "config.h"
#include "mcp/http_server.h"
#include "mcp/server.h"
#include "permissions/guard.h"
#include "placement/placement.h"

namespace byd {

// A workspace directory made for one backend, removed with it.
struct TempDir {
  std::string path;
  ~TempDir();
};

struct SessionStack {
  std::shared_ptr<TempDir> temp_dir;  // first: outlives the backend that works in it
  std::unique_ptr<Backend> backend;
  StateBackend* state = nullptr;  // set when the backend is State
  std::string description;
  std::string sandbox_note;  // said in instructions when commands run unsandboxed
  std::string tools;         // the tools offered, as tools/list lists them
  std::string instructions;  // for initialize
  // Its runtime (--runtimes) and what that changes for its sessions: rules with its network
  // section (null: its tenant's) and its ceiling of a call's timeout.
  std::string runtime;
  const permissions::Guard* guard = nullptr;
  std::optional<int64_t> max_timeout_s;
  // --placement: the session's sandbox, given back when the stack ends (after `remote`, which
  // ends its session on the agent first).
  std::shared_ptr<void> sandbox;
  // --backend remote: where its tools run (the backend is then a stand-in that holds no files).
  std::shared_ptr<mcp::RemoteClient> remote;
  // The tasks of every session on it (a named session's connections share them).
  std::shared_ptr<mcp::TaskStore> tasks = std::make_shared<mcp::TaskStore>();
  // Starts a thread that checks the sandbox, then starts its helper and a spare Python kernel.
  // Set on the stack start() makes; whoever serves it runs it once through warmUp(), when the
  // work no longer competes with the first answer (stdio: right after it; HTTP: once listening).
  // Thread-safe; only the first call does anything.
  std::function<std::jthread()> warm_up;
  void warmUp() {
    std::call_once(*warmed_, [this] {
      if (warm_up) verifier = std::exchange(warm_up, nullptr)();
    });
  }
  std::unique_ptr<std::once_flag> warmed_ = std::make_unique<std::once_flag>();  // movable
  std::jthread verifier;  // last: joined before the backend it checks is destroyed
};

class SessionFactory {
 public:
  // Both must outlive the factory.
  SessionFactory(const Config& config, const permissions::Guard& guard);

  // The first stack, warm (the sandbox checked, its helper and a spare Python kernel started
  // in the background); an error is a configuration mistake. HTTP keeps it for the first
  // session, unless each session gets a directory of its own.
  Result<std::shared_ptr<SessionStack>> start();
  // What a new HTTP session asks for.
  struct Request {
    std::string tenant = "default";
    std::string name;  // the client's name for it: "" for none
    // Its tenant's directory for sessions ("": --workspace-root) and rules (null: the
    // server's; they decide the tools offered and what the instructions say).
    std::string workspace_root;
    const permissions::Guard* guard = nullptr;
    size_t max_named = 64;  // named sessions the tenant may hold, connected or not
    // The runtime asked for ("": the tenant's first, else the server's image), and those the
    // tenant may use (null: every one).
    std::string runtime;
    const std::vector<std::string>* runtimes = nullptr;
  };
  // HTTP: the stack kept from start() once, then a new one each time (cold: a sandbox and
  // kernels when first needed), in a fresh directory session-XXXXXX under the workspace root
  // when there is one. A named session's stack is found again by a later session of the same
  // tenant and name, and shared by all connected under it; it outlives the last of them by
  // --session-idle (its kernels live on), and its directory, named-NAME, for good.
  Result<mcp::SessionBackend> next(const Request& request);

  // The stored workspaces of a tenant's named sessions (`request.name` names one), read
  // without starting anything: through a backend on the directory alone, under the tenant's
  // read rules, with paths resolved by the kernel as the file tools resolve them.
  // The named sessions: [{name, connected, modified}].
  Result<nlohmann::json> storedSessions(const Request& request) const;
  // A directory's entries, as ls answers them: {path, entries: [{name, type, size, mtime}]}.
  Result<nlohmann::json> storedList(const Request& request, const std::string& path,
                                    size_t max_entries) const;
  // A file's bytes, at most `max_bytes` of them (else an error saying how large it is).
  Result<std::string> storedRead(const Request& request, const std::string& path,
                                 uint64_t max_bytes) const;
  // Removes a named session for good: its backend (once its connections, which the caller
  // ends, let go), its directory and its kept container.
  Status purge(const Request& request);
  // With --workspace-ttl: the directory under which `tenant` keeps its sessions, whose
  // directories (and kept containers) unopened for that long are deleted. Before serving.
  void keepStore(const std::string& tenant, const std::string& root);
  // The name a named session's kept container has (--persist-containers), whose directory
  // lies in `root`.
  static std::string keptContainerName(const std::string& tenant, const std::string& name,
                                       const std::string& root);
  // The options of a dispatcher on `stack`.
  mcp::ServerOptions serverOptions(const SessionStack& stack) const;
  // --session-pool N: keeps N unnamed sessions ready for each of `kinds` (a tenant's sessions
  // with its default runtime), each with its directory, sandbox or container and spare Python
  // kernel started ahead, made one at a time in the background, from now on and again as
  // each is taken. What `kinds` point to must outlive the factory. Once, before serving.
  void startPools(std::vector<Request> kinds);

 private:
  Result<SessionStack> open(const Config& config, bool warm, const permissions::Guard& guard) const;

  // The directory under which `request`'s tenant keeps its sessions, or an error when there is
  // none (no workspace root: nothing is stored).
  Result<std::string> storeOf(const Request& request) const;
  // A backend on the named session's stored directory, under the tenant's rules for `op`.
  struct Stored;
  Result<std::unique_ptr<Stored>> openStored(const Request& request,
                                             permissions::Operation op) const;
  // The runtime `request` gets: null for the server's image; an error naming those it may use
  // when it asks for one it may not.
  Result<const RuntimeSpec*> runtimeOf(const Request& request) const;
  // The rules of `runtime`'s sessions where `base` holds: `base` with the runtime's network
  // section, made once and kept.
  Result<const permissions::Guard*> guardFor(const permissions::Guard& base,
                                             const RuntimeSpec& runtime);
  // An unnamed session's stack, in a fresh directory under `under` ("": in the root), and
  // that directory.
  Result<std::pair<std::shared_ptr<SessionStack>, std::string>> unnamed(const Request& request,
                                                                        const std::string& under,
                                                                        const RuntimeSpec* runtime);
  // A stack made ahead for `request`'s tenant, and its directory; none when its pool is empty
  // (or it asks for a runtime by name).
  std::optional<std::pair<std::shared_ptr<SessionStack>, std::string>> takeReady(
      const Request& request);
  // The pools' filler thread: the pool shortest of --session-pool first.
  void fillPools(std::stop_token stop);
  // --placement: a stack whose tools run on an agent placed for it, in a sandbox of its own
  // (`runtime`'s, when not null).
  Result<std::shared_ptr<SessionStack>> placed(const Request& request, const RuntimeSpec* runtime);
  // A new stack for `request` in `dir` ("": the root) with `runtime` (null: the server's
  // image); a named session's keeps its container with --persist-containers.
  Result<std::shared_ptr<SessionStack>> fresh(const Request& request, const std::string& dir,
                                              const RuntimeSpec* runtime);
  // What a session is given of `stack`, held by `owner`.
  static mcp::SessionBackend given(const std::shared_ptr<SessionStack>& stack,
                                   std::shared_ptr<void> owner, std::string instructions);
  // Deletes the stored sessions unopened for --workspace-ttl (the reaper thread, unlocked).
  void expireStored();
  // The same for the workspaces the placement keeps.
  void expirePlaced();
  void startReaper();  // under mu_
  // The named session's stack, found or made, leased to one more session.
  Result<mcp::SessionBackend> attach(const Request& request, const std::string& under,
                                     const RuntimeSpec* runtime);
  // Drops the named stacks no session has used for --session-idle (the reaper thread).
  void reapNamed(std::stop_token stop);

  struct Named {
    std::shared_ptr<SessionStack> stack;
    size_t attached = 0;
    std::chrono::steady_clock::time_point detached_at;
    std::string dir;  // its directory ("" when it works in the root)
  };

  const Config& config_;
  const permissions::Guard& guard_;
  // --placement: made by start(); shared with the sandboxes it placed, which may outlive the
  // factory in a session that is still ending.
  std::shared_ptr<placement::Placement> placement_;
  mutable std::mutex mu_;
  std::shared_ptr<SessionStack> spare_;
  std::map<std::pair<std::string, std::string>, Named> named_;  // by tenant and name
  std::set<std::string> open_dirs_;  // the directories of unnamed sessions still open
  // Named sessions being made, purged or expired: nothing else touches them meanwhile.
  std::set<std::pair<std::string, std::string>> busy_;
  std::set<std::string> failed_expiry_;  // directories --workspace-ttl could not delete
  std::vector<std::pair<std::string, std::string>> stores_;  // tenant, root (keepStore)
  // guardFor's: by the rules they extend and the runtime.
  std::map<std::pair<const permissions::Guard*, std::string>, std::unique_ptr<permissions::Guard>>
      runtime_guards_;
  std::condition_variable_any reaper_cv_;
  // --session-pool: by tenant, what its sessions are asked as and the stacks made for them,
  // each prepared and holding its directory (removed with it unless a session takes it).
  struct Pool {
    Request kind;
    std::deque<std::pair<std::shared_ptr<SessionStack>, std::string>> ready;
  };
  std::map<std::string, Pool> pools_;
  std::condition_variable_any pool_cv_;
  std::unique_ptr<metrics::Gauge> pool_gauge_;  // ends before the pools it reads
  std::jthread reaper_;                         // stopped before what it reaps goes
  // Last: stopped first. The ready stacks end with pools_, and with them their directories,
  // which no session has used.
  std::jthread filler_;
};

}  // namespace byd
