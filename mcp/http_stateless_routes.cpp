#include "mcp/http_server_impl.h"

// The routes of the stateless revision (2026-07-28): requests outside sessions, served by one
// shared dispatcher under ids of the server's own.

namespace byd::mcp {

// The stateless revision (2026-07-28) is spoken by requests outside sessions that carry
// its _meta, name a version of no session-era revision, or ask for server/discover.
bool HttpServer::Impl::isStateless(const httplib::Request& req, const json& message) {
  if (stateless::hasModernMeta(message.value("params", json()))) return true;
  const std::string method = message.value("method", "");
  if (method == "server/discover") return true;
  if (method == "initialize") return false;  // a session-era client, whatever its header says
  if (!req.has_header(kVersionHeader)) return false;
  const std::string version = req.get_header_value(kVersionHeader);
  return std::find(kProtocolVersions.begin(), kProtocolVersions.end(), version) ==
         kProtocolVersions.end();
}

Result<std::shared_ptr<Session>> HttpServer::Impl::statelessSession() {
  std::lock_guard lock(stateless_mu);
  {
    std::lock_guard state_lock(mu);
    if (stateless) return stateless;
  }
  BYD_ASSIGN_OR_RETURN(std::shared_ptr<Session> session,
                       makeSession(SessionKind::kStateless, tenants.front()));
  std::lock_guard state_lock(mu);
  stateless = session;
  return session;
}

int HttpServer::Impl::statusForError(int code) {
  switch (code) {
    case rpc::kMethodNotFound:
      return 404;
    case rpc::kInternalError:
      return 500;
    case stateless::kHeaderMismatch:
    case stateless::kMissingCapability:
    case stateless::kUnsupportedVersion:
    case rpc::kInvalidParams:
    case rpc::kInvalidRequest:
    case rpc::kParseError:
      return 400;
    default:
      return 200;
  }
}

// A request of the stateless revision: its headers are checked against its body, then it
// goes to the shared dispatcher under an id of the server's own.
void HttpServer::Impl::postStateless(const httplib::Request& req, const json& message,
                                     httplib::Response& res) {
  const bool request = message.contains("method") && message.contains("id");
  if (!request) {  // the revision defines no client notifications over HTTP
    res.status = 202;
    return;
  }
  const json& id = message["id"];
  if (!options.stateless) {
    // A modern client that gets no modern error falls back to initialize.
    jsonError(res, 400, rpc::kInvalidRequest,
              "this server keeps a workspace per session (--workspace-root), which stateless "
              "requests would have to share: send initialize");
    return;
  }
  auto mismatch = [&](const std::string& why) {
    res.status = 400;
    res.set_content(serialize(makeError(id, stateless::kHeaderMismatch, "header mismatch: " + why)),
                    "application/json");
  };
  if (!req.has_header(kVersionHeader)) {
    mismatch("the MCP-Protocol-Version header is required");
    return;
  }
  const json params = message.value("params", json::object());
  const std::string header_version = req.get_header_value(kVersionHeader);
  if (params.is_object() && params.contains("_meta") && params["_meta"].is_object()) {
    auto body = params["_meta"].find(stateless::kMetaVersion);
    if (body != params["_meta"].end() && body->is_string() && *body != header_version) {
      mismatch("MCP-Protocol-Version " + header_version + " differs from _meta's " +
               body->get<std::string>());
      return;
    }
  }
  auto session = statelessSession();
  if (!session.ok()) {
    failedSession(session.status(), res);
    return;
  }
  json header_params = json::object();
  if (message.value("method", "") == "tools/call" && params.is_object()) {
    if (const json* tool = (*session)->server->catalogToolDefinition(params.value("name", ""))) {
      header_params = stateless::headerParams(tool->value("inputSchema", json::object()));
    }
  }
  const Status headers = stateless::checkHeaders(
      message,
      [&req](std::string_view name) -> std::optional<std::string> {
        const std::string key(name);
        if (!req.has_header(key)) return std::nullopt;
        return req.get_header_value(key);
      },
      header_params);
  if (!headers.ok()) {
    mismatch(headers.message());
    return;
  }
  const json our_id = "h" + std::to_string(++stateless_ids);
  json rewritten = message;
  rewritten["id"] = our_id;
  auto exchange = (*session)->transport.expectStateless(our_id, id);
  {
    std::lock_guard lock((*session)->frame_mu);
    (*session)->server->onMessage(std::move(rewritten));
  }
  // A quick answer goes out as JSON; after a second the answer comes as a stream, whose
  // keep-alives notice a client that went away (which cancels the request).
  std::unique_lock lock(exchange->mu);
  exchange->cv.wait_for(lock, std::chrono::seconds(1),
                        [&] { return !exchange->events.empty() || exchange->done; });
  if (exchange->events.empty() && exchange->done) {  // cancelled: no answer comes
    res.status = 204;
    return;
  }
  if (exchange->done && exchange->events.size() == 1) {
    const json& answer = exchange->events.front();
    if (answer.contains("error")) res.status = statusForError(answer["error"].value("code", 0));
    res.set_content(serialize(answer), "application/json");
    return;
  }
  exchange->reading = true;
  lock.unlock();
  res.set_header("X-Accel-Buffering", "no");
  streamEvents(*session, exchange, res, 0);
}

// The client of a stateless request closed its stream before the answer: the request is
// cancelled (a subscription ends).
void HttpServer::Impl::cancelStateless(const std::shared_ptr<Session>& session,
                                       const std::shared_ptr<Exchange>& exchange) {
  session->transport.abandon(exchange->our_id.dump());
  std::lock_guard lock(session->frame_mu);
  session->server->cancelRequest(exchange->our_id);
}

}  // namespace byd::mcp
