#pragma once
// A client of another backyard-mcp (or any MCP server) over Streamable HTTP, for
// --backend remote: the file tools, execute and run_python of a session run there, the front
// relaying what the remote sends while a call runs (progress, log messages, its questions to
// the user) and cancelling there what its own client cancels.
//
// One remote session per client, opened on first use (initialize) and ended (DELETE) when the
// client is destroyed; a remote that forgot it (404: restarted, or reaped the session) gets a
// new one and the request again, which it had not run. A request the remote cannot be
// reached for (connection refused, no such host, connect timeout) is tried again with
// backoff, since it never arrived; one whose connection drops after it was sent is reported,
// never repeated: it may have run. libcurl is loaded on first use (backends/docker/lazy_libs.h).

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/cancel.h"
#include "common/result.h"

namespace byd::mcp {

using nlohmann::json;

// The detail of a Status that is the remote's JSON-RPC error, as it sent it ({code, message,
// data}): the front answers its own client with the same error.
inline constexpr const char* kRemoteErrorDetail = "remote_error";

struct RemoteOptions {
  std::string url;    // the remote's MCP endpoint: http(s)://HOST:PORT/mcp
  std::string token;  // sent as "Authorization: Bearer"; "": none
  std::string client_version = "0.0.0";
  // Tries of a request that could not be delivered, the first included, and the wait before
  // the second (doubling after).
  int attempts = 4;
  std::chrono::milliseconds backoff{250};
  std::chrono::milliseconds connect_timeout{5000};
  // How long a connection may go without the remote acknowledging what was sent to it (a
  // request, or a keep-alive probe after 5 s of silence) before it counts as lost: a remote
  // whose machine is gone sends no reset, and a call would otherwise wait on it for minutes.
  std::chrono::milliseconds dead_peer_timeout{10000};
  // How long a cancelled call waits for the remote to end it before it lets go.
  std::chrono::milliseconds cancel_grace{3000};
};

// What the front does with what the remote sends while one call runs.
struct RemoteCall {
  CancelToken cancel;
  // notifications/progress; empty when the front's client asked for none (then the remote is
  // asked for none either).
  std::function<void(double progress, std::optional<double> total, std::string message)> progress;
  // notifications/message (the params as sent); empty: dropped.
  std::function<void(const json& params)> log;
  // A request of the remote to the client (elicitation/create, roots/list): the client's
  // result, or an error sent back as the remote's answer. Empty: every such request is refused.
  std::function<Result<json>(const std::string& method, const json& params)> ask;
  // The front client's capabilities, which the remote session declares as its own (the
  // remote asks the user only where the front's client can): used when the session opens.
  json capabilities = json::object();
};

class RemoteClient {
 public:
  explicit RemoteClient(RemoteOptions options);
  ~RemoteClient();
  RemoteClient(const RemoteClient&) = delete;
  RemoteClient& operator=(const RemoteClient&) = delete;

  // Sends a request and returns its result. Errors: the remote's JSON-RPC error (its code in a
  // Status of the matching code, the error itself in kRemoteErrorDetail); the remote could
  // not be reached or refused the token; the connection dropped before the answer.
  Result<json> request(const std::string& method, json params, const RemoteCall& call);
  // A tools/call, whose result comes back as the remote sent it (without structuredContent
  // when `structured` is false). A remote that cannot be reached, or is lost mid-call, is a
  // tool error naming it and what became of the call; its JSON-RPC errors are errors.
  Result<json> callTool(const std::string& name, const json& arguments, const RemoteCall& call,
                        bool structured);
  // Every tool the remote lists (all pages), kept after the first success for as long as its
  // session lasts.
  Result<json> tools(const RemoteCall& call);

  const std::string& url() const { return options_.url; }

 private:
  struct Reply;
  // One POST of `message` (a request when `id` is set), relaying to `call` what comes before
  // its answer; `session` is the Mcp-Session-Id to send ("" none).
  Reply post(const json& message, std::optional<int64_t> id, const std::string& session,
             const RemoteCall* call);
  // The session's id, opening it (initialize, notifications/initialized) when there is none.
  Result<std::string> session(const RemoteCall& call);
  // Forgets `id` as the session (a remote that no longer knows it).
  void forget(const std::string& id);
  // A message the remote sent while `call` runs that is not its answer: a notification
  // relayed to `call`, or a request to the client, whose answer goes back in the session.
  void relay(const json& message, const RemoteCall& call, const std::string& session);
  // The headers every request in the session carries: the token, the session's id and its
  // protocol revision (those that apply).
  std::vector<std::string> sessionHeaders(const std::string& session);
  // Sends a notification or a response in the session, without waiting for more than its
  // acceptance.
  void send(const json& message, const std::string& session);
  // Sends a DELETE for the session.
  void end(const std::string& session);

  // A transfer's handles, kept between requests with the connection they hold open (a TLS
  // handshake per call would cost more than the call).
  struct Connection {
    void* multi = nullptr;  // CURLM*
    void* easy = nullptr;   // CURL*
  };
  std::optional<Connection> take();
  void giveBack(Connection connection, bool reusable);

  const RemoteOptions options_;
  std::atomic<int64_t> next_id_{1};
  std::mutex open_mu_;  // one session opens at a time: calls that find none wait for it
  std::mutex mu_;
  std::string session_id_;        // "" until initialized
  std::string protocol_version_;  // negotiated
  std::optional<json> tools_;     // tools/list of this session
  std::vector<Connection> idle_;  // at most kIdleConnections
};

}  // namespace byd::mcp
