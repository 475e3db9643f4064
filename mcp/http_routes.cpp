#include "mcp/http_server_impl.h"

// The routes of the session-era revisions: streamable HTTP (POST, GET and DELETE /mcp, with
// batches for 2025-03-26) and the 2024-11-05 SSE transport (GET /sse, POST /messages).

namespace byd::mcp {

// Hands one message to the session's dispatcher and answers the POST.
void HttpServer::Impl::post(const std::shared_ptr<Session>& session, const json& message,
                            httplib::Response& res) {
  const bool request = message.contains("method") && message.contains("id");
  Session::Busy busy(*session);
  std::shared_ptr<Exchange> exchange;
  if (request) exchange = session->transport.expect(message["id"].dump());
  // A cancelled request's POST ends once its work has stopped (Transport::unanswered).
  {
    std::lock_guard lock(session->frame_mu);
    session->server->onMessage(message);
  }
  if (!request) {
    res.status = 202;
    return;
  }
  respond(session, exchange, res);
}

// JSON when the answer is the first and only message; otherwise an SSE stream.
void HttpServer::Impl::respond(const std::shared_ptr<Session>& session,
                               const std::shared_ptr<Exchange>& exchange, httplib::Response& res) {
  std::unique_lock lock(exchange->mu);
  exchange->cv.wait(lock,
                    [&] { return !exchange->events.empty() || exchange->done || exchange->cut; });
  if (exchange->events.empty() && exchange->done) {  // cancelled: no answer comes
    res.status = 204;
    return;
  }
  if (exchange->done && exchange->events.size() == 1) {
    res.set_content(serialize(exchange->events.front()), "application/json");
    return;
  }
  exchange->reading = true;
  lock.unlock();
  streamEvents(session, exchange, res, 0);
}

// Streams `exchange` from event number `from` on, each event with its id; `preamble` goes out
// first (the legacy transport's endpoint event). The caller has marked it as being read. A
// legacy session lives as long as its stream.
void HttpServer::Impl::streamEvents(const std::shared_ptr<Session>& session,
                                    const std::shared_ptr<Exchange>& exchange,
                                    httplib::Response& res, size_t from, std::string preamble,
                                    StreamKind kind) {
  const bool legacy = kind == StreamKind::kLegacy;
  ++session->open_requests;
  res.set_header("Cache-Control", "no-cache");
  if (!legacy && exchange->resumable && atLeast(session->transport.version(), "2025-11-25")) {
    // 2025-11-25: a priming event (an id, no data) lets the client resume from the start,
    // and `retry` says how soon to reconnect.
    preamble += "id: " + exchange->id + ":" + std::to_string(from) + "\nretry: 1000\ndata: \n\n";
  }
  auto first = std::make_shared<std::string>(std::move(preamble));
  auto cursor = std::make_shared<size_t>(from);
  res.set_chunked_content_provider(
      "text/event-stream",
      [exchange, first, cursor](size_t, httplib::DataSink& sink) {
        if (!first->empty()) {
          const bool ok = sink.write(first->data(), first->size());
          first->clear();
          if (!ok) return false;
        }
        std::unique_lock lock(exchange->mu);
        exchange->cv.wait_for(lock, kKeepAlive, [&] {
          return exchange->end() > *cursor || exchange->done || exchange->cut;
        });
        std::string out;
        *cursor = std::max(*cursor, exchange->first);  // what fell out of the log is gone
        for (; *cursor < exchange->end(); ++*cursor) {
          if (exchange->resumable) {
            out += "id: " + exchange->id + ":" + std::to_string(*cursor + 1) + "\n";
          }
          out += sseEvent(exchange->events[*cursor - exchange->first]);
        }
        // Ends with the answer, the session, or when the call asked to end the connection;
        // then a client may resume it at once.
        const bool finished = exchange->done || std::exchange(exchange->cut, false);
        if (finished) exchange->reading = false;
        lock.unlock();
        if (out.empty() && !finished) out = ": keep-alive\n\n";
        if (!out.empty() && !sink.write(out.data(), out.size())) return false;
        if (finished) sink.done();  // the answer went out, or the session ended
        return true;
      },
      [this, session, exchange, legacy](bool) {
        bool unanswered;
        {
          std::lock_guard lock(exchange->mu);
          exchange->reading = false;
          unanswered = !exchange->done;
        }
        --session->open_requests;
        session->touch();
        if (legacy) endSession(session->id);
        // A stateless request whose client closed its stream is cancelled (2026-07-28).
        if (unanswered && !exchange->resumable) cancelStateless(session, exchange);
      });
}

// Marks `exchange` as read by one more connection; false when one already reads it.
bool HttpServer::Impl::startReading(const std::shared_ptr<Exchange>& exchange) {
  std::lock_guard lock(exchange->mu);
  if (exchange->reading) return false;
  exchange->reading = true;
  return true;
}

// 2024-11-05: GET /sse starts a session and its stream, whose first event names the URL
// the client posts to.
void HttpServer::Impl::onLegacyStream(const httplib::Request& req, httplib::Response& res) {
  if (refuseWhileStopping(res)) return;
  if (!accepts(req, "text/event-stream")) {
    jsonError(res, 406, rpc::kInvalidRequest, "Accept must offer text/event-stream");
    return;
  }
  SessionAsk ask;
  if (!sessionAsk(req, nullptr, &ask, res)) return;
  auto made = newSession(*tenantOf(req), ask);
  if (!made.ok()) {
    failedSession(made.status(), res);
    return;
  }
  std::shared_ptr<Session> session = std::move(*made);
  session->transport.setLegacy();
  auto stream = session->transport.standalone();
  startReading(stream);
  spdlog::info("http: session {}… started (HTTP+SSE)", session->id.substr(0, 8));
  streamEvents(session, stream, res, 0,
               "event: endpoint\ndata: /messages?sessionId=" + session->id + "\n\n",
               StreamKind::kLegacy);
}

// 2024-11-05: POST /messages?sessionId=... is answered 202; the answer travels on the stream.
void HttpServer::Impl::onLegacyPost(const httplib::Request& req, httplib::Response& res) {
  std::shared_ptr<Session> session = find(req.get_param_value("sessionId"), tenantOf(req));
  if (!session) {
    jsonError(res, 404, rpc::kInvalidRequest, "unknown or ended session");
    return;
  }
  Result<json> parsed = parseJson(req.body);
  if (!parsed.ok() || !parsed->is_object()) {
    jsonError(res, 400, rpc::kParseError, "the body must be one JSON-RPC message");
    return;
  }
  json message = std::move(*parsed);
  session->touch();
  {
    std::lock_guard lock(session->frame_mu);
    session->server->onMessage(std::move(message));
  }
  res.status = 202;
}

void HttpServer::Impl::failedSession(const Status& status, httplib::Response& res) {
  if (status.code() == Code::kResourceExhausted) {
    res.set_header("Retry-After", "30");
    jsonError(res, 429, rpc::kInvalidRequest, status.message());
  } else if (status.code() == Code::kInvalidArgument) {
    jsonError(res, 400, rpc::kInvalidParams, status.message());
  } else {
    spdlog::error("http: cannot start a session: {}", status.message());
    jsonError(res, 500, rpc::kInternalError, "cannot start a session");
  }
}

bool HttpServer::Impl::refuseWhileStopping(httplib::Response& res) {
  std::lock_guard lock(mu);
  if (!stopping) return false;
  res.set_header("Retry-After", "5");
  jsonError(res, 503, rpc::kInvalidRequest, "the server is shutting down");
  return true;
}

void HttpServer::Impl::onPost(const httplib::Request& req, httplib::Response& res) {
  if (refuseWhileStopping(res)) return;
  const std::string type = lower(req.get_header_value("Content-Type"));
  if (type.rfind("application/json", 0) != 0) {
    jsonError(res, 415, rpc::kInvalidRequest, "Content-Type must be application/json");
    return;
  }
  if (!accepts(req, "application/json") || !accepts(req, "text/event-stream")) {
    jsonError(res, 406, rpc::kInvalidRequest,
              "Accept must offer both application/json and text/event-stream");
    return;
  }
  Result<json> parsed = parseJson(req.body);
  if (!parsed.ok()) {
    jsonError(res, 400, rpc::kParseError,
              parsed.status().message() == "not valid JSON"
                  ? "parse error: the body is not JSON"
                  : "parse error: " + parsed.status().message());
    return;
  }
  json message = std::move(*parsed);
  if (message.is_array()) {
    postBatch(req, message, res);
    return;
  }
  if (!message.is_object() || message.value("jsonrpc", "") != "2.0" ||
      !(message.contains("method") || isResponse(message)) ||
      (message.contains("method") && !message["method"].is_string())) {
    jsonError(res, 400, rpc::kInvalidRequest, "the body must be one JSON-RPC 2.0 message");
    return;
  }
  if (message.contains("id") && !message["id"].is_string() && !message["id"].is_number_integer()) {
    jsonError(res, 400, rpc::kInvalidRequest, "\"id\" must be a string or an integer");
    return;
  }
  if (!req.has_header(kSessionHeader) && isStateless(req, message)) {
    postStateless(req, message, res);
    return;
  }
  std::shared_ptr<Session> session;
  if (message.value("method", "") == "initialize") {
    SessionAsk ask;
    if (!sessionAsk(req, &message, &ask, res)) return;
    auto made = newSession(*tenantOf(req), ask);
    if (!made.ok()) {
      failedSession(made.status(), res);
      return;
    }
    session = std::move(*made);
    res.set_header(kSessionHeader, session->id);
    spdlog::info("http: session {}… started{}{}", session->id.substr(0, 8),
                 ask.name.empty() ? "" : " as '" + ask.name + "'",
                 ask.runtime.empty() ? "" : " (runtime " + ask.runtime + ")");
  } else {
    session = sessionOf(req, res);
    if (!session) return;
  }
  post(session, message, res);
}

// A JSON-RPC batch, which only revision 2025-03-26 has: the dispatcher answers it with one
// array, which is this POST's JSON answer (202 when it held no request).
void HttpServer::Impl::postBatch(const httplib::Request& req, const json& batch,
                                 httplib::Response& res) {
  auto session = sessionOf(req, res);
  if (!session) return;
  if (session->transport.version() != "2025-03-26") {
    jsonError(res, 400, rpc::kInvalidRequest, "batches exist only at protocol version 2025-03-26");
    return;
  }
  const bool has_request = std::any_of(batch.begin(), batch.end(), [](const json& m) {
    return m.is_object() && m.contains("method") && m.contains("id");
  });
  std::lock_guard batch_lock(session->batch_mu);  // one batch in flight per session
  Session::Busy busy(*session);
  std::shared_ptr<Exchange> exchange = has_request ? session->transport.expectBatch() : nullptr;
  {
    std::lock_guard lock(session->frame_mu);
    session->server->onMessage(batch);
  }
  if (!exchange) {
    res.status = 202;
    return;
  }
  // When every request of it is cancelled, no answer comes: once the session runs no call
  // (a call's answer goes out before it stops counting), the POST ends with 204.
  std::unique_lock lock(exchange->mu);
  while (!exchange->cv.wait_for(lock, std::chrono::milliseconds(100),
                                [&] { return exchange->done; })) {
    lock.unlock();
    const bool idle = session->server->activeCalls() == 0;
    lock.lock();
    if (idle && !exchange->done) break;
  }
  if (exchange->events.empty()) {
    res.status = 204;
    return;
  }
  res.set_content(serialize(exchange->events.back()), "application/json");
}

// GET /mcp: the session's stream for messages that belong to no request, from now on; or,
// with Last-Event-ID, any stream of the session resumed after that event.
void HttpServer::Impl::onGet(const httplib::Request& req, httplib::Response& res) {
  if (!accepts(req, "text/event-stream")) {
    jsonError(res, 406, rpc::kInvalidRequest, "Accept must offer text/event-stream");
    return;
  }
  auto session = sessionOf(req, res);
  if (!session) return;
  std::shared_ptr<Exchange> stream;
  size_t from = 0;
  if (req.has_header("Last-Event-ID")) {
    const std::string last = req.get_header_value("Last-Event-ID");
    const size_t colon = last.find(':');
    stream = session->transport.streamOf(last);
    const std::string number = colon == std::string::npos ? "" : last.substr(colon + 1);
    if (!stream || number.empty() || number.size() > 18 ||
        number.find_first_not_of("0123456789") != std::string::npos) {
      jsonError(res, 404, rpc::kInvalidRequest, "no stream to resume at event " + last);
      return;
    }
    from = std::stoull(number);  // event K has the id S:K, counted from 1
  } else {
    stream = session->transport.standalone();
    std::lock_guard lock(stream->mu);
    from = stream->end();
  }
  if (!startReading(stream)) {
    jsonError(res, 409, rpc::kInvalidRequest, "that stream is already open");
    return;
  }
  streamEvents(session, stream, res, from);
}

void HttpServer::Impl::onDelete(const httplib::Request& req, httplib::Response& res) {
  auto session = sessionOf(req, res);
  if (!session) return;
  endSession(session->id);
  res.status = 200;
}

}  // namespace byd::mcp
