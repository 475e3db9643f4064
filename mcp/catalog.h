#pragma once
// What a server offers beyond the console tools: tools of its own, resources, resource
// templates, prompts and argument completion. A Catalog is built once by whoever starts the
// server (examples/conformance_server registers the fixtures the official suite calls) and is
// shared read-only by every session; its handlers are called concurrently from worker threads.
//
// A catalog tool reaches its client through a Peer: progress, log messages, questions to the
// client (sampling/createMessage, elicitation/create, roots/list) and, over Streamable HTTP,
// ending the response stream early so the client resumes it later (SSE polling).

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/cancel.h"
#include "common/result.h"

namespace byd::mcp {

using nlohmann::json;

// The client, as one tool call or prompt request sees it. Valid for the duration of the call.
class Peer {
 public:
  virtual ~Peer() = default;
  // notifications/progress, when the client sent a progressToken (otherwise nothing).
  virtual void progress(double progress, std::optional<double> total,
                        std::string_view message = "") = 0;
  // notifications/message at `level` ("debug" ... "emergency"), when the client's level lets
  // it through.
  virtual void log(std::string_view level, const json& data) = 0;
  // Questions to the client, {key: {"method": ..., "params": ...}} with the methods
  // sampling/createMessage, elicitation/create and roots/list; the answers as {key: result}.
  // In a session they are sent as requests, one after another. A stateless request (2026-07-28)
  // cannot send requests: the call ends with an InputRequiredResult carrying the questions not
  // yet answered, and runs again when the client retries with the answers (so a handler must
  // do nothing before its questions that it cannot do twice). Fails when the client did not
  // declare the capability a method needs; then return that failure.
  virtual Result<json> askAll(const json& questions) = 0;
  // One question; `key` names it in an InputRequiredResult (default: its order in the call).
  Result<json> ask(std::string_view method, json params, std::string key = "");
  // Whether the client declared `capability` ("sampling", "elicitation", "roots").
  virtual bool clientSupports(std::string_view capability) const = 0;
  // Tells listening clients that the server's "tools", "prompts" or "resources" changed.
  virtual void listChanged(std::string_view list) = 0;
  // Ends the HTTP stream that will carry this call's answer; the client reconnects with
  // Last-Event-ID and gets the rest. False on transports (and revisions) without resumable
  // streams, where nothing happens.
  virtual bool closeStream() = 0;
  virtual const CancelToken& cancel() const = 0;
  // The rest of the call as a task (the tasks extension): when the client declared the
  // extension, `work` runs on a thread of its own with a peer of the task, and this returns
  // the CreateTaskResult to answer at once; otherwise `work` runs now, with this peer. For a
  // tool whose definition says so (CatalogTool::starts_task), after the questions it asks
  // before the task begins.
  virtual Result<json> asTask(const std::function<Result<json>(Peer&)>& work) {
    return work(*this);
  }

 private:
  int asked_ = 0;
};

struct CatalogTool {
  // As tools/list shows it: name, description, inputSchema, and title, annotations,
  // outputSchema as wanted. Arguments are validated against inputSchema before `call`.
  json definition;
  // Returns a CallToolResult ({"content": [...]}, isError...). A failed Status becomes a
  // JSON-RPC error; a tool-level failure belongs in the result with isError.
  std::function<Result<json>(const json& arguments, Peer& peer)> call;
  // With the tasks extension, a tool whose definition's execution.taskSupport is "optional"
  // or "required" runs as a task from its start; one that `starts_task` runs as a request
  // until it calls Peer::asTask.
  bool starts_task = false;
};

struct Resource {
  json definition;  // uri, name, and description, mimeType, title, size as wanted
  // The resource's `contents` array for resources/read.
  std::function<Result<json>(const std::string& uri)> read;
};

struct ResourceTemplate {
  json definition;  // uriTemplate ("test://template/{id}/data"), name, description, mimeType
  // `vars` holds the template's variables as the URI gave them.
  std::function<Result<json>(const std::string& uri,
                             const std::map<std::string, std::string>& vars)>
      read;
};

struct Prompt {
  json definition;  // name, description, arguments [{name, description, required}]
  // The GetPromptResult ({"messages": [...]}); required arguments are checked before. The
  // peer can ask the client questions, as a tool's can.
  std::function<Result<json>(const std::map<std::string, std::string>& arguments, Peer& peer)> get;
};

// Candidate values for one argument of a prompt or resource template ("ref/prompt" with a
// name, "ref/resource" with a uri). Returns the values; the server caps them at 100.
using Completer = std::function<Result<std::vector<std::string>>(
    const json& ref, const std::string& argument, const std::string& value, const json& context)>;

struct Catalog {
  bool console_tools = true;  // ls, read_file, ... from the backend
  bool lists_change = false;  // its lists may change: clients can listen for list_changed
  std::vector<CatalogTool> tools;
  std::vector<Resource> resources;
  std::vector<ResourceTemplate> templates;
  std::vector<Prompt> prompts;
  Completer complete;  // empty: no completions capability
};

// Matches `uri` against an RFC 6570 level-1 template ("a/{x}/b"): each {name} takes one or
// more characters up to the next literal, never a '/'. The variables on a match.
std::optional<std::map<std::string, std::string>> matchUriTemplate(std::string_view uri_template,
                                                                   std::string_view uri);

}  // namespace byd::mcp
