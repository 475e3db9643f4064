#include "mcp/http_server_impl.h"

#include <charconv>

// The operator's page (--ui): GET /ui is one self-contained HTML file (mcp/ui/index.html,
// compiled in), served with a Content-Security-Policy that lets it load nothing and talk to
// nothing but this server. Its API, under /ui/api/, answers only the operator's token
// (--admin-token-file):
//   GET    /ui/api/state                    capacity and the open sessions (JSON)
//   GET    /ui/api/events                   the same, as server-sent events, when it changes
//   GET    /ui/api/policy                   tenants, runtimes, rules, settings and origins
//   GET    /ui/api/sessions/ID/activity     the session's last calls, as the audit log has them
//   GET    /ui/api/sessions/ID/activity/events   those numbered after ?after=SEQ (default 0),
//                                           then each as it lands, as server-sent events,
//                                           until the session ends
//   POST   /ui/api/sessions/ID/mcp          one JSON-RPC message into the session, answered as
//                                           a POST to /mcp is (JSON, or SSE with progress)
//   DELETE /ui/api/sessions/ID              ends the session
// What the page runs goes to the session's own dispatcher: the same rules, approvals, limits
// and backend as its client's calls, audited as its calls are.

namespace byd {
extern const char kUiPage[];
}  // namespace byd

namespace byd::mcp {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(int64_t ticks) {
  return std::chrono::duration<double>(Clock::now() - Clock::time_point(Clock::duration(ticks)))
      .count();
}

void noStore(httplib::Response& res) { res.set_header("Cache-Control", "no-store"); }

}  // namespace

json HttpServer::Impl::sessionUse(const std::string& id, Backend& backend) const {
  constexpr auto kEvery = std::chrono::seconds(3);
  const auto now = Clock::now();
  std::optional<UseSample> last;
  {
    std::lock_guard lock(use_mu);
    if (auto it = use_samples.find(id); it != use_samples.end()) last = it->second;
  }
  UseSample sample;
  if (last && now - last->at < kEvery) {
    sample = *last;
  } else {
    sample.at = now;
    sample.use = backend.resourceUse();
    if (last && last->use && sample.use) {
      const double wall = std::chrono::duration<double>(now - last->at).count();
      const double cpu = sample.use->cpu_seconds - last->use->cpu_seconds;
      if (wall > 0 && cpu >= 0) sample.cpu_percent = 100 * cpu / wall;
    }
    std::lock_guard lock(use_mu);
    use_samples[id] = sample;
  }
  if (!sample.use) return nullptr;
  const ResourceUse& u = *sample.use;
  return {{"memory_bytes", u.memory_bytes},
          {"memory_limit", u.memory_limit ? json(*u.memory_limit) : json(nullptr)},
          {"cpu_seconds", std::round(u.cpu_seconds * 100) / 100},
          {"cpu_percent",
           sample.cpu_percent ? json(std::round(*sample.cpu_percent * 10) / 10) : json(nullptr)},
          {"cpu_limit", u.cpu_limit ? json(*u.cpu_limit) : json(nullptr)}};
}

json HttpServer::Impl::uiState() const {
  json sessions_out = json::array();
  std::map<std::string, size_t> by_tenant;
  std::vector<std::shared_ptr<Session>> open_sessions;
  size_t open = 0;
  {
    std::lock_guard lock(mu);
    open = sessions.size();
    for (const auto& [id, s] : sessions) {
      open_sessions.push_back(s);
      ++by_tenant[s->tenant->name];
      sessions_out.push_back(
          {{"id", id},
           {"tenant", s->tenant->name},
           {"name", s->name},
           {"runtime", s->backend.runtime},
           {"backend", std::string(s->backend.backend->kind())},
           {"age_s", std::floor(secondsSince(s->created))},
           // Since its client last asked anything (a stream it holds open to listen is not a
           // use, though the session is not ended while it is open).
           {"idle_s", s->server->activeCalls() > 0 || s->server->runningTasks() > 0
                          ? 0.0
                          : std::floor(secondsSince(s->last_used))},
           {"listening", s->open_requests > 0},
           {"calls", s->server->activeCalls()},
           {"tasks", s->server->runningTasks()}});
    }
  }
  // Outside the lock: a container's stats are an engine request.
  for (size_t i = 0; i < open_sessions.size(); ++i) {
    sessions_out[i]["use"] = sessionUse(open_sessions[i]->id, *open_sessions[i]->backend.backend);
  }
  {
    std::lock_guard lock(use_mu);
    std::erase_if(use_samples, [&](const auto& entry) {
      return std::none_of(open_sessions.begin(), open_sessions.end(),
                          [&](const auto& s) { return s->id == entry.first; });
    });
  }
  json tenants_out = json::array();
  for (const Tenant& t : tenants) {
    tenants_out.push_back({{"name", t.name},
                           {"open", by_tenant[t.name]},
                           {"max_sessions", t.max_sessions == SIZE_MAX ? json(options.max_sessions)
                                                                       : json(t.max_sessions)}});
  }
  return {{"capacity", {{"open", open}, {"max_sessions", options.max_sessions}}},
          {"tenants", std::move(tenants_out)},
          {"sessions", std::move(sessions_out)}};
}

void HttpServer::Impl::uiRoutes() {
  http.Get("/ui", [](const httplib::Request&, httplib::Response& res) {
    // One nonce per answer: the page's own script and style run, nothing injected does.
    const std::string nonce = base64Encode(randomHex(16));
    std::string page = kUiPage;
    for (size_t at = page.find("__NONCE__"); at != std::string::npos;
         at = page.find("__NONCE__", at + nonce.size())) {
      page.replace(at, 9, nonce);
    }
    res.set_header("Content-Security-Policy",
                   "default-src 'none'; script-src 'nonce-" + nonce + "'; style-src 'nonce-" +
                       nonce +
                       "'; img-src 'self' data: blob:; connect-src 'self'; base-uri 'none'; "
                       "form-action 'none'; frame-ancestors 'none'");
    res.set_header("X-Content-Type-Options", "nosniff");
    res.set_header("Referrer-Policy", "no-referrer");
    noStore(res);
    res.set_content(page, "text/html; charset=utf-8");
  });
  // Every /ui/api/ route: the operator's token, else 401 (and nothing said of what is there).
  using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;
  const auto operatorOnly = [this](Handler handler) {
    return
        [this, handler = std::move(handler)](const httplib::Request& req, httplib::Response& res) {
          noStore(res);
          if (!fromOperator(req)) {
            res.set_header("WWW-Authenticate", "Bearer realm=\"backyard-mcp operator\"");
            jsonError(res, 401, rpc::kInvalidRequest, "the operator's bearer token is needed");
            return;
          }
          handler(req, res);
        };
  };
  // A route on one session by its id; 404 when there is none.
  using SessionHandler = std::function<void(const httplib::Request&, httplib::Response&,
                                            const std::shared_ptr<Session>&)>;
  const auto onSession = [this, operatorOnly](SessionHandler handler) {
    return operatorOnly(
        [this, handler = std::move(handler)](const httplib::Request& req, httplib::Response& res) {
          std::shared_ptr<Session> session;
          {
            std::lock_guard lock(mu);
            auto it = sessions.find(std::string(req.matches[1]));
            if (it != sessions.end()) session = it->second;
          }
          if (!session) {
            jsonError(res, 404, rpc::kInvalidRequest, "no such session");
            return;
          }
          handler(req, res, session);
        });
  };
  http.Get("/ui/api/state", operatorOnly([this](const httplib::Request&, httplib::Response& res) {
             res.set_content(uiState().dump(), "application/json");
           }));
  http.Get("/ui/api/policy", operatorOnly([this](const httplib::Request&, httplib::Response& res) {
             res.set_content(options.policy.dump(), "application/json");
           }));
  http.Get("/ui/api/events", operatorOnly([this](const httplib::Request&, httplib::Response& res) {
             // The state whenever it changes (looked at twice a second), a comment every 15 s
             // otherwise, until the page goes or the server stops.
             auto last = std::make_shared<std::string>();
             auto quiet_since = std::make_shared<Clock::time_point>(Clock::now());
             res.set_header("Cache-Control", "no-store");
             res.set_chunked_content_provider(
                 "text/event-stream", [this, last, quiet_since](size_t, httplib::DataSink& sink) {
                   {
                     std::unique_lock lock(mu);
                     if (stopping) return false;
                   }
                   std::string now = uiState().dump();
                   if (now != *last) {
                     *last = now;
                     *quiet_since = Clock::now();
                     const std::string event = "event: state\ndata: " + now + "\n\n";
                     return sink.write(event.data(), event.size());
                   }
                   if (Clock::now() - *quiet_since > std::chrono::seconds(15)) {
                     *quiet_since = Clock::now();
                     if (!sink.write(": still here\n\n", 14)) return false;
                   }
                   std::unique_lock lock(mu);
                   reaper_cv.wait_for(lock, std::chrono::milliseconds(500),
                                      [this] { return stopping; });
                   return !stopping;
                 });
           }));
  http.Get(R"(/ui/api/sessions/([0-9a-f]+)/activity)",
           onSession([](const httplib::Request&, httplib::Response& res,
                        const std::shared_ptr<Session>& session) {
             res.set_content(session->server->recentCalls().dump(), "application/json");
           }));
  http.Get(
      R"(/ui/api/sessions/([0-9a-f]+)/activity/events)",
      onSession([this](const httplib::Request& req, httplib::Response& res,
                       const std::shared_ptr<Session>& session) {
        uint64_t after = 0;
        if (req.has_param("after")) {
          const std::string text = req.get_param_value("after");
          const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), after);
          if (ec != std::errc() || end != text.data() + text.size()) {
            jsonError(res, 400, rpc::kInvalidParams, "after= must be a line's seq, a number");
            return;
          }
        }
        // Each event carries the lines that landed since the last (an array, perhaps empty
        // in the first); a comment every 15 s otherwise. The stream holds the session only
        // weakly, and ends when it ends.
        auto seq = std::make_shared<uint64_t>(after);
        auto first = std::make_shared<bool>(true);
        auto quiet_since = std::make_shared<Clock::time_point>(Clock::now());
        std::weak_ptr<Session> weak = session;
        noStore(res);
        res.set_chunked_content_provider("text/event-stream", [this, weak, seq, first, quiet_since](
                                                                  size_t, httplib::DataSink& sink) {
          std::shared_ptr<Session> held = weak.lock();
          {
            std::lock_guard lock(mu);
            if (stopping || !held || !sessions.contains(held->id)) return false;
          }
          json lines = held->server->callsAfter(
              *seq, *first ? std::chrono::milliseconds(0) : std::chrono::milliseconds(500));
          if (!lines.empty() || *first) {
            *first = false;
            if (!lines.empty()) *seq = lines.back().value("seq", *seq);
            *quiet_since = Clock::now();
            const std::string event = "event: activity\ndata: " +
                                      lines.dump(-1, ' ', false, json::error_handler_t::replace) +
                                      "\n\n";
            return sink.write(event.data(), event.size());
          }
          if (Clock::now() - *quiet_since > std::chrono::seconds(15)) {
            *quiet_since = Clock::now();
            return sink.write(": still here\n\n", 14);
          }
          return true;
        });
      }));
  http.Delete(R"(/ui/api/sessions/([0-9a-f]+))",
              onSession([this](const httplib::Request&, httplib::Response& res,
                               const std::shared_ptr<Session>& session) {
                spdlog::info("http: session {}… ended by the operator", session->id.substr(0, 8));
                endSession(session->id);
                res.status = 204;
              }));
  http.Post(R"(/ui/api/sessions/([0-9a-f]+)/mcp)",
            onSession([this](const httplib::Request& req, httplib::Response& res,
                             const std::shared_ptr<Session>& session) {
              if (refuseWhileStopping(res)) return;
              Result<json> parsed = parseJson(req.body);
              const bool one = parsed.ok() && parsed->is_object() &&
                               parsed->value("jsonrpc", "") == "2.0" &&
                               parsed->contains("method") && (*parsed)["method"].is_string() &&
                               (!parsed->contains("id") || (*parsed)["id"].is_string());
              if (!one) {
                jsonError(res, 400, rpc::kInvalidRequest,
                          "the body must be one JSON-RPC 2.0 request or notification, its id a "
                          "string");
                return;
              }
              if (session->transport.legacy()) {
                jsonError(res, 409, rpc::kInvalidRequest,
                          "the session speaks the 2024-11-05 HTTP+SSE transport, whose answers "
                          "all go to its client's stream: the page cannot call into it");
                return;
              }
              if ((*parsed)["method"] == "initialize") {
                jsonError(res, 400, rpc::kInvalidRequest, "the session is initialized already");
                return;
              }
              if (parsed->contains("id")) session->server->markOperatorRequest((*parsed)["id"]);
              post(session, *parsed, res);
            }));
}

}  // namespace byd::mcp
