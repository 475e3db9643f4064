#pragma once
// Containers left behind by a server that ended without removing them (killed, or crashed).
// Each session container carries a label naming its server: the machine, the pid namespace,
// the pid and that process's start time. A server removes the containers whose server is gone;
// it judges only those of its own machine and pid namespace, where a pid means the same
// process, and never touches a named (kept) container, which carries no such label.

#include <string>

#include "backends/docker/docker_client.h"

namespace byd::docker {

inline constexpr const char* kOwnerLabel = "io.backyard-mcp.owner";

// This process's owner label, or "" when it cannot be told (no machine id).
std::string ownerLabel();
// Whether the server an owner label names has ended (false for another machine or namespace).
bool ownerEnded(const std::string& label);
// Removes the containers whose server has ended; how many it removed.
int removeOrphans(const Client& client);

}  // namespace byd::docker
