#pragma once
// Which addresses the egress proxy never connects to on a name's behalf: loopback, link-local
// (169.254.0.0/16, where cloud metadata services live, and fe80::/10), private and shared
// ranges, multicast, broadcast, unspecified, reserved and documentation ranges, and IPv6
// forms that carry one of those IPv4 addresses (mapped, NAT64). A rule that names the IP
// literal itself may still reach it (the proxy's caller decides that).

#include <netinet/in.h>
#include <sys/socket.h>

#include <optional>
#include <string>
#include <string_view>

namespace byd::egress {

// What kind of special address `address` is ("loopback", "link-local", "private", ...), or
// nullopt for an ordinary public address.
std::optional<std::string> specialAddress(const sockaddr_storage& address);

// Parses an IPv4 or IPv6 literal (without brackets) into `out` with `port`; false if it is
// not one.
bool parseAddress(std::string_view text, uint16_t port, sockaddr_storage& out);

// "1.2.3.4" or "2001:db8::1".
std::string addressText(const sockaddr_storage& address);

}  // namespace byd::egress
