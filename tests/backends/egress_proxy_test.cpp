#include "backends/egress/egress_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "backends/egress/address_policy.h"
#include "common/unique_fd.h"

namespace byd::egress {
namespace {

std::optional<std::string> kindOf(const char* literal) {
  sockaddr_storage s;
  EXPECT_TRUE(parseAddress(literal, 443, s)) << literal;
  return specialAddress(s);
}

TEST(AddressPolicy, SpecialAddressesAreKnownWithoutConnecting) {
  EXPECT_EQ(kindOf("169.254.169.254"), "link-local");  // cloud metadata
  EXPECT_EQ(kindOf("127.0.0.1"), "loopback");
  EXPECT_EQ(kindOf("127.4.5.6"), "loopback");
  EXPECT_EQ(kindOf("10.1.2.3"), "private");
  EXPECT_EQ(kindOf("172.16.0.1"), "private");
  EXPECT_EQ(kindOf("172.31.255.255"), "private");
  EXPECT_EQ(kindOf("192.168.0.1"), "private");
  EXPECT_EQ(kindOf("100.64.0.1"), "shared (carrier-grade NAT)");
  EXPECT_EQ(kindOf("0.0.0.0"), "unspecified");
  EXPECT_EQ(kindOf("224.0.0.251"), "multicast");
  EXPECT_EQ(kindOf("255.255.255.255"), "broadcast");
  EXPECT_EQ(kindOf("::1"), "loopback");
  EXPECT_EQ(kindOf("::"), "unspecified");
  EXPECT_EQ(kindOf("fe80::1"), "link-local");
  EXPECT_EQ(kindOf("fd00:ec2::254"), "private (unique local)");
  EXPECT_EQ(kindOf("ff02::1"), "multicast");
  // IPv6 spellings of IPv4 addresses are judged as the address they carry.
  EXPECT_EQ(kindOf("::ffff:169.254.169.254"), "link-local");
  EXPECT_EQ(kindOf("::ffff:127.0.0.1"), "loopback");
  EXPECT_EQ(kindOf("64:ff9b::a9fe:a9fe"), "link-local");
  EXPECT_EQ(kindOf("2002:a9fe:a9fe::1"), "link-local");
  // The public internet.
  EXPECT_EQ(kindOf("8.8.8.8"), std::nullopt);
  EXPECT_EQ(kindOf("172.32.0.1"), std::nullopt);
  EXPECT_EQ(kindOf("2606:4700::1111"), std::nullopt);
  EXPECT_EQ(kindOf("::ffff:8.8.8.8"), std::nullopt);
  sockaddr_storage s;
  EXPECT_FALSE(parseAddress("example.com", 1, s));
  EXPECT_FALSE(parseAddress("1.2.3", 1, s));
}

TEST(AddressPolicy, OnlyARuleNamingTheLiteralOpensASpecialAddress) {
  sockaddr_storage s;
  ASSERT_TRUE(parseAddress("169.254.169.254", 80, s));
  Verdict by_wildcard{true, "network rule 1 (*)", "", false};
  auto why = Proxy::refuses(s, by_wildcard);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("169.254.169.254 is link-local"), std::string::npos) << *why;
  Verdict by_literal{true, "network rule 1 (169.254.169.254:80)", "", true};
  EXPECT_EQ(Proxy::refuses(s, by_literal), std::nullopt);
  ASSERT_TRUE(parseAddress("93.184.216.34", 80, s));
  EXPECT_EQ(Proxy::refuses(s, by_wildcard), std::nullopt);
}

// A server standing for the internet on 127.0.0.2: it answers each connection's first read
// with "echo:" and what it read, then closes.
class Upstream {
 public:
  Upstream() : fd_(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(0x7f000002);
    EXPECT_EQ(bind(fd_.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    socklen_t len = sizeof a;
    getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    listen(fd_.get(), 16);
    thread_ = std::thread([this] {
      while (true) {
        const int c = accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) return;
        ++accepted;
        char buf[8192];
        const ssize_t n = read(c, buf, sizeof buf);
        if (n > 0) {
          last = std::string(buf, static_cast<size_t>(n));
          const std::string reply = "echo:" + last;
          [[maybe_unused]] ssize_t w = write(c, reply.data(), reply.size());
        }
        close(c);
      }
    });
  }
  ~Upstream() {
    shutdown(fd_.get(), SHUT_RDWR);
    thread_.join();
  }
  uint16_t port() const { return port_; }
  std::atomic<int> accepted{0};
  std::string last;

 private:
  UniqueFd fd_;
  uint16_t port_ = 0;
  std::thread thread_;
};

class ProxyTest : public ::testing::Test {
 protected:
  ProxyTest()
      : proxy([this](const std::string& host, uint16_t port) {
          judged.push_back(host + ":" + std::to_string(port));
          if (host == "127.0.0.2" && port == upstream.port()) {
            return Verdict{true, "network rule 1 (127.0.0.2:*)", "", true};
          }
          if (allow_all) return Verdict{true, "network rule 2 (*)", "", false};
          return Verdict{false, "network default", "no rule allows it", false};
        }) {
    UniqueFd l(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(l.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    socklen_t len = sizeof a;
    getsockname(l.get(), reinterpret_cast<sockaddr*>(&a), &len);
    proxy_port = ntohs(a.sin_port);
    listen(l.get(), 16);
    EXPECT_TRUE(proxy.serve(std::move(l)).ok());
  }

  // Connects to the proxy, sends `request`, and returns all it answers until it closes.
  std::string ask(const std::string& request) {
    UniqueFd c(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(proxy_port);
    EXPECT_EQ(connect(c.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(write(c.get(), request.data(), request.size()), static_cast<ssize_t>(request.size()));
    std::string out;
    char buf[4096];
    while (true) {
      pollfd p{c.get(), POLLIN, 0};
      if (poll(&p, 1, 5000) <= 0) break;
      const ssize_t n = read(c.get(), buf, sizeof buf);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    return out;
  }

  Upstream upstream;
  std::vector<std::string> judged;
  bool allow_all = false;
  Proxy proxy;
  uint16_t proxy_port = 0;
};

TEST_F(ProxyTest, ConnectTunnelsToAnAllowedTarget) {
  const std::string target = "127.0.0.2:" + std::to_string(upstream.port());
  const std::string out = ask("CONNECT " + target + " HTTP/1.1\r\nHost: " + target +
                              "\r\n\r\nhello through the tunnel");
  EXPECT_EQ(out.rfind("HTTP/1.1 200", 0), 0u) << out;
  EXPECT_NE(out.find("echo:hello through the tunnel"), std::string::npos) << out;
}

TEST_F(ProxyTest, AbsoluteFormIsForwardedAsTheOriginExpects) {
  const std::string target = "127.0.0.2:" + std::to_string(upstream.port());
  const std::string out =
      ask("GET http://" + target + "/simple/pkg/?q=1 HTTP/1.1\r\nHost: " + target +
          "\r\nProxy-Connection: keep-alive\r\nAccept: */*\r\n\r\n");
  EXPECT_NE(out.find("echo:GET /simple/pkg/?q=1 HTTP/1.1\r\n"), std::string::npos) << out;
  EXPECT_NE(out.find("Accept: */*\r\n"), std::string::npos);
  EXPECT_NE(out.find("Connection: close\r\n"), std::string::npos);
  EXPECT_EQ(out.find("Proxy-Connection"), std::string::npos);
}

TEST_F(ProxyTest, ARefusalNamesTheTargetAndTheRuleAndConnectsNowhere) {
  const std::string other = "127.0.0.2:" + std::to_string(upstream.port() + 1);
  std::string out = ask("CONNECT " + other + " HTTP/1.1\r\n\r\n");
  EXPECT_EQ(out.rfind("HTTP/1.1 403", 0), 0u) << out;
  EXPECT_NE(out.find("network denied for " + other), std::string::npos) << out;
  EXPECT_NE(out.find("network default"), std::string::npos) << out;
  // Even under a rule that allows every target, loopback is not reached by name or by an IP
  // the rule does not name.
  allow_all = true;
  for (const std::string host : {"localhost", "127.0.0.1", "127.0.0.3"}) {
    out = ask("CONNECT " + host + ":" + std::to_string(upstream.port()) + " HTTP/1.1\r\n\r\n");
    EXPECT_EQ(out.rfind("HTTP/1.1 403", 0), 0u) << host << ": " << out;
    EXPECT_NE(out.find("is loopback"), std::string::npos) << out;
  }
  EXPECT_EQ(upstream.accepted.load(), 0);
}

TEST_F(ProxyTest, Socks5ConnectsAllowedTargetsAndRefusesOthers) {
  auto socks = [&](const std::string& host, uint16_t port, const std::string& payload) {
    std::string req("\x05\x01\x00\x05\x01\x00\x03", 7);
    req += static_cast<char>(host.size());
    req += host;
    req += static_cast<char>(port >> 8);
    req += static_cast<char>(port & 0xff);
    return ask(req + payload);
  };
  std::string out = socks("127.0.0.2", upstream.port(), "ping");
  ASSERT_GE(out.size(), 12u);
  EXPECT_EQ(out.substr(0, 2), std::string("\x05\x00", 2));
  EXPECT_EQ(out[3], 0x00);  // succeeded
  EXPECT_NE(out.find("echo:ping"), std::string::npos);
  out = socks("example.com", 443, "");
  ASSERT_GE(out.size(), 4u);
  EXPECT_EQ(out[3], 0x02);  // connection not allowed by ruleset
  EXPECT_EQ(judged.back(), "example.com:443");
}

TEST_F(ProxyTest, WhatIsNotAProxyRequestIsABadRequest) {
  EXPECT_EQ(ask("GET /index.html HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 400", 0), 0u);
  EXPECT_EQ(ask("CONNECT no-port HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 400", 0), 0u);
  EXPECT_EQ(ask("CONNECT a b:1 HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 400", 0), 0u);
  EXPECT_TRUE(judged.empty());
}

}  // namespace
}  // namespace byd::egress
