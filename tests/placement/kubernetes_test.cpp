// The Kubernetes placement's client against an HTTP server that replays the API server's side
// of recorded exchanges (tests/placement/kubernetes/*.json, in the shapes of agent-sandbox's
// v1beta1 API and the API server's Status and watch events): each request must be the next one
// recorded (method, path, the query parameters named, the service account's bearer token),
// and gets its recorded answer; a watch's events are streamed, then the stream is held open as
// an idle watch is. No Kubernetes API server can run on this machine; this is what it is
// checked against instead.

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "placement/kubernetes.h"
#include "tests/test_util.h"

namespace byd::testing {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

json recorded(const std::string& name) {
  std::ifstream in(std::string(BYD_TEST_DATA_DIR) + "/placement/kubernetes/" + name + ".json");
  return json::parse(in);
}

class ReplayServer {
 public:
  ReplayServer(json exchanges, std::string token_file)
      : exchanges_(std::move(exchanges)), token_file_(std::move(token_file)) {
    server_.set_keep_alive_max_count(1);
    const auto handle = [this](const httplib::Request& req, httplib::Response& res) {
      serve(req, res);
    };
    server_.Get(".*", handle);
    server_.Post(".*", handle);
    server_.Delete(".*", handle);
    server_.Patch(".*", handle);
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // httplib's stop() ends only a server that listens already.
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~ReplayServer() {
    stopping_ = true;
    server_.stop();
    thread_.join();
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // What did not go as recorded, and how many of the recorded exchanges were not reached.
  std::vector<std::string> mismatches() const {
    std::lock_guard lock(mu_);
    return mismatches_;
  }
  size_t left() const {
    std::lock_guard lock(mu_);
    size_t n = 0;
    for (size_t i = next_; i < exchanges_.size(); ++i)
      n += exchanges_[i].value("repeat", false) ? 0 : 1;
    return n;
  }
  json lastBody() const {
    std::lock_guard lock(mu_);
    return last_body_;
  }
  std::vector<std::string> tokens() const {
    std::lock_guard lock(mu_);
    return tokens_;
  }

 private:
  void serve(const httplib::Request& req, httplib::Response& res) {
    json exchange;
    {
      std::lock_guard lock(mu_);
      tokens_.push_back(req.get_header_value("Authorization"));
      if (!req.body.empty()) last_body_ = json::parse(req.body, nullptr, false);
      // A repeated exchange matches again until a later one does.
      size_t at = next_;
      if (at < exchanges_.size() && exchanges_[at].value("repeat", false) &&
          !matches(exchanges_[at]["request"], req) && at + 1 < exchanges_.size()) {
        ++at;
      }
      if (at >= exchanges_.size() || !matches(exchanges_[at]["request"], req)) {
        std::string query;
        for (const auto& [key, value] : req.params) query += " " + key + "=" + value;
        mismatches_.push_back("unexpected " + req.method + " " + req.path + query +
                              (at < exchanges_.size()
                                   ? "; expected " + exchanges_[at]["request"].dump()
                                   : "; no more exchanges were recorded"));
        res.status = 500;
        return;
      }
      next_ = exchanges_[at].value("repeat", false) ? at : at + 1;
      exchange = exchanges_[at];
      if (req.get_header_value("Authorization") != "Bearer " + currentToken()) {
        mismatches_.push_back(req.method + " " + req.path + " without the current token: " +
                              req.get_header_value("Authorization"));
      }
    }
    const json& response = exchange["response"];
    res.status = response["status"];
    // An answer that comes late (the client may have given up on it by then).
    const auto late =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(response.value("delay_ms", 0));
    while (!stopping_ && std::chrono::steady_clock::now() < late) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (!response.contains("events")) {
      res.set_content(response.value("body", json::object()).dump(), "application/json");
      return;
    }
    const json events = response["events"];
    const int hold_ms = response.value("hold_ms", 0);
    res.set_chunked_content_provider(
        "application/json", [this, events, hold_ms](size_t, httplib::DataSink& sink) {
          for (const json& event : events) {
            const std::string line = event.dump() + "\n";
            if (!sink.write(line.data(), line.size())) return false;
          }
          const auto until = Clock::now() + std::chrono::milliseconds(hold_ms);
          while (!stopping_ && Clock::now() < until && sink.is_writable()) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
          }
          sink.done();
          return true;
        });
  }

  static bool matches(const json& expected, const httplib::Request& req) {
    if (expected.value("method", "") != req.method || expected.value("path", "") != req.path) {
      return false;
    }
    const json query = expected.value("query", json::object());
    for (const auto& [key, value] : query.items()) {
      if (!req.has_param(key.c_str()) || req.get_param_value(key.c_str()) != value) return false;
    }
    return true;
  }
  std::string currentToken() const {
    std::ifstream in(token_file_);
    std::string token;
    std::getline(in, token);
    return token;
  }

  httplib::Server server_;
  const json exchanges_;
  const std::string token_file_;
  int port_ = 0;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mu_;
  size_t next_ = 0;
  std::vector<std::string> mismatches_;
  std::vector<std::string> tokens_;
  json last_body_;
};

class KubernetesPlacementTest : public ::testing::Test {
 protected:
  void SetUp() override { tmp_.write("token", "service-account-token-1\n"); }

  void replay(const std::string& name) {
    server_ = std::make_unique<ReplayServer>(recorded(name)["exchanges"],
                                             (tmp_.path() / "token").string());
  }
  placement::KubernetesOptions options() const {
    placement::KubernetesOptions o;
    o.api_server = server_->url();
    o.token_file = (tmp_.path() / "token").string();
    o.namespace_ = "agents";
    o.warm_pool = "backyard-agents";
    o.ready_timeout = std::chrono::seconds(10);
    return o;
  }
  void expectAsRecorded() {
    EXPECT_TRUE(server_->mismatches().empty()) << ::testing::PrintToString(server_->mismatches());
    EXPECT_EQ(server_->left(), 0u) << "recorded exchanges never reached";
  }

  TempDir tmp_;
  std::unique_ptr<ReplayServer> server_;
  CancelToken cancel_;
};

TEST_F(KubernetesPlacementTest, AClaimIsCreatedWatchedUntilReadyRoutedAndDeleted) {
  replay("ready");
  auto o = options();
  o.front = "backyard-front-7c9f8-abcde";
  placement::KubernetesPlacement k8s(o);
  auto placed = k8s.place("acme", "s-42", {}, cancel_);
  ASSERT_TRUE(placed.ok()) << placed.status().toString() << "; "
                           << ::testing::PrintToString(server_->mismatches());
  EXPECT_EQ(placed->claim, "byd-x7k2p");
  EXPECT_EQ(placed->sandbox, "backyard-agents-q8w4z");
  EXPECT_EQ(placed->url, "http://backyard-agents-q8w4z.agents.svc.cluster.local:8080/mcp");
  // The claim as created: from the warm pool, labelled with who it is for.
  const json body = server_->lastBody();
  EXPECT_EQ(body["apiVersion"], "extensions.agents.x-k8s.io/v1beta1");
  EXPECT_EQ(body["kind"], "SandboxClaim");
  EXPECT_EQ(body["metadata"]["generateName"], "byd-");
  EXPECT_EQ(body["metadata"]["annotations"]["backyard-mcp/tenant"], "acme");
  EXPECT_EQ(body["metadata"]["labels"]["backyard-mcp/session"], "s-42");
  EXPECT_EQ(body["metadata"]["labels"]["backyard-mcp/front"], "backyard-front-7c9f8-abcde");
  EXPECT_EQ(body["spec"]["warmPoolRef"]["name"], "backyard-agents");
  // A renewed token is read for the next request.
  tmp_.write("token", "service-account-token-2\n");
  EXPECT_TRUE(k8s.release(placed->claim).ok());
  expectAsRecorded();
  EXPECT_EQ(server_->tokens().back(), "Bearer service-account-token-2");
  EXPECT_EQ(server_->tokens().front(), "Bearer service-account-token-1");
}

TEST_F(KubernetesPlacementTest, AWatchTooOldStartsOverFromTheClaimReadAfresh) {
  replay("gone");
  placement::KubernetesPlacement k8s(options());
  auto placed = k8s.place("acme", "s-1", {}, cancel_);
  ASSERT_TRUE(placed.ok()) << placed.status().toString() << "; "
                           << ::testing::PrintToString(server_->mismatches());
  EXPECT_EQ(placed->url, "http://byd-m2n9c.agents.svc.cluster.local:8080/mcp");
  expectAsRecorded();
}

TEST_F(KubernetesPlacementTest, AClaimNeverReadyIsDeletedAtTheDeadlineAndSaysWhy) {
  replay("never_ready");
  auto o = options();
  o.ready_timeout = std::chrono::milliseconds(1500);
  o.request_timeout = std::chrono::milliseconds(1000);
  placement::KubernetesPlacement k8s(o);
  const auto start = Clock::now();
  auto placed = k8s.place("acme", "s-2", {}, cancel_);
  const double took = std::chrono::duration<double>(Clock::now() - start).count();
  ASSERT_FALSE(placed.ok());
  EXPECT_EQ(placed.status().code(), Code::kDeadlineExceeded);
  EXPECT_NE(placed.status().message().find("byd-4kq7t"), std::string::npos);
  EXPECT_NE(placed.status().message().find("DependenciesNotReady"), std::string::npos)
      << placed.status().message();
  EXPECT_NE(placed.status().message().find("3 Insufficient memory"), std::string::npos);
  EXPECT_NE(placed.status().message().find("it was deleted"), std::string::npos);
  EXPECT_LT(took, 10.0);  // the held watch does not hold the client past its deadline
  expectAsRecorded();
}

TEST_F(KubernetesPlacementTest, ForbiddenNamesTheRoleAndTheServersReason) {
  replay("forbidden");
  placement::KubernetesPlacement k8s(options());
  auto placed = k8s.place("acme", "s-3", {}, cancel_);
  ASSERT_FALSE(placed.ok());
  EXPECT_EQ(placed.status().code(), Code::kPermissionDenied);
  EXPECT_NE(placed.status().message().find("HTTP 403"), std::string::npos);
  EXPECT_NE(placed.status().message().find("cannot create resource \"sandboxclaims\""),
            std::string::npos);
  EXPECT_NE(placed.status().message().find("deploy/kubernetes/front-rbac.yaml"), std::string::npos);
  expectAsRecorded();
}

TEST_F(KubernetesPlacementTest, AConflictIsTriedOnceMoreThenReported) {
  replay("conflict");
  placement::KubernetesPlacement k8s(options());
  auto placed = k8s.place("acme", "s-4", {}, cancel_);
  ASSERT_FALSE(placed.ok());
  EXPECT_EQ(placed.status().code(), Code::kAlreadyExists);
  EXPECT_NE(placed.status().message().find("already exists"), std::string::npos);
  expectAsRecorded();
}

TEST_F(KubernetesPlacementTest, ASandboxWithoutAServiceIsReportedAndItsClaimDeleted) {
  replay("no_service");
  placement::KubernetesPlacement k8s(options());
  auto placed = k8s.place("acme", "s-5", {}, cancel_);
  ASSERT_FALSE(placed.ok());
  EXPECT_NE(placed.status().message().find("service: true"), std::string::npos)
      << placed.status().message();
  expectAsRecorded();
}

TEST_F(KubernetesPlacementTest, ACancelledWaitDeletesItsClaim) {
  replay("never_ready");
  std::thread canceller([this] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    cancel_.cancel();
  });
  placement::KubernetesPlacement k8s(options());
  const auto start = Clock::now();
  auto placed = k8s.place("acme", "s-8", {}, cancel_);
  canceller.join();
  ASSERT_FALSE(placed.ok());
  EXPECT_EQ(placed.status().code(), Code::kCancelled);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 5.0);
  expectAsRecorded();  // the DELETE included
}

TEST_F(KubernetesPlacementTest, ACreateCutShortIsFoundByItsLabelAndDeleted) {
  replay("cut_short");
  auto o = options();
  o.request_timeout = std::chrono::milliseconds(1000);
  placement::KubernetesPlacement k8s(o);
  auto placed = k8s.place("acme", "s-7", {}, cancel_);
  ASSERT_FALSE(placed.ok());
  EXPECT_NE(placed.status().message().find("did not answer POST"), std::string::npos)
      << placed.status().message();
  expectAsRecorded();
}

TEST_F(KubernetesPlacementTest, ASessionIdThatIsNoLabelValueIsRefusedBeforeAnyRequest) {
  replay("forbidden");
  placement::KubernetesPlacement k8s(options());
  auto placed = k8s.place("acme", "-bad/session-", {}, cancel_);
  ASSERT_FALSE(placed.ok());
  EXPECT_EQ(placed.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(server_->tokens().size(), 0u);  // nothing was sent
}

TEST_F(KubernetesPlacementTest, ClaimsLeftByThisFrontOrByAFrontThatIsGoneAreDeletedAtStart) {
  replay("orphans");
  auto o = options();
  o.front = "backyard-front-7c9f8-abcde";
  placement::KubernetesPlacement k8s(o);
  auto deleted = k8s.releaseOrphans();
  ASSERT_TRUE(deleted.ok()) << deleted.status().toString() << "; "
                            << ::testing::PrintToString(server_->mismatches());
  // Its own earlier run's, and the two of the front whose pod is gone (read once).
  EXPECT_EQ(*deleted, 3u);
  expectAsRecorded();
}

TEST_F(KubernetesPlacementTest, ANamedSessionsClaimIsSuspendedWhenItEndsResumedAndPurged) {
  replay("named");
  placement::KubernetesPlacement k8s(options());
  placement::Spec named;
  named.named = "work";
  auto placed = k8s.place("acme", "s-10", named, cancel_);
  ASSERT_TRUE(placed.ok()) << placed.status().toString() << "; "
                           << ::testing::PrintToString(server_->mismatches());
  // Its own PVC for the workspace, which takes it out of the warm pool (a cold start).
  const json body = server_->lastBody();
  EXPECT_EQ(body["spec"]["volumeClaimTemplates"][0]["metadata"]["name"], "workspace");
  EXPECT_EQ(body["spec"]["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"],
            "1Gi");
  EXPECT_EQ(body["metadata"]["labels"]["backyard-mcp/named"],
            "04d58249ec02af2cddb0f0c0e7ed51fd3d8c071d");
  EXPECT_EQ(body["metadata"]["annotations"]["backyard-mcp/name"], "work");
  // Its session ends: suspended, not deleted.
  ASSERT_TRUE(k8s.release(placed->claim).ok()) << ::testing::PrintToString(server_->mismatches());
  // The next session of that name gets it again.
  auto again = k8s.place("acme", "s-11", named, cancel_);
  ASSERT_TRUE(again.ok()) << again.status().toString() << "; "
                          << ::testing::PrintToString(server_->mismatches());
  EXPECT_EQ(again->claim, "byd-n4m3d");
  EXPECT_EQ(again->url, "http://byd-n4m3d.agents.svc.cluster.local:8080/mcp");
  auto kept = k8s.keptWorkspaces();
  ASSERT_TRUE(kept.ok()) << kept.status().toString();
  ASSERT_EQ(kept->size(), 1u);
  EXPECT_EQ((*kept)[0].tenant, "acme");
  EXPECT_EQ((*kept)[0].name, "work");
  // Purged: deleted, though its session still held it; then nothing is kept.
  EXPECT_TRUE(k8s.forget("acme", "work").ok());
  EXPECT_EQ(k8s.forget("acme", "work").code(), Code::kNotFound);
  expectAsRecorded();
}

TEST_F(KubernetesPlacementTest, AnApiServerThatIsNotThereIsNamed) {
  replay("forbidden");
  auto o = options();
  o.api_server = "http://127.0.0.1:1";
  placement::KubernetesPlacement k8s(o);
  auto placed = k8s.place("acme", "s-6", {}, cancel_);
  ASSERT_FALSE(placed.ok());
  EXPECT_NE(placed.status().message().find("did not answer POST"), std::string::npos)
      << placed.status().message();
}

}  // namespace
}  // namespace byd::testing
