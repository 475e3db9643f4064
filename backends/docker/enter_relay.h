#pragma once
// byd-enter's relay: the container's end of the server's egress proxy. The container keeps
// `--network none`; its only way out is a unix socket of the server's proxy, bound into it.
// The relay listens on the container's own loopback (127.0.0.1:PORT, where the proxy
// variables point) and copies each connection to a new connection of that socket, both ways,
// half-closes included. It runs as the container's root with every capability dropped, so the
// code, another user, can neither signal it nor read its memory. Runs until killed.

namespace byd::enter {

// Never returns but on an error before it serves (then what failed is on stderr): 126.
int relay(const char* socket_path, int port);

}  // namespace byd::enter
