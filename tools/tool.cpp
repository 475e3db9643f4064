#include "tools/tool.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

namespace byd {

std::string argString(const json& args, std::string_view key, std::string_view fallback) {
  auto it = args.find(key);
  if (it == args.end() || !it->is_string()) return std::string(fallback);
  return it->get<std::string>();
}

int64_t argInt(const json& args, std::string_view key, int64_t fallback) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  auto it = args.find(key);
  if (it == args.end() || !it->is_number()) return fallback;
  // Saturate rather than overflow: 1e300 or 2^64-1 are valid JSON integers.
  if (it->is_number_unsigned()) return std::min<uint64_t>(it->get<uint64_t>(), kMax);
  if (it->is_number_integer()) return it->get<int64_t>();
  const double d = it->get<double>();
  if (!(d == d)) return fallback;  // NaN cannot come from JSON, but keep the cast defined
  if (d >= 9.2e18) return kMax;
  if (d <= -9.2e18) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(d);
}

Result<int64_t> argTimeout(const json& args, int64_t fallback, const Limits& limits) {
  if (!args.contains("timeout_s")) return std::min(fallback, limits.max_timeout_s);
  const int64_t asked = argInt(args, "timeout_s", fallback);
  if (asked > limits.max_timeout_s) {
    return invalidArgument("timeout_s " + std::to_string(asked) + " is above the limit of " +
                           std::to_string(limits.max_timeout_s) + " s (" + limits.max_timeout_from +
                           "): ask for at most that, or run the work in the background and check "
                           "on it");
  }
  return asked;
}

bool argBool(const json& args, std::string_view key, bool fallback) {
  auto it = args.find(key);
  if (it == args.end() || !it->is_boolean()) return fallback;
  return it->get<bool>();
}

std::function<void(std::string_view line)> lineProgress(ToolContext& ctx) {
  if (!ctx.progress) return nullptr;
  return [&ctx, start = std::chrono::steady_clock::now()](std::string_view line) {
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ctx.progress(std::floor(elapsed), std::string(line));
  };
}

std::string hiddenNote(const ToolContext& ctx, json& structured) {
  const size_t hidden = ctx.hidden ? ctx.hidden() : 0;
  structured["hidden"] = hidden;
  if (hidden == 0) return "";
  return "[" + std::to_string(hidden) + (hidden == 1 ? " entry" : " entries") +
         " hidden by the permission rules]\n";
}

}  // namespace byd
