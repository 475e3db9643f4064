#pragma once
// Process-wide logging set-up, shared by the binaries: spdlog's default logger writes to stderr
// only (stdout carries protocol messages over stdio), with a timestamp and the level.

#include <string>

namespace byd {

// `level`: trace, debug, info, warn, error, critical or off.
void setUpLogging(const std::string& name, const std::string& level);

}  // namespace byd
