#include "backends/egress/address_policy.h"

#include <arpa/inet.h>

#include <cstring>

namespace byd::egress {
namespace {

struct Range4 {
  uint32_t base;
  int bits;
  const char* kind;
};

constexpr uint32_t ip4(unsigned a, unsigned b, unsigned c, unsigned d) {
  return (a << 24) | (b << 16) | (c << 8) | d;
}

// RFC 6890 and its updates: what is not the public internet.
constexpr Range4 kSpecial4[] = {
    {ip4(0, 0, 0, 0), 8, "unspecified"},
    {ip4(10, 0, 0, 0), 8, "private"},
    {ip4(100, 64, 0, 0), 10, "shared (carrier-grade NAT)"},
    {ip4(127, 0, 0, 0), 8, "loopback"},
    {ip4(169, 254, 0, 0), 16, "link-local"},
    {ip4(172, 16, 0, 0), 12, "private"},
    {ip4(192, 0, 0, 0), 24, "reserved"},
    {ip4(192, 0, 2, 0), 24, "documentation"},
    {ip4(192, 88, 99, 0), 24, "reserved"},
    {ip4(192, 168, 0, 0), 16, "private"},
    {ip4(198, 18, 0, 0), 15, "benchmarking"},
    {ip4(198, 51, 100, 0), 24, "documentation"},
    {ip4(203, 0, 113, 0), 24, "documentation"},
    {ip4(224, 0, 0, 0), 4, "multicast"},
    {ip4(255, 255, 255, 255), 32, "broadcast"},  // before the reserved range that holds it
    {ip4(240, 0, 0, 0), 4, "reserved"},
};

std::optional<std::string> special4(uint32_t a) {
  for (const Range4& r : kSpecial4) {
    const uint32_t mask = r.bits == 0 ? 0 : ~uint32_t{0} << (32 - r.bits);
    if ((a & mask) == r.base) return std::string(r.kind);
  }
  return std::nullopt;
}

bool prefix6(const uint8_t* a, std::initializer_list<uint8_t> bytes, int bits) {
  int i = 0;
  for (uint8_t b : bytes) {
    const int take = bits - i * 8;
    if (take <= 0) break;
    const uint8_t mask = take >= 8 ? 0xff : static_cast<uint8_t>(0xff << (8 - take));
    if ((a[i] & mask) != (b & mask)) return false;
    ++i;
  }
  return true;
}

std::optional<std::string> special6(const uint8_t* a) {
  static const uint8_t zero[16] = {};
  if (memcmp(a, zero, 16) == 0) return "unspecified";
  if (memcmp(a, zero, 15) == 0 && a[15] == 1) return "loopback";
  const auto embedded = [&](int at) {
    const uint32_t v4 = (uint32_t{a[at]} << 24) | (uint32_t{a[at + 1]} << 16) |
                        (uint32_t{a[at + 2]} << 8) | a[at + 3];
    return special4(v4);
  };
  // ::ffff:a.b.c.d (mapped), ::a.b.c.d (compatible, deprecated), 64:ff9b::a.b.c.d (NAT64).
  if (memcmp(a, zero, 10) == 0 && a[10] == 0xff && a[11] == 0xff) return embedded(12);
  if (memcmp(a, zero, 12) == 0) return "IPv4-compatible";
  if (prefix6(a, {0x00, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0}, 96)) return embedded(12);
  if (prefix6(a, {0xfe, 0x80}, 10)) return "link-local";
  if (prefix6(a, {0xfe, 0xc0}, 10)) return "site-local";
  if (prefix6(a, {0xfc}, 7)) return "private (unique local)";
  if (prefix6(a, {0xff}, 8)) return "multicast";
  if (prefix6(a, {0x20, 0x01, 0x0d, 0xb8}, 32)) return "documentation";
  if (prefix6(a, {0x01, 0x00, 0, 0, 0, 0, 0, 0}, 64)) return "discard";
  if (prefix6(a, {0x20, 0x02}, 16)) return embedded(2);  // 6to4 carries an IPv4 address
  return std::nullopt;
}

}  // namespace

std::optional<std::string> specialAddress(const sockaddr_storage& address) {
  if (address.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(address);
    return special4(ntohl(in.sin_addr.s_addr));
  }
  if (address.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(address);
    return special6(in6.sin6_addr.s6_addr);
  }
  return "not an internet address";
}

bool parseAddress(std::string_view text, uint16_t port, sockaddr_storage& out) {
  const std::string s(text);
  memset(&out, 0, sizeof out);
  auto& in = reinterpret_cast<sockaddr_in&>(out);
  if (inet_pton(AF_INET, s.c_str(), &in.sin_addr) == 1) {
    in.sin_family = AF_INET;
    in.sin_port = htons(port);
    return true;
  }
  auto& in6 = reinterpret_cast<sockaddr_in6&>(out);
  if (inet_pton(AF_INET6, s.c_str(), &in6.sin6_addr) == 1) {
    in6.sin6_family = AF_INET6;
    in6.sin6_port = htons(port);
    return true;
  }
  return false;
}

std::string addressText(const sockaddr_storage& address) {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (address.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(address).sin_addr, buf, sizeof buf);
  } else if (address.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(address).sin6_addr, buf, sizeof buf);
  }
  return buf;
}

}  // namespace byd::egress
