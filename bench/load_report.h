#pragma once
// What the native load clients (stdio_load.cpp, http_load.cpp) print: one JSON line with the
// rate and the median and 99th-percentile latency, read by bench/transports.py.

#include <algorithm>
#include <cstdio>
#include <vector>

inline void printLoadReport(std::vector<double> latencies, long total, double seconds) {
  if (latencies.empty()) return;
  std::sort(latencies.begin(), latencies.end());
  auto pct = [&](double p) {
    return latencies[std::min(latencies.size() - 1, static_cast<size_t>(p * latencies.size()))];
  };
  printf("{\"calls_per_s\": %.1f, \"p50_s\": %.6f, \"p99_s\": %.6f}\n", total / seconds, pct(0.50),
         pct(0.99));
}
