#pragma once
// The MCP dispatcher for one session: lifecycle and version negotiation, the method table,
// tools/list and tools/call, logging and cancellation, and whatever the Catalog adds: its own
// tools, resources (list, read, templates, subscriptions), prompts and completion. Frames arrive
// from one transport thread; tools/call runs on a worker pool so a slow call never delays ping or
// another call. Every request is answered exactly once, except one the client cancelled, which gets
// no answer.

#include <atomic>
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

#include "backends/backend.h"
#include "common/worker_pool.h"
#include "mcp/catalog.h"
#include "mcp/client_requests.h"
#include "mcp/json_rpc.h"
#include "mcp/protocol.h"
#include "mcp/remote_client.h"
#include "mcp/stateless.h"
#include "mcp/tasks.h"
#include "mcp/transport.h"
#include "permissions/denied_files.h"
#include "permissions/guard.h"
#include "tools/registry.h"
#include "tools/tool.h"

namespace byd::mcp {

struct ServerOptions {
  std::string name = "backyard-mcp";
  std::string title = "backyard-mcp";
  std::string version = "0.0.0";
  std::string instructions;
  size_t page_size = 50;  // tools per tools/list page
  size_t workers = 4;     // threads running tools/call
  // How long an "ask" waits for the user's answer through elicitation.
  std::chrono::milliseconds ask_timeout = std::chrono::seconds(120);
  // Tools, resources and prompts beyond the console tools; null: the console tools alone.
  std::shared_ptr<const Catalog> catalog;
  // Every request is served as a stateless one (2026-07-28), even without _meta (the HTTP
  // transport's dispatcher for requests outside sessions). Otherwise requests with
  // io.modelcontextprotocol/ keys in _meta, and server/discover, are.
  bool stateless_only = false;
  size_t max_listeners = 16;  // open subscriptions/listen streams (each holds a connection)
  // The console tools declare outputSchema and answer structuredContent (2025-06-18 and
  // later); false: their text alone.
  bool structured_content = true;
  // Where its tasks (the tasks extension) are kept: shared by the dispatchers of one named
  // session, so a client that comes back to it finds the tasks it started. Null: its own.
  std::shared_ptr<TaskStore> tasks;
  // Who its calls are audited and counted as (--audit-log, /metrics): "stdio" or "http", the
  // tenant ("" over stdio) and the session's name ("" for none).
  std::string transport_name = "stdio";
  std::string tenant;
  std::string session_name;
  // Keeps its last calls' audit lines for recentCalls() (the operator's page).
  bool keep_activity = false;
  // --backend remote: the console tools are the remote's, listed and called there (its rules
  // judge them); the front relays progress, log messages, questions and cancellation.
  std::shared_ptr<RemoteClient> remote;
};

// Who asks, for one request: the revision and client capabilities that apply, from the
// session (initialize) or from the request's own _meta (2026-07-28).
struct Caller {
  std::string version;
  json capabilities = json::object();
  std::optional<int> log_level;  // stateless: from _meta (none: no log messages)
  bool stateless = false;
  CancelToken cancel;  // requests run on the worker pool: cancelled by the client or at shutdown
  bool has(std::string_view capability) const {
    return capabilities.is_object() && capabilities.contains(capability);
  }
};

// Whether `tool` is offered: the backend can run it and the rules do not always deny it. The one
// place this is decided; tools/list, tools/call and the instructions all ask here.
bool toolOffered(const Tool& tool, Backend& backend, const permissions::Guard* guard);

class Server : public MessageHandler {
 public:
  // `guard` may be null: then every call reaches the backend unchecked (tests of the layers
  // below). Otherwise every tool call passes it.
  Server(Transport& transport, Backend& backend, Limits limits, ServerOptions options,
         const permissions::Guard* guard = nullptr);
  ~Server() override;

  void onFrame(std::string_view frame) override;
  // A message (or a batch) already parsed, as the HTTP transport has it.
  void onMessage(json message);
  // Cancels the request with this id that is in flight, or ends that listen stream, as
  // notifications/cancelled would.
  void cancelRequest(const json& request_id);
  void onOversizedFrame(size_t bytes) override;
  // The session's id, for its audit lines (HTTP: set once, before its first message).
  void setSessionId(std::string id) { session_id_ = std::move(id); }
  // Its last calls' audit lines, oldest first (with keep_activity), numbered by `seq`.
  json recentCalls() const;
  // The lines numbered after `seq`, waiting up to `wait` for one when there are none yet
  // (an empty array then).
  json callsAfter(uint64_t seq, std::chrono::milliseconds wait) const;
  // The request with this id comes from the operator's page: its audit line says so.
  void markOperatorRequest(const json& id);

  // Cancels everything in flight (their answers are dropped).
  void cancelAll();
  // The client has gone (stdin closed): questions to it fail at once instead of waiting.
  void clientClosed() { client_requests_.close(); }
  // Tool calls started and not yet answered or dropped.
  size_t activeCalls() const {
    std::lock_guard lock(mu_);
    return active_;
  }
  // Tasks it started that have not ended (a session running one is not idle).
  size_t runningTasks() const { return tasks_->running(this); }
  // Blocks until every request received so far has been answered or dropped. When `give_up`
  // (checked every 100 ms) turns true, what is still running is cancelled.
  void drain(const std::function<bool()>& give_up = nullptr);
  // notifications/resources/updated for `uri`, to a session that subscribed to it and to the
  // stateless listeners (subscriptions/listen) that asked for it.
  void resourceUpdated(const std::string& uri);
  // notifications/<list>/list_changed ("tools", "prompts", "resources") to a session and to
  // the listeners that asked for it.
  void listChanged(std::string_view list);
  // The definition of a tool of the catalog (for the HTTP transport's Mcp-Param-* check), or
  // null.
  const json* catalogToolDefinition(std::string_view name) const;

 private:
  struct Batch;
  class CallPeer;
  class TaskPeer;
  struct Listener;
  // Where one message's answer goes: straight to the transport, or into a batch.
  using Sink = std::shared_ptr<Batch>;
  using Handler = std::function<Result<json>(const json& params, const Caller& caller)>;
  struct Method {
    Handler handler;
    bool before_init = false;  // served before initialize (session era)
    bool stateless = false;    // served to stateless requests (2026-07-28)
    bool pooled = false;       // runs on the worker pool, cancellable (tools/call, prompts/get)
  };

  void bindMethods();
  template <typename P>
  void bind(std::string name, Result<P> (*parse)(const json&),
            Result<json> (Server::*fn)(const P&, const Caller&), bool before_init, bool stateless,
            bool pooled = false);

  void handleFrame(std::string_view frame);
  void handleValue(json& value);
  // Takes the params out of `value` (a request or notification); a response is left whole.
  void dispatch(json& value, const Sink& sink);
  void handleRequest(Message m, const Sink& sink);
  void handleStateless(Message m, const Sink& sink);
  void handleNotification(const Message& m);
  // Answers a request from the method table, at once or (pooled methods) from the worker pool.
  void serve(Message m, const Sink& sink, Caller caller, const Method& method);
  void startListen(const Message& m, const Sink& sink, const Caller& caller);
  void deliver(const Sink& sink, std::optional<json> response);
  // The session's view of its client, for requests of the session era.
  Caller sessionCaller() const;
  // A failed Status as the JSON-RPC error for `caller` (a missing client capability is -32021
  // with the capability for stateless requests).
  json errorFor(const json& id, const Status& status, const Caller& caller) const;
  // Stateless results carry resultType, the server's identity and, for lists and reads,
  // caching hints.
  json finishStateless(const std::string& method, json result) const;

  Result<json> onInitialize(const InitializeParams& p, const Caller& caller);
  Result<json> onDiscover(const json& p, const Caller& caller);
  Result<json> onPing(const json& p, const Caller& caller);
  Result<json> onListTools(const ListParams& p, const Caller& caller);
  Result<json> onSetLevel(const SetLevelParams& p, const Caller& caller);
  Result<json> onListResources(const ListParams& p, const Caller& caller);
  Result<json> onListResourceTemplates(const ListParams& p, const Caller& caller);
  Result<json> onReadResource(const UriParams& p, const Caller& caller);
  Result<json> onSubscribe(const UriParams& p, const Caller& caller);
  Result<json> onUnsubscribe(const UriParams& p, const Caller& caller);
  Result<json> onListPrompts(const ListParams& p, const Caller& caller);
  Result<json> onGetPrompt(const GetPromptParams& p, const Caller& caller);
  Result<json> onComplete(const CompleteParams& p, const Caller& caller);
  Result<json> onCallTool(const CallToolParams& p, const Caller& caller);
  // `task`: the peer of the task the call runs as, if it does.
  // Whether the request this thread works on came from the operator's page (which waits for
  // its answer: its calls never become tasks).
  bool fromOperatorPage() const;
  // Audited and counted: the call, its permission decisions, its time and outcome.
  Result<json> runToolCall(const CallToolParams& p, const Caller& caller, Peer* task = nullptr);
  Result<json> dispatchToolCall(const CallToolParams& p, const Caller& caller, Peer* task);
  // A console tool's call sent to the remote (options_.remote).
  Result<json> forwardToolCall(const CallToolParams& p, const Caller& caller, bool structured);
  // What the remote's calls send back to this client while they run.
  RemoteCall remoteCall(const Caller& caller, const json& progress_token, const std::string& tool);
  // The tasks extension: whether `caller` declared it; a tool's execution.taskSupport
  // ("forbidden", "optional", "required"); `work` started as a task, its CreateTaskResult.
  static bool tasksDeclared(const Caller& caller);
  std::string taskSupport(const std::string& tool) const;
  json startTask(const Caller& caller, const std::string& name,
                 std::function<Result<json>(Peer&)> work);
  Result<json> onTaskGet(const json& p, const Caller& caller);
  Result<json> onTaskUpdate(const json& p, const Caller& caller);
  Result<json> onTaskCancel(const json& p, const Caller& caller);
  // Runs a catalog handler with a peer; for stateless requests turns open questions into an
  // InputRequiredResult and checks the requestState of a retry.
  // `arguments` bind a requestState to the request it was issued for.
  Result<json> withPeer(const std::string& method, const std::string& name, const json& arguments,
                        const InputResponses& input, const json& progress_token,
                        const Caller& caller, const std::function<Result<json>(Peer&)>& run);
  bool toolVisible(const Tool& tool) const;
  json capabilities() const;
  const CatalogTool* findCatalogTool(std::string_view name) const;
  // True when `uri` names a resource or matches a template of the catalog.
  bool knownResource(const std::string& uri) const;
  std::function<void(double, std::optional<double>, std::string)> progressReporter(
      const json& progress_token);

  // Whether a log message at `level` would reach this caller.
  bool wantsLog(int level, const Caller& caller) const;
  void logToClient(int level, const json& data, const Caller& caller,
                   const std::string& logger = "");
  std::string protocolVersion() const;

  Transport& transport_;
  Backend& backend_;
  const Limits limits_;
  const ServerOptions options_;
  const permissions::Guard* const guard_;
  std::string session_id_;
  mutable std::mutex activity_mu_;
  mutable std::condition_variable activity_cv_;  // a line was added
  std::deque<json> activity_;                    // the last kActivityKept audit lines
  uint64_t activity_seq_ = 0;
  std::set<std::string> operator_requests_;  // ids (idKey) of the page's requests not yet run
  permissions::DeniedFiles denied_files_;    // hard links to what the rules deny
  permissions::SessionGrants grants_;        // what the user allowed for the rest of the session
  ClientRequests client_requests_;
  std::map<std::string, Method, std::less<>> methods_;

  mutable std::mutex mu_;
  std::condition_variable idle_;
  std::string protocol_version_;                  // empty until initialize
  InitializeParams client_;                       // what the client declared at initialize
  std::set<std::string> subscriptions_;           // resource URIs
  std::map<std::string, Listener> listeners_;     // subscriptions/listen, by request id
  const stateless::StateSigner signer_;           // requestState of InputRequiredResults
  std::map<std::string, CancelToken> in_flight_;  // by serialized request id
  size_t active_ = 0;                     // tool calls started and not yet answered or dropped
  std::atomic<int> client_log_level_{3};  // "warning" until logging/setLevel
  std::shared_ptr<TaskStore> tasks_;      // before the pool: its threads end second
  WorkerPool pool_;                       // last member: destroyed (joined) first
};

}  // namespace byd::mcp
